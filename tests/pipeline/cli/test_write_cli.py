"""``tgms write --create``: a store of one's own from an ops file, on either backend; bad input creates
nothing."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tgms.engine.api import Store

from ._cli import run_cli

OPS = (
    '[{"op": "assert_node", "uid": "a", "vt_s": 0}, {"op": "assert_node", "uid": "b", "vt_s": 0}]\n'
    '{"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "w", "props": {"p": 1}, '
    '"vt_s": 0, "vt_e": 100}\n'
)


@pytest.fixture
def ops_file(tmp_path):
    p = tmp_path / "ops.jsonl"
    p.write_text(OPS)
    return p


def test_create_makes_a_store_that_replays_to_the_same_digest(capsys, tmp_path, ops_file, backend):
    root = tmp_path / "mine"
    ran = run_cli(capsys, "write", "--store", root, ops_file, "--create", "--backend", backend)
    assert ran.code == 0, ran.err
    assert [b["status"] for b in ran.json["batches"]] == ["committed", "committed"]
    with Store.open(root, read_only=True) as s:
        assert s.backend_name == backend and set(s.entity_ids()) == {"a", "b"}
        digest = s.digest()
    ran = run_cli(capsys, "replay", root / "eventlog.jsonl", "--store", tmp_path / "copy")
    assert ran.code == 0, ran.err
    with Store.open(tmp_path / "copy", read_only=True) as s:
        assert s.digest() == digest


def test_create_on_an_existing_store_writes_into_it(capsys, tmp_path, ops_file):
    root = tmp_path / "mine"
    assert run_cli(capsys, "write", "--store", root, ops_file, "--create").code == 0
    more = tmp_path / "more.jsonl"
    more.write_text('{"op": "assert_node", "uid": "c", "vt_s": 5}\n')
    assert run_cli(capsys, "write", "--store", root, more, "--create").code == 0
    with Store.open(root, read_only=True) as s:
        assert set(s.entity_ids()) == {"a", "b", "c"}


def test_without_create_a_missing_store_is_not_found(capsys, tmp_path, ops_file):
    ran = run_cli(capsys, "write", "--store", tmp_path / "nowhere", ops_file)
    assert ran.error["error"] == "E_NOT_FOUND"
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    ("content", "code"),
    [("garbage\n", "E_SCHEMA"), ('{"op": "assert_node", "uid": "a", "vt_s": 1.5}\n', "E_SCHEMA")],
)
def test_a_malformed_file_creates_nothing(capsys, tmp_path, content, code):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    ran = run_cli(capsys, "write", "--store", tmp_path / "mine", bad, "--create")
    assert ran.error["error"] in (code, "E_INVALID_ARG")
    assert not (tmp_path / "mine").exists()


def test_create_over_a_file_is_refused(capsys, tmp_path, ops_file):
    ran = run_cli(capsys, "write", "--store", ops_file, ops_file, "--create")
    assert ran.error["error"] == "E_INVALID_ARG"
    assert ops_file.read_text() == OPS


def test_a_rerun_skips_the_committed_lines_and_writes_the_rest(capsys, tmp_path, ops_file):
    root = tmp_path / "mine"
    assert run_cli(capsys, "write", "--store", root, ops_file, "--create").code == 0
    with Store.open(root, read_only=True) as s:
        digest = s.digest()
    again = run_cli(capsys, "write", "--store", root, ops_file)
    assert again.code == 0 and again.json == {"batches": [], "skipped": 2}
    assert "2 line(s) already committed" in again.err
    with Store.open(root, read_only=True) as s:
        assert s.digest() == digest  # nothing written twice
    # a line appended (the same node asserted again is a new line, not a committed one)
    ops_file.write_text(OPS + '{"op": "assert_node", "uid": "c", "vt_s": 5}\n' + OPS.splitlines()[0] + "\n")
    more = run_cli(capsys, "write", "--store", root, ops_file)
    assert more.code == 0 and more.json["skipped"] == 2 and len(more.json["batches"]) == 2
    assert [b["line"] for b in more.json["batches"]] == [3, 4]


def test_a_sigterm_that_interrupts_a_duckdb_query_stops_in_order(capsys, tmp_path, ops_file, monkeypatch):
    """DuckDB turns the SIGTERM handler's exception, raised while it runs a query, into its own
    ``RuntimeError: Query interrupted``: the write stops as interrupted (143, E_INTERRUPTED naming what was
    committed), not as an internal error, and a rerun writes the rest."""
    root = tmp_path / "mine"
    real = Store.try_write
    calls = []

    def interrupted_query(self, batch, bid):  # what DuckDB does when the signal lands inside a query
        calls.append(bid)
        if len(calls) == 2:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)  # the handler runs here
            except KeyboardInterrupt:
                raise RuntimeError("Query interrupted") from None
        return real(self, batch, bid)

    monkeypatch.setattr(Store, "try_write", interrupted_query)
    ran = run_cli(capsys, "write", "--store", root, ops_file, "--create")
    assert ran.code == 128 + signal.SIGTERM, ran.err
    assert ran.error["error"] == "E_INTERRUPTED" and ran.error["details"]["committed_batches"] == 1
    monkeypatch.setattr(Store, "try_write", real)
    again = run_cli(capsys, "write", "--store", root, ops_file)
    assert again.code == 0 and again.json["skipped"] == 1 and len(again.json["batches"]) == 1


def test_the_boundary_reports_a_library_error_after_a_sigterm_as_the_stop(capsys, tmp_path, monkeypatch):
    """Any command: an exception that ends it after a SIGTERM arrived in its sigterm block (a library's own
    error for the interrupt) is E_INTERRUPTED, 143; the next command in the same process starts with no
    SIGTERM on record, so its own failure is reported as itself."""
    from tgms.pipeline.cli import write
    from tgms.pipeline.signals import sigterm_as_interrupt

    def stopped(args):
        with sigterm_as_interrupt():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)
            except KeyboardInterrupt:
                raise RuntimeError("Query interrupted") from None

    monkeypatch.setattr(write, "run", stopped)
    ran = run_cli(capsys, "write", "--store", tmp_path / "s", tmp_path / "none.jsonl")
    assert ran.code == 143 and ran.error["error"] == "E_INTERRUPTED", ran.err
    monkeypatch.undo()
    after = run_cli(capsys, "write", "--store", tmp_path / "s", tmp_path / "none.jsonl")
    assert after.code != 143 and after.error["error"] != "E_INTERRUPTED", after.err


def test_sigterm_reports_what_was_committed_and_a_rerun_finishes_without_duplicates(tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO_ROOT, signal_point

    root, ops = tmp_path / "big", tmp_path / "big.jsonl"
    ops.write_text(
        "".join(json.dumps({"op": "assert_node", "uid": f"u{i}", "vt_s": i}) + "\n" for i in range(1200))
    )
    cmd = [sys.executable, "-m", "tgms.pipeline.cli.main", "write", "--store", str(root), str(ops),
           "--create", "--progress-every", "1"]  # fmt: skip
    # a random point: 0 is during start-up (the interpreter, the store being created), else after that
    # many committed batches
    point, rng = signal_point("tgms write SIGTERM", 0, 1100)
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    if point == 0:
        time.sleep(rng.uniform(0.05, 1.5))
    else:
        for line in proc.stderr:  # wait until that many batches are committed, then stop it
            if f"committed {point}/" in line:
                break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    stops = [json.loads(x) for x in err.splitlines() if x.startswith('{"details"')]
    if proc.returncode == 128 + signal.SIGTERM:  # stopped in order: says what it committed
        (stop,) = stops
        assert stop["error"] == "E_INTERRUPTED" and stop["details"]["signal"] == "SIGTERM"
        committed = stop["details"]["committed_batches"]
        assert point <= committed < 1200 and stop["details"]["last_committed_line"] == committed
    else:  # before the handler was installed (Python's default ends the process), or already done
        before_handler = proc.returncode == -signal.SIGTERM and point == 0
        assert before_handler or proc.returncode == 0, (proc.returncode, err[-2000:])
        committed = 0
    time.sleep(0.1)
    rerun = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    out = json.loads(rerun.stdout)
    assert out["skipped"] >= committed and out["skipped"] + len(out["batches"]) == 1200
    with Store.open(root, read_only=True) as s:
        assert len(s.entity_ids()) == 1200
        assert len(s.committed_batch_ids()) == 1200  # each line once: none re-applied


def test_a_sigterm_a_library_swallowed_stops_the_write_after_the_batch_in_hand(
    capsys, tmp_path, monkeypatch
) -> None:
    # DuckDB can lose the SIGTERM handler's exception (the query runs on): the signal is on record, so
    # the write stops after the batch in hand with E_INTERRUPTED and the committed count, exit 143
    root = tmp_path / "mine"
    real = Store.try_write
    calls = []

    def swallowing(self, batch, batch_id=None):  # the first batch's write "loses" a SIGTERM
        calls.append(batch_id)
        if len(calls) == 1:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.5)  # the handler runs here and raises
            except KeyboardInterrupt:
                pass  # ... and a library swallows it
        return real(self, batch, batch_id)

    ops = tmp_path / "ops.jsonl"
    ops.write_text(OPS)
    monkeypatch.setattr(Store, "try_write", swallowing)
    ran = run_cli(capsys, "write", "--store", root, ops, "--create")
    assert ran.code == 143 and '"E_INTERRUPTED"' in ran.err, ran.err
    assert len(calls) == 1  # stopped after the first batch, not at the end of the file
    with Store.open(root, read_only=True) as s:
        assert len(s.committed_batch_ids()) == 1
    monkeypatch.setattr(Store, "try_write", real)
    again = run_cli(capsys, "write", "--store", root, ops)
    assert again.code == 0 and again.json["skipped"] == 1 and len(again.json["batches"]) == 1
