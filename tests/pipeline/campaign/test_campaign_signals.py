"""SIGTERM of ``tgms-campaign`` at a random point (``tests/conftest.py: signal_point``): the campaign stops
in order (exit 143, the line saying what was kept), its MLflow runs end as KILLED (none left RUNNING), the
records written so far stay, and the same command run again resumes and finishes. Against the scripted
test-double endpoint (never a result)."""

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

from tests.conftest import REPO_ROOT, collegemsg_head, signal_point  # noqa: E402


def _argv(run_dir: Path, head: Path, cache: Path) -> list[str]:
    # tgms only, one seed, a reply delay so that the run is still going when the signal comes
    return [
        sys.executable, "-m", "tgms.pipeline.campaign", "experiment=smoke", "systems=[tgms]", "seeds=[0]",
        "experiment.mutations.enabled=false", "model.reply_delay_s=0.4",
        f"catalog.suites.collegemsg.source={head}", f"run.cache_dir={cache}", "cluster.num_cpus=2",
        "run.progress_every_s=0.5", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip


def _records(run_dir: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted((run_dir / "records").glob("*.jsonl"))}


def test_sigterm_ends_runs_as_killed_keeps_records_and_a_rerun_resumes(tmp_path: Path) -> None:
    cache, run_dir = tmp_path / "cache", tmp_path / "run"
    head = collegemsg_head(tmp_path, 12_000)
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update({"TGMS_CACHE": str(cache), "RAY_AUTH_MODE": "disabled"})
    argv = _argv(run_dir, head, cache)
    # a random point of the run: 0 is during start-up (Hydra, before the handler), k after its k-th output
    # line (the checks, the bundle, MLflow, Ray, the actors' proofs, the progress lines); past the last
    # line the run has finished
    point, rng = signal_point("campaign SIGTERM", 0, 40)
    proc = subprocess.Popen(
        argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    seen = []
    if point == 0:
        time.sleep(rng.uniform(0.05, 2.0))
    else:
        deadline = time.monotonic() + 600
        for line in proc.stdout:
            seen.append(line)
            if len(seen) >= point or time.monotonic() > deadline:
                break
    proc.send_signal(signal.SIGTERM)
    print("signalled after:", repr(seen[-1]) if seen else "(no line yet)")
    rest, _ = proc.communicate(timeout=300)
    out = "".join(seen) + rest
    assert "Traceback" not in out, out[-4000:]
    if proc.returncode == 143:  # stopped in order
        assert "interrupted (SIGTERM)" in out
    else:  # before the handler was installed, or the run had finished
        assert (proc.returncode == -signal.SIGTERM and point == 0) or proc.returncode == 0, out[-4000:]
    db = run_dir / "mlflow.db"
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("smoke") if db.exists() else None
    if exp is not None:  # whatever runs it had made are ended, none left RUNNING
        statuses = {r.info.run_name: r.info.status for r in client.search_runs([exp.experiment_id])}
        assert "RUNNING" not in statuses.values(), statuses
        if proc.returncode == 143:
            assert set(statuses.values()) <= {"KILLED"}, statuses
    kept = _records(run_dir)

    again = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    after = _records(run_dir)
    for name, lines in kept.items():  # every record written before the signal is still there, unchanged
        assert after[name][: len(lines)] == lines, name
    ids = [json.loads(ln)["task_id"] for lines in after.values() for ln in lines]
    assert ids and len(ids) == len(set(ids))  # every task once: nothing ran twice
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("smoke")
    statuses = {r.info.run_name: r.info.status for r in client.search_runs([exp.experiment_id])}
    assert "FINISHED" in statuses.values() and "RUNNING" not in statuses.values()
