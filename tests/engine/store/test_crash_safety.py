"""Crash safety: torn tails, crashes between log and apply, damage, read-only opens, one writer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tgms.engine.errors import ConflictError, CorruptError, TGMSError
from tgms.engine.store import Store, replay
from tgms.engine.store.eventlog import read_log

from ._support import dir_fingerprint, edge_ref, log_lines, log_records

REPO_ROOT = Path(__file__).resolve().parents[3]
# Reopening torn logs hundreds of times: each trim warns (asserted in test_check.py), which is noise here.
pytestmark = pytest.mark.filterwarnings("ignore::tgms.engine.errors.StoreWarning")
LAST_OPS = [{"op": "retract", "ref": {"uid": "a"}, "t": 5}]  # short, so every cut is cheap


def _write_first_batches(store: Store) -> None:
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in ("a", "b", "c")])
    store.write(
        [{"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "R", "vt_s": 0, "props": {"p": 1}}]
    )
    store.try_write([{"op": "retract", "ref": {"uid": "nobody"}, "t": 1}])  # a failed batch in the middle
    store.correct(edge_ref("a", "b"), {"p": 2}, 10, 20)


def _copy_store(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


@pytest.fixture
def snapshots(make_store, fake_clock, tmp_path, scratch_dir):
    """The store just before and just after its last batch (closed copies), and the final log bytes."""
    store = make_store("live")
    _write_first_batches(store)
    root = store.root
    pre_digest = store.digest()
    store.close()
    pre = _copy_store(root, tmp_path / "pre")
    with Store.open(root, now=fake_clock(start=1)) as store:
        result = store.write(LAST_OPS, batch_id="z")
        post_digest = store.digest()
    post = _copy_store(root, tmp_path / "post")
    full = (root / "eventlog.jsonl").read_bytes()
    lines = log_lines(root / "eventlog.jsonl")
    batch_end = len(full) - len(lines[-1])
    batch_start = batch_end - len(lines[-2])
    assert full[:batch_start] == (pre / "eventlog.jsonl").read_bytes()
    assert json.loads(lines[-2])["kind"] == "batch" and json.loads(lines[-1])["kind"] == "outcome"
    return {
        "pre": pre,
        "post": post,
        "pre_digest": pre_digest,
        "post_digest": post_digest,
        "full": full,
        "batch_start": batch_start,
        "batch_end": batch_end,
        "seq": result.seq,
        "work": scratch_dir / "work",  # reopened hundreds of times: on tmpfs when there is one
    }


def _crashed(snap, db_from: str, cut: int):
    """A store directory with the database of ``db_from`` and the final log cut to ``cut`` bytes."""
    work = _copy_store(snap[db_from], snap["work"])
    (work / "eventlog.jsonl").write_bytes(snap["full"][:cut])
    return work


def test_every_cut_of_the_last_batch_record_reopens_to_the_state_before_it(snapshots, fake_clock):
    """A torn batch record was never acknowledged (nor applied): it is trimmed, nothing else is lost."""
    s = snapshots
    assert s["pre_digest"] != s["post_digest"]
    for cut in range(s["batch_start"], s["batch_end"]):
        work = _crashed(s, "pre", cut)
        with Store.open(work, now=fake_clock()) as store:
            assert store.digest() == s["pre_digest"], f"cut at byte {cut}"
            assert len(store._log.state.batches) == s["seq"] - 1, f"cut at byte {cut}"
        assert (work / "eventlog.jsonl").read_bytes() == s["full"][: s["batch_start"]], f"cut at byte {cut}"


def test_every_cut_of_the_final_outcome_reopens_with_the_batch_applied(snapshots, fake_clock):
    """The batch was applied, its outcome torn: reopening keeps it and re-appends its outcome."""
    s = snapshots
    for cut in range(s["batch_end"], len(s["full"])):
        work = _crashed(s, "post", cut)
        with Store.open(work, now=fake_clock()) as store:
            assert store.digest() == s["post_digest"], f"cut at byte {cut}"
        log = work / "eventlog.jsonl"
        assert log.read_bytes().startswith(s["full"][: s["batch_end"]]), f"cut at byte {cut}"
        state = read_log(log)
        assert (state.torn_bytes, state.pending) == (0, None), f"cut at byte {cut}"
        last = log_records(log)[-1]
        assert (last["kind"], last["seq"], last["status"]) == ("outcome", s["seq"], "committed"), f"cut {cut}"


def test_crash_between_log_append_and_apply_is_completed_on_open(snapshots, fake_clock):
    """Logged (acknowledged) but never applied: open applies it; the log ends exactly as without a crash."""
    s = snapshots
    work = _crashed(s, "pre", s["batch_end"])
    with Store.open(work, now=fake_clock()) as store:
        assert store.digest() == s["post_digest"]
    assert (work / "eventlog.jsonl").read_bytes() == s["full"]


def test_intact_log_reopens_unchanged(snapshots, fake_clock):
    s = snapshots
    work = _crashed(s, "post", len(s["full"]))
    with Store.open(work, now=fake_clock()) as store:
        assert store.digest() == s["post_digest"]
    assert (work / "eventlog.jsonl").read_bytes() == s["full"]


# -- crashes inside the write path ---------------------------------------------------------------------
def _reference(make_store, ops_list):
    ref = make_store("reference")
    for ops in ops_list:
        ref.try_write(ops)
    return ref


def test_crash_in_apply_after_logging_loses_nothing(make_store, fake_clock):
    store = make_store("crashy")
    _write_first_batches(store)

    def crash(changes):
        raise SystemExit("simulated crash inside backend.apply")

    store.backend.apply = crash
    with pytest.raises(SystemExit):
        store.write(LAST_OPS)
    root = store.root
    store.close()
    assert log_records(root / "eventlog.jsonl")[-1]["kind"] == "batch"  # logged, no outcome
    ref = make_store("reference")
    _write_first_batches(ref)
    ref.write(LAST_OPS)
    with Store.open(root, now=fake_clock()) as reopened:
        assert reopened.digest() == ref.digest()
        assert reopened.stats()["batches_applied"] == 5
    assert (root / "eventlog.jsonl").read_bytes() == ref.log_path.read_bytes()


def test_crash_after_apply_before_outcome_keeps_the_batch(make_store, fake_clock):
    store = make_store("crashy")
    _write_first_batches(store)
    real = store._log.append_outcome

    def crash(batch, outcome):
        raise SystemExit("simulated crash before the outcome record")

    store._log.append_outcome = crash
    with pytest.raises(SystemExit):
        store.write(LAST_OPS)
    store._log.append_outcome = real
    root = store.root
    store.close()
    ref = make_store("reference")
    _write_first_batches(ref)
    ref.write(LAST_OPS)
    with Store.open(root, now=fake_clock()) as reopened:
        assert reopened.digest() == ref.digest()
    last = log_records(root / "eventlog.jsonl")[-1]
    assert (last["kind"], last["seq"], last["status"]) == ("outcome", 5, "committed")


def test_torn_outcome_of_a_failed_batch_is_re_derived_as_failed(make_store, fake_clock):
    store = make_store()
    _write_first_batches(store)
    digest = store.digest()
    store.try_write([{"op": "correct", "ref": {"uid": "nobody"}, "props": {}, "vt_s": 0, "vt_e": 5}])
    root = store.root
    store.close()
    log = root / "eventlog.jsonl"
    want = log_records(log)[-1]
    log.write_bytes(log.read_bytes()[:-7])
    with Store.open(root, now=fake_clock()) as reopened:
        assert reopened.digest() == digest
    last = log_records(log)[-1]
    assert (last["status"], last["error"]) == ("failed", want["error"])


def test_acknowledged_writes_survive_a_killed_process(backend, tmp_path):
    """A child process writes, then dies without closing the store: every acknowledged batch is there."""
    root = tmp_path / "killed"
    script = textwrap.dedent(
        f"""
        import os
        from tgms.engine.store import Store
        store = Store.create({str(root)!r}, {backend!r})
        for i in range(5):
            store.write([{{"op": "assert_node", "uid": f"u{{i}}", "vt_s": i}}])
        print(store.digest(), flush=True)
        os._exit(0)  # no close, no checkpoint
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *sys.path])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    with Store.open(root) as store:
        assert store.digest() == out.stdout.split()[-1]
        assert sorted(store.entity_ids()) == [f"u{i}" for i in range(5)]


