"""Replay: one event log gives the same store on DuckDB and on Kùzu; recorded failures are reproduced."""

from __future__ import annotations

import hashlib
import json

import pytest

from tgms.engine.errors import ConflictError, CorruptError
from tgms.engine.store import ScanFilter, Store, replay
from tgms.engine.store.digest import row_json
from tgms.engine.store.eventlog import _seal, read_log
from tgms.engine.timeutil import OPEN_END

from ._support import EVERY, edge_ref, log_lines, log_records, rows_digest

#: failures the history below provokes: seq -> error code
EXPECTED_FAILURES = {4: "E_NOT_FOUND", 5: "E_NOT_FOUND", 8: "E_INVALID_ARG", 10: "E_NOT_FOUND"}


def write_history(store: Store) -> list:
    """A small history touching every write path, with failed batches among the committed ones."""
    results = [
        store.write(  # 1: nodes, with labels, props, provenance
            [
                {"op": "assert_node", "uid": "a", "vt_s": 0, "label": "person", "props": {"name": "Ann"}},
                {"op": "assert_node", "uid": "b", "vt_s": 0, "props": {"w": 0.1 + 0.2, "tags": ["x", "ü"]}},
                {
                    "op": "assert_node",
                    "uid": "c",
                    "vt_s": 5,
                    "vt_e": 500,
                    "source": "test",
                    "provenance_ref": "p:1",
                },
            ]
        ),
        store.write(  # 2: edges
            [
                {
                    "op": "assert_edge",
                    "src": "a",
                    "dst": "b",
                    "rel_type": "R",
                    "vt_s": 0,
                    "vt_e": 100,
                    "props": {"p": 1},
                },
                {"op": "assert_edge", "src": "b", "dst": "c", "rel_type": "R", "vt_s": 10, "vt_e": 20},
                {"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "R", "disc": "2", "vt_s": 5},
            ]
        ),
        store.correct(edge_ref("a", "b"), {"p": 2}, 40, 60),  # 3
        store.try_write([{"op": "retract", "ref": {"uid": "nobody"}, "t": 5}]),  # 4: unknown uid
        store.try_write(  # 5: fails on its second op: the first (a new node) must not appear either
            [
                {"op": "assert_node", "uid": "d", "vt_s": 0},
                {"op": "assert_edge", "src": "d", "dst": "zz", "rel_type": "R", "vt_s": 1},
            ]
        ),
        store.ingest_events(  # 6: the bulk path, with an exact duplicate and a new node
            {
                "columns": {"src": ["a", "b", "a", "e"], "dst": ["b", "a", "b", "a"], "t": [7, 8, 7, 9]},
                "rel_type": "MSG",
                "label": "user",
            }
        )[0],
    ]
    vid = store.scan_edges(ScanFilter(valid_at=15, rel_types=("R",), src=(store.entity_ids()["b"],)))
    vid = vid["vid"][0].as_py()
    results.append(store.write([{"op": "correct", "ref": {"vid": vid}, "props": {"fixed": True}}]))  # 7
    c_vid = store.scan_nodes(ScanFilter(ids=(store.entity_ids()["c"],)))["vid"][0].as_py()  # c: [5, 500)
    results.append(store.try_write([{"op": "retract", "ref": {"vid": c_vid}, "t": 999}]))  # 8: t outside
    results.append(  # 9: same-batch drop: the first assert is carved by the second
        store.write(
            [
                {"op": "assert_node", "uid": "c", "vt_s": 100, "vt_e": 200, "props": {"v": 1}},
                {"op": "assert_node", "uid": "c", "vt_s": 150, "vt_e": 300, "props": {"v": 2}},
                {"op": "retract", "ref": {"uid": "a"}, "t": 1000},
            ]
        )
    )
    results.append(
        store.try_write([{"op": "correct", "ref": edge_ref("a", "b"), "props": {}, "vt_s": 500, "vt_e": 600}])
    )
    results.append(store.retract(edge_ref("a", "b", "R", "2"), 50))  # 11
    return results


@pytest.fixture
def source(make_store):
    """A closed store with the history above; returns (root, digest, tts, per-tt pinned digests)."""
    store = make_store("source")
    results = write_history(store)
    digest = store.digest()
    tts = [r.tt for r in results]
    pins = {a: rows_digest(store, ScanFilter(as_of_tt=a)) for a in tts}
    store.close()
    return store.root, digest, tts, pins


def test_history_records_failed_batches_with_their_codes(source):
    root, _, _, _ = source
    outcomes = {r["seq"]: r for r in log_records(root / "eventlog.jsonl") if r["kind"] == "outcome"}
    assert len(outcomes) == 11
    failed = {s: o["error"]["error"] for s, o in outcomes.items() if o["status"] == "failed"}
    assert failed == EXPECTED_FAILURES
    for _s, o in outcomes.items():
        if o["status"] == "failed":
            assert set(o["error"]) == {"error", "message", "details"}
            assert o["error"]["message"]
        else:
            assert o["error"] is None


def test_failed_batch_leaves_no_trace_in_the_state(source):
    root, _, _, _ = source
    with Store.open(root, read_only=True) as store:
        assert "d" not in store.entity_ids()  # batch 5 failed on its second op
        assert "nobody" not in store.entity_ids()


def test_replay_gives_the_same_digest_on_every_backend(source, other_backend, tmp_path):
    root, digest, tts, pins = source
    with replay(root / "eventlog.jsonl", tmp_path / "replayed", other_backend) as r:
        assert r.backend_name == other_backend
        assert r.digest() == digest
        assert {a: rows_digest(r, ScanFilter(as_of_tt=a)) for a in tts} == pins
        assert r.stats()["batches_applied"] == 11
    with Store.open(tmp_path / "replayed", read_only=True) as again:  # and it persists
        assert again.digest() == digest


def test_replayed_store_has_a_byte_identical_log(source, other_backend, tmp_path):
    root, _, _, _ = source
    replay(root / "eventlog.jsonl", tmp_path / "replayed", other_backend).close()
    assert (tmp_path / "replayed" / "eventlog.jsonl").read_bytes() == (root / "eventlog.jsonl").read_bytes()


def test_replay_matches_the_source_stats(source, other_backend, tmp_path):
    root, _, _, _ = source
    with Store.open(root, read_only=True) as src:
        want = src.stats()
    with replay(root / "eventlog.jsonl", tmp_path / "replayed", other_backend) as r:
        got = r.stats()
    want.pop("backend"), got.pop("backend")
    assert got == want


def test_replay_of_a_replay_is_identical(source, backend, other_backend, tmp_path):
    root, digest, _, _ = source
    replay(root / "eventlog.jsonl", tmp_path / "one", other_backend).close()
    with replay(tmp_path / "one" / "eventlog.jsonl", tmp_path / "two", backend) as two:
        assert two.digest() == digest
    assert (tmp_path / "two" / "eventlog.jsonl").read_bytes() == (root / "eventlog.jsonl").read_bytes()


def test_replayed_store_accepts_new_writes_after_the_recorded_tt(source, backend, tmp_path):
    root, digest, tts, _ = source
    with replay(root / "eventlog.jsonl", tmp_path / "replayed", backend) as r:
        result = r.assert_node("f", 3)
        assert result.seq == 12
        assert result.tt > tts[-1]
        assert r.digest() != digest


def test_reingesting_is_not_a_replay(source, make_store, fake_clock, tmp_path):
    """Writing the same ops again gives new transaction times, hence a different digest."""
    root, digest, _, _ = source
    again = make_store("reingested", clock=fake_clock(start=2_000_000_000_000_000))
    write_history(again)
    assert again.digest() != digest
    # same current belief apart from tt and vids: the difference is only in transaction time
    with Store.open(root, read_only=True) as original:
        assert _belief_without_tt(again) == _belief_without_tt(original)
    with replay(root / "eventlog.jsonl", tmp_path / "replayed", again.backend_name) as r:
        assert r.digest() == digest


def _belief_without_tt(store: Store) -> list[str]:
    nodes, edges = store.public_rows(ScanFilter())
    rows = [{k: v for k, v in r.items() if k not in ("vid", "tt_s")} for r in nodes + edges]
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


# -- replay refuses a divergent log --------------------------------------------------------------------
def _rewrite_record(path, seq: int, kind: str, change) -> None:
    """Edit one record of a log and re-seal it properly (a divergent, not a damaged, log)."""
    lines = log_lines(path)
    for i, raw in enumerate(lines):
        rec = json.loads(raw)
        if rec.get("kind") == kind and rec.get("seq") == seq:
            rec.pop("~sha")
            change(rec)
            lines[i] = _seal(rec).encode("utf-8")
            break
    else:
        raise AssertionError(f"no {kind} record for seq {seq}")
    path.write_bytes(b"".join(lines))
    read_log(path)  # still a well-formed log


def _tampered(source, tmp_path):
    root, _, _, _ = source
    log = tmp_path / "tampered.jsonl"
    log.write_bytes((root / "eventlog.jsonl").read_bytes())
    return log


def test_replay_refuses_a_failure_recorded_as_committed(source, backend, tmp_path):
    log = _tampered(source, tmp_path)
    _rewrite_record(log, 4, "outcome", lambda r: r.update(status="committed", error=None))
    with pytest.raises(CorruptError) as info:
        replay(log, tmp_path / "r", backend)
    assert info.value.details["seq"] == 4
    assert (info.value.details["recorded"], info.value.details["replayed"]) == ("committed", "failed")


def test_replay_refuses_a_commit_recorded_as_failed(source, backend, tmp_path):
    log = _tampered(source, tmp_path)
    _rewrite_record(
        log,
        3,
        "outcome",
        lambda r: r.update(status="failed", error={"error": "E_NOT_FOUND", "message": "x", "details": {}}),
    )
    with pytest.raises(CorruptError) as info:
        replay(log, tmp_path / "r", backend)
    assert info.value.details["seq"] == 3


def test_replay_refuses_a_different_error_code(source, backend, tmp_path):
    log = _tampered(source, tmp_path)
    _rewrite_record(log, 8, "outcome", lambda r: r["error"].update(error="E_NOT_FOUND"))
    with pytest.raises(CorruptError) as info:
        replay(log, tmp_path / "r", backend)
    assert (info.value.details["seq"], info.value.details["recorded_error"]) == (8, "E_NOT_FOUND")
    assert info.value.details["replayed_error"] == "E_INVALID_ARG"


def test_replay_refuses_ops_that_no_longer_give_the_recorded_outcome(source, backend, tmp_path):
    log = _tampered(source, tmp_path)

    def change(rec):
        rec["ops"][0]["ref"] = {"uid": "nobody"}  # batch 3 (committed) now corrects an unknown node

    _rewrite_record(log, 3, "batch", change)
    with pytest.raises(CorruptError) as info:
        replay(log, tmp_path / "r", backend)
    assert info.value.details["seq"] == 3 and info.value.details["replayed_error"] == "E_NOT_FOUND"


def test_replay_refuses_a_damaged_log(source, backend, tmp_path):
    log = _tampered(source, tmp_path)
    data = bytearray(log.read_bytes())
    data[len(log_lines(log)[0]) + 30] ^= 0x01  # inside the first batch record, not re-sealed
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptError) as info:
        replay(log, tmp_path / "r", backend)
    assert info.value.details["line"] == 2


