"""kill -9 of a long ``tgms write`` at seeded random points, then ``tgms check --repair``.

Acknowledged = every batch the write reported committed (``--progress-every 1``) before it died. After the
repair the store must be in sync, its digest must equal a replay of its log, and every acknowledged batch
must be in it."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tgms.engine.store import Store, replay

from ._cli import build_small_store, run_cli

SEED = 9
KILLS = 6
LINES = 300


def _ops_file(path: Path) -> list[str]:
    """One batch per line: a new node and an edge to it (the write stops at a failed batch: none fail)."""
    uids = []
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(LINES):
            uid = f"w{i}"
            batch = [
                {"op": "assert_node", "uid": uid, "vt_s": i, "props": {"i": i}},
                {"op": "assert_edge", "src": "n0", "dst": uid, "rel_type": "MSG", "vt_s": i + 1},
            ]
            fh.write(json.dumps(batch) + "\n")
            uids.append(uid)
    return uids


def _tgms() -> list[str]:
    script = Path(sys.executable).with_name("tgms")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tgms.pipeline.cli"]


def _acknowledged(stderr_lines: list[str]) -> tuple[int, int]:
    """(batches reported committed, the last line they cover)."""
    done, line = 0, 0
    for text in stderr_lines:
        if text.startswith("write: committed "):
            parts = text.split()
            done = int(parts[2].split("/")[0])
            line = int(parts[6].rstrip(","))
    return done, line


@pytest.mark.slow
def test_kill_9_during_write_then_check_repair_loses_nothing(capsys, tmp_path, scratch_dir):
    base = build_small_store(scratch_dir / "base")
    with Store.open(base, read_only=True) as s:
        base_batches = s.stats()["batches_applied"]
    ops = tmp_path / "ops.jsonl"
    uids = _ops_file(ops)
    rng = random.Random(SEED)
    seen_states: set[tuple[tuple[str, object], ...]] = set()
    for k in range(KILLS):
        root = scratch_dir / f"killed-{k}"
        shutil.copytree(base, root)
        kill_after = rng.randrange(0, LINES // 2) if k else 0  # the first run dies before its first commit
        extra_sleep = rng.uniform(0, 0.05)
        proc = subprocess.Popen(
            [*_tgms(), "write", "--store", str(root), str(ops), "--progress-every", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        lines: list[str] = []
        t0 = time.monotonic()
        if kill_after == 0:
            time.sleep(rng.uniform(0.5, 1.5))  # somewhere in start-up, opening or the first batches
        else:
            for text in proc.stderr:
                lines.append(text)
                if _acknowledged([text])[0] >= kill_after:
                    break
                assert time.monotonic() - t0 < 120, "the write is too slow for this test"
        time.sleep(extra_sleep)
        os.kill(proc.pid, signal.SIGKILL)
        lines += proc.stderr.read().splitlines()
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, ("the write ended before it was killed", lines[-3:])
        acked, through = _acknowledged(lines)

        found = run_cli(capsys, "check", "--store", root, "--json").json  # what the kill left
        seen_states.add(tuple((f["finding"], f.get("applied")) for f in found["findings"]))
        ran = run_cli(capsys, "check", "--store", root, "--repair", "--json")
        report = ran.json
        assert ran.code == 0 and report["state"] == "in_sync", (k, ran.out, ran.err)
        assert len(report["actions"]) == len(found["findings"]), (found, report)
        with replay(root / "eventlog.jsonl", scratch_dir / f"replayed-{k}") as r:
            assert r.digest() == report["digest"], k
        with Store.open(root, read_only=True) as s:
            assert s.digest() == report["digest"]
            have = set(s.entity_ids())
            committed = s.stats()["batches_applied"] - base_batches
        want = set(uids[:through])
        assert want <= have, (k, sorted(want - have)[:5])  # nothing acknowledged is lost
        assert committed >= acked, (k, committed, acked)
    print("findings left by the kills:", sorted(seen_states))
    # Where a kill lands is timing; most land inside a batch (logged, not yet closed by its outcome),
    # which is the case the repair exists for.
    assert any(state for state in seen_states), seen_states
