"""``tgms check [--repair]`` and how read-only commands report a store whose log needs repair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FakeClock
from tgms.engine.store import Store, replay

from ._cli import build_small_store, log_bytes, run_cli, store_fingerprint

NEXT = [{"op": "assert_node", "uid": "late", "vt_s": 7}]


def _batch_records(root: Path) -> int:
    return sum(1 for ln in log_bytes(root).splitlines() if b'"kind":"batch"' in ln)


def _replayed_digest(root: Path, where: Path) -> str:
    with replay(root / "eventlog.jsonl", where) as r:
        return r.digest()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return build_small_store(tmp_path / "store")


@pytest.fixture
def pending_unapplied(store: Path) -> Path:
    """A crash between logging a batch (acknowledged) and applying it."""
    s = Store.open(store, now=FakeClock(start=2_000_000_000_000_000))

    def crash(changes: object) -> None:
        raise SystemExit("simulated crash inside backend.apply")

    s.backend.apply = crash  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        s.write(NEXT)
    s.close()
    return store


@pytest.fixture
def pending_applied(store: Path) -> Path:
    """A crash after applying a batch, before its outcome record."""
    s = Store.open(store, now=FakeClock(start=2_000_000_000_000_000))

    def crash(batch: object, outcome: object) -> None:
        raise SystemExit("simulated crash before the outcome record")

    s._log.append_outcome = crash  # type: ignore[union-attr,method-assign]
    with pytest.raises(SystemExit):
        s.write(NEXT)
    s.close()
    return store


def test_a_store_in_sync(capsys, store):
    ran = run_cli(capsys, "check", "--store", store, "--json")
    report = ran.json
    assert ran.code == 0 and report["state"] == "in_sync" and report["findings"] == []
    assert report["log"] == {"batches": 3, "committed": 3, "failed": 0, "bytes": len(log_bytes(store))}
    ran = run_cli(capsys, "check", "--store", store)
    assert ran.code == 0 and "in sync" in ran.out and ran.out.strip().splitlines()[-1] == report["digest"]


@pytest.mark.parametrize("command", ["stats", "digest"])
def test_read_only_commands_warn_of_a_pending_batch(capsys, pending_unapplied, command):
    before = store_fingerprint(pending_unapplied)
    ran = run_cli(capsys, command, "--store", pending_unapplied)
    assert ran.code == 0
    (warning,) = ran.warnings
    assert "batch 4 is logged (acknowledged) but not applied" in warning
    assert f"tgms check --store {pending_unapplied} --repair" in warning
    assert store_fingerprint(pending_unapplied) == before


def test_check_reports_and_repairs_a_pending_batch(capsys, tmp_path, pending_unapplied):
    root = pending_unapplied
    before = store_fingerprint(root)
    ran = run_cli(capsys, "check", "--store", root, "--json")
    assert ran.code == 1 and ran.json["state"] == "repairable"
    assert ran.json["findings"] == [{"finding": "pending_batch", "seq": 4, "applied": False}]
    assert store_fingerprint(root) == before  # inspecting changes nothing
    stale = ran.json["digest"]
    batches = _batch_records(root)
    ran = run_cli(capsys, "check", "--store", root, "--repair", "--json")
    assert ran.code == 0 and ran.json["state"] == "in_sync", ran.out
    assert ran.json["actions"] == [{"action": "applied_pending", "seq": 4, "status": "committed"}]
    assert _batch_records(root) == batches  # no batch added
    assert ran.json["digest"] != stale
    assert ran.json["digest"] == _replayed_digest(root, tmp_path / "replayed")
    assert run_cli(capsys, "stats", "--store", root).warnings == []


def test_check_records_the_outcome_of_an_applied_batch(capsys, tmp_path, pending_applied):
    root = pending_applied
    ran = run_cli(capsys, "check", "--store", root)
    assert ran.code == 1 and "batch 4 is applied but its outcome is not recorded" in ran.out
    assert "tgms check --store" in ran.out
    ran = run_cli(capsys, "check", "--store", root, "--repair")
    assert ran.code == 0 and "did: recorded the outcome of batch 4" in ran.out, ran.out
    assert ran.out.strip().splitlines()[-1] == _replayed_digest(root, tmp_path / "replayed")


def test_trailing_garbage_is_trimmed_only_with_a_warning(capsys, tmp_path, store):
    good = log_bytes(store)
    (store / "eventlog.jsonl").write_bytes(good + b'{"batch_id":"b9","ki')
    ran = run_cli(capsys, "stats", "--store", store)
    assert ran.code == 0 and "20 bytes of a torn (unfinished) record" in ran.warnings[0]
    assert log_bytes(store) == good + b'{"batch_id":"b9","ki'  # read-only: left alone
    ops = tmp_path / "ops.jsonl"
    ops.write_text(json.dumps(NEXT) + "\n")
    ran = run_cli(capsys, "write", "--store", store, ops)
    assert ran.code == 0 and "trimmed 20 bytes" in ran.warnings[0]
    assert log_bytes(store).startswith(good) and b'"b9"' not in log_bytes(store)


def test_check_repair_trims_a_torn_tail(capsys, tmp_path, store):
    good = log_bytes(store)
    (store / "eventlog.jsonl").write_bytes(good + b"garbage")
    ran = run_cli(capsys, "check", "--store", store, "--json")
    assert ran.json["findings"] == [{"finding": "torn_tail", "bytes": 7}] and ran.code == 1
    ran = run_cli(capsys, "check", "--store", store, "--repair", "--json")
    assert ran.json["actions"] == [{"action": "trimmed_torn_tail", "bytes": 7}] and ran.code == 0
    assert log_bytes(store) == good


def test_a_refused_write_has_trimmed_nothing(capsys, tmp_path, store):
    """Database ahead of a log cut inside its last batch record: E_CORRUPT, and the log as it was."""
    log = store / "eventlog.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    cut = b"".join(lines[:-2]) + lines[-2][: len(lines[-2]) // 2]  # inside the last batch record
    log.write_bytes(cut)
    ops = tmp_path / "ops.jsonl"
    ops.write_text(json.dumps(NEXT) + "\n")
    ran = run_cli(capsys, "write", "--store", store, ops)
    assert ran.error["error"] == "E_CORRUPT"
    assert log.read_bytes() == cut
    ran = run_cli(capsys, "check", "--store", store, "--repair", "--json")
    assert ran.code == 1 and ran.json["state"] == "damaged" and ran.json["actions"] == []
    assert log.read_bytes() == cut


def test_damage_messages_say_where(capsys, store):
    log = store / "eventlog.jsonl"
    good = log.read_bytes()
    lines = good.splitlines(keepends=True)
    final = bytearray(good)
    final[len(good) - len(lines[-1]) + 5] ^= 0x01  # inside the complete final record
    log.write_bytes(bytes(final))
    err = run_cli(capsys, "stats", "--store", store).error
    assert err["error"] == "E_CORRUPT" and "(its final record" in err["message"]
    assert "before its final record" not in err["message"]
    middle = bytearray(good)
    middle[len(lines[0]) + 5] ^= 0x01  # line 2
    log.write_bytes(bytes(middle))
    err = run_cli(capsys, "stats", "--store", store).error
    assert "line 2 is damaged, before its final record" in err["message"]


def test_replay_of_a_torn_log_names_the_repair(capsys, tmp_path, store):
    (store / "eventlog.jsonl").write_bytes(log_bytes(store) + b"xx")
    err = run_cli(capsys, "replay", store / "eventlog.jsonl", "--store", tmp_path / "r").error
    assert err["error"] == "E_CORRUPT" and f"tgms check --store {store} --repair" in err["message"]


def test_write_reports_progress(capsys, tmp_path, store):
    ops = tmp_path / "ops.jsonl"
    ops.write_text(
        "".join(json.dumps({"op": "assert_node", "uid": f"p{i}", "vt_s": 0}) + "\n" for i in range(5))
    )
    ran = run_cli(capsys, "write", "--store", store, ops, "--progress-every", "2")
    assert ran.code == 0
    lines = [ln for ln in ran.err.splitlines() if ln.startswith("write: committed")]
    assert [ln.split()[2] for ln in lines] == ["2/5", "4/5", "5/5"]
    assert [b["seq"] for b in ran.json["batches"]] == [4, 5, 6, 7, 8]