def test_replay_refuses_a_torn_log(source, backend, tmp_path):
    log = _tampered(source, tmp_path)
    log.write_bytes(log.read_bytes()[:-10])
    with pytest.raises(CorruptError):
        replay(log, tmp_path / "r", backend)


def test_replay_into_an_existing_store_is_refused(source, backend, tmp_path):
    root, _, _, _ = source
    replay(root / "eventlog.jsonl", tmp_path / "r", backend).close()
    with pytest.raises(ConflictError):
        replay(root / "eventlog.jsonl", tmp_path / "r", backend)


def test_replay_of_a_crashed_log_equals_reopening_the_crashed_store(make_store, other_backend, tmp_path):
    """A pending tail batch (logged, never applied) is acknowledged: replay applies it, as open does."""
    store = make_store("crashed")
    write_history(store)
    tt = store._clock.next()
    store._log.append_batch(12, tt, [{"op": "retract", "ref": {"uid": "b"}, "t": 40}])  # crash here
    root = store.root
    store.close()
    crashed_log = (root / "eventlog.jsonl").read_bytes()
    with replay(root / "eventlog.jsonl", tmp_path / "replayed", other_backend) as r:
        replayed_digest = r.digest()
        assert r.stats()["batches_applied"] == 12
    with Store.open(root) as reopened:
        assert reopened.digest() == replayed_digest
    assert (root / "eventlog.jsonl").read_bytes().startswith(crashed_log)
    assert (tmp_path / "replayed" / "eventlog.jsonl").read_bytes() == (root / "eventlog.jsonl").read_bytes()


# -- the digest is what DESIGN §3.3 says ---------------------------------------------------------------
def test_digest_is_sha256_of_canonical_rows_in_identity_order(source):
    root, digest, _, _ = source
    with Store.open(root, read_only=True) as store:
        nodes, edges = store.public_rows(EVERY)
    assert any(n["tt_e"] != OPEN_END for n in nodes) and any(e["tt_e"] != OPEN_END for e in edges)
    nodes.sort(key=lambda r: (r["uid"], r["tt_s"], r["vt_s"], r["vid"]))
    edges.sort(key=lambda r: (r["eid"], r["tt_s"], r["vt_s"], r["vid"]))
    h = hashlib.sha256()
    for n in nodes:
        h.update((row_json(n, "node") + "\n").encode("utf-8"))
    for e in edges:
        h.update((row_json(e, "edge") + "\n").encode("utf-8"))
    assert h.hexdigest() == digest