# -- damage --------------------------------------------------------------------------------------------
@pytest.fixture
def closed_store(make_store):
    store = make_store()
    _write_first_batches(store)
    store.write(LAST_OPS)
    store.close()
    return store.root


@pytest.mark.parametrize(
    "line", [1, 2, 3, 6, -2], ids=["header", "batch", "outcome", "failed-outcome", "last-batch"]
)
def test_damage_before_the_final_record_refuses_to_open_naming_the_line(closed_store, fake_clock, line):
    log = closed_store / "eventlog.jsonl"
    lines = log_lines(log)
    lineno = line if line > 0 else len(lines) + 1 + line
    offset = sum(len(x) for x in lines[: lineno - 1]) + len(lines[lineno - 1]) // 2
    data = bytearray(log.read_bytes())
    data[offset] ^= 0x20
    log.write_bytes(bytes(data))
    before = dir_fingerprint(closed_store)
    with pytest.raises(CorruptError) as info:
        Store.open(closed_store, now=fake_clock())
    assert info.value.details["line"] == lineno
    assert info.value.to_dict()["error"] == "E_CORRUPT"
    assert dir_fingerprint(closed_store) == before  # nothing trimmed or rewritten
    with pytest.raises(CorruptError):
        read_log(log)


def test_failed_open_releases_the_writer_lock(closed_store, fake_clock):
    log = closed_store / "eventlog.jsonl"
    good = log.read_bytes()
    log.write_bytes(good.replace(b'"kind":"batch"', b'"kind":"batcH"', 1))
    with pytest.raises(CorruptError):
        Store.open(closed_store, now=fake_clock())
    log.write_bytes(good)
    with Store.open(closed_store, now=fake_clock()) as store:
        store.assert_node("x", 0)


