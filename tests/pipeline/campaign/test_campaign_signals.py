"""SIGTERM of ``tgms-campaign`` part way: the campaign stops in order (exit 143, the structured line on
stderr), its MLflow runs end as KILLED (none left RUNNING), the records written so far stay, and the same
command run again resumes and finishes. Against the scripted test-double endpoint (never a result)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("hydra")
pytest.importorskip("ray")
mlflow = pytest.importorskip("mlflow")

from tests.conftest import REPO_ROOT, collegemsg_head  # noqa: E402


def _argv(run_dir: Path, head: Path, cache: Path) -> list[str]:
    # tgms only, one seed, a reply delay so that the run is still going when the signal comes
    return [
        sys.executable, "-m", "pipeline.campaign", "experiment=smoke", "systems=[tgms]", "seeds=[0]",
        "experiment.mutations.enabled=false", "model.reply_delay_s=0.4",
        f"catalog.suites.collegemsg.source={head}", f"run.cache_dir={cache}", "cluster.num_cpus=2",
        "run.progress_every_s=0.5", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip


def test_sigterm_ends_runs_as_killed_keeps_records_and_a_rerun_resumes(tmp_path: Path) -> None:
    cache, run_dir = tmp_path / "cache", tmp_path / "run"
    head = collegemsg_head(tmp_path, 12_000)
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update({"TGMS_CACHE": str(cache), "RAY_AUTH_MODE": "disabled"})
    argv = _argv(run_dir, head, cache)
    proc = subprocess.Popen(
        argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 600
    for line in proc.stdout:  # wait for the first task records, then stop it
        seen.append(line)
        if (" tasks in " in line and not line.startswith("0 tasks")) or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=300)
    out = "".join(seen) + rest
    assert proc.returncode == 143, out[-4000:]
    assert "interrupted (SIGTERM)" in out and "Traceback" not in out
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{run_dir / 'mlflow.db'}")
    exp = client.get_experiment_by_name("smoke")
    statuses = {r.info.run_name: r.info.status for r in client.search_runs([exp.experiment_id])}
    assert statuses and set(statuses.values()) == {"KILLED"}, statuses
    records = list((run_dir / "records").glob("*.jsonl"))
    kept = sum(len(p.read_text().splitlines()) for p in records)
    assert kept >= 1  # acknowledged records stay

    again = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    ids = [json.loads(ln)["task_id"] for p in records for ln in p.read_text().splitlines()]
    assert len(ids) == len(set(ids))  # nothing ran twice
    statuses = {r.info.run_name: r.info.status for r in client.search_runs([exp.experiment_id])}
    assert "FINISHED" in statuses.values() and "RUNNING" not in statuses.values()
