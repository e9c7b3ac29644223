"""Killing a driver with SIGKILL mid-run and rerunning it finishes every task exactly once (from the records).

A driver-like process (``_driver_proc``: real Ray actors joined to the session's runtime, the real
executor, records appended with fsync) runs two cells over a slow scripted endpoint (TEST DOUBLE, 0.3 s per
reply); once some records are on disk it is SIGKILLed, then run again with the same arguments. Every task of
every cell must then have exactly one finished record: none lost, none run twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from tests.conftest import REPO_ROOT, signal_point
from tests.pipeline.campaign.conftest import Bundle
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.models.testing.smoke_rule import smoke_reply
from tgms.pipeline.campaign.records import read_records
from tgms.pipeline.systems.record import TaskRecord

N_TASKS = 16
SYSTEMS = ["static_graph_rag", "tgms"]


def driver(ray_info: dict, bundle: Bundle, url: str, out: Path) -> subprocess.Popen[str]:
    argv = [
        sys.executable, "-m", "tests.pipeline.campaign._driver_proc", "--address", ray_info["address"],
        "--bundle", str(bundle.dir), "--url", url, "--out", str(out), "--tasks", str(N_TASKS),
        "--systems", ",".join(SYSTEMS),
    ]  # fmt: skip
    return subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def records(out: Path) -> list[TaskRecord]:
    return [r for f in sorted((out / "records").glob("*.jsonl")) for r in read_records(f)]


def test_sigkill_mid_run_then_rerun_finishes_each_task_once(
    ray_info: dict, small_bundle: Bundle, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    # a random point: after that many records (of 32), 0 being before the first one is written
    point, rng = signal_point("campaign driver SIGKILL", 0, N_TASKS * len(SYSTEMS) - 4)
    with ScriptedServer(smoke_reply) as server:
        server.delay_s = 0.3
        proc = driver(ray_info, small_bundle, server.url, out)
        try:
            deadline = time.monotonic() + 120
            if point == 0:  # somewhere in joining Ray, starting and proving the actors, the first tasks
                time.sleep(rng.uniform(0.5, 4.0))
            while len(records(out)) < point:
                assert proc.poll() is None, proc.communicate()[0][-3000:]
                assert time.monotonic() < deadline, "the driver wrote no records in time"
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL
        at_kill = records(out)
        assert point <= len(at_kill) < N_TASKS * len(SYSTEMS), "killed part way"
        requests_before = server.log.chat_count

        rerun = driver(ray_info, small_bundle, server.url, out)
        output, _ = rerun.communicate(timeout=300)
        assert rerun.returncode == 0, output[-3000:]
        stats = json.loads(output.strip().splitlines()[-1])

    final = records(out)
    expected_ids = [t.id for t in small_bundle.tasks[:N_TASKS]]
    for system in SYSTEMS:
        mine = [r for r in final if r.system == system]
        finished = Counter(r.task_id for r in mine if r.status != "infra_error")
        assert sorted(finished) == sorted(expected_ids), f"{system}: every task finished"
        assert set(finished.values()) == {1}, f"{system}: no task finished twice"
    assert not [r for r in final if r.status == "infra_error"]
    # the rerun ran only what the kill left: the records already on disk were skipped
    assert stats["skipped"] == len(at_kill)
    assert stats["finished"] == N_TASKS * len(SYSTEMS) - stats["skipped"]
    assert server.log.chat_count > requests_before