def test_damaged_log_refuses_a_read_only_open_too(closed_store):
    log = closed_store / "eventlog.jsonl"
    data = bytearray(log.read_bytes())
    data[len(log_lines(log)[0]) + 20] ^= 0x20
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptError) as info:
        Store.open(closed_store, read_only=True).close()
    assert info.value.details["line"] == 2


def test_database_ahead_of_its_log_refuses_to_open(snapshots, fake_clock):
    """The post-batch database with the pre-batch log: the log lost a batch the store has."""
    s = snapshots
    work = _crashed(s, "post", s["batch_start"])
    with pytest.raises(CorruptError):
        Store.open(work, now=fake_clock())


# -- failed batches, read-only opens, one writer ------------------------------------------------------
def test_failed_batch_changes_nothing_and_replay_skips_it(make_store, other_backend, tmp_path):
    store = make_store()
    _write_first_batches(store)
    digest = store.digest()
    result = store.try_write(
        [{"op": "assert_node", "uid": "new", "vt_s": 0}, {"op": "retract", "ref": edge_ref("b", "a"), "t": 3}]
    )
    assert (result.status, result.error["error"]) == ("failed", "E_NOT_FOUND")
    assert store.digest() == digest
    assert "new" not in store.entity_ids()
    store.close()
    with replay(store.log_path, tmp_path / "replayed", other_backend) as r:
        assert r.digest() == digest
        assert "new" not in r.entity_ids()


def test_read_only_open_modifies_no_file_and_refuses_writes(closed_store):
    before = dir_fingerprint(closed_store)
    with Store.open(closed_store, read_only=True) as ro:
        ro.digest(), ro.stats(), ro.public_rows()
        for write in (
            lambda: ro.assert_node("x", 0),
            lambda: ro.write(LAST_OPS),
            lambda: ro.try_write(LAST_OPS),
            lambda: ro.ingest_events({"columns": {"src": ["a"], "dst": ["b"], "t": [1]}, "rel_type": "M"}),
        ):
            with pytest.raises(ConflictError) as info:
                write()
            assert info.value.to_dict()["error"] == "E_CONFLICT"
    assert dir_fingerprint(closed_store) == before


def test_read_only_open_of_a_torn_log_trims_nothing(closed_store):
    log = closed_store / "eventlog.jsonl"
    log.write_bytes(log.read_bytes()[:-3])
    before = dir_fingerprint(closed_store)
    with Store.open(closed_store, read_only=True) as ro:
        ro.digest()
    assert dir_fingerprint(closed_store) == before


def test_second_writer_gets_conflict(closed_store, fake_clock):
    with Store.open(closed_store, now=fake_clock()) as first:
        with pytest.raises(ConflictError) as info:
            Store.open(closed_store, now=fake_clock())
        assert info.value.to_dict()["error"] == "E_CONFLICT"
        with pytest.raises(ConflictError):
            Store.create(closed_store, first.backend_name)
        first.assert_node("still-writable", 0)
    with Store.open(closed_store, now=fake_clock()) as second:  # released on close
        assert "still-writable" in second.entity_ids()


def test_second_writer_in_another_process_gets_conflict(closed_store):
    with Store.open(closed_store):
        script = (
            "import sys\nfrom tgms.engine.store import Store\nfrom tgms.engine.errors import TGMSError\n"
            f"try:\n    Store.open({str(closed_store)!r})\nexcept TGMSError as e:\n"
            "    print(e.code)\n    sys.exit(3)\n"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *sys.path])}
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
        )
    assert (out.returncode, out.stdout.strip()) == (3, "E_CONFLICT"), out.stderr


def test_create_over_an_existing_store_is_refused(closed_store, backend):
    before = dir_fingerprint(closed_store)
    with pytest.raises(ConflictError):
        Store.create(closed_store, backend)
    assert dir_fingerprint(closed_store) == before


def test_open_of_a_non_store_is_corrupt(tmp_path):
    with pytest.raises(CorruptError):
        Store.open(tmp_path)
    (tmp_path / "store.json").write_text("{nope")
    with pytest.raises(TGMSError) as info:
        Store.open(tmp_path)
    assert info.value.code == "E_CORRUPT"
