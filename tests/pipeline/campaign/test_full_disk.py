"""A campaign whose run directory fills up: a real, small tmpfs mounted for the test (root only; skipped
with the reason elsewhere, where ``test_fault_suite``'s directory that refuses writes stands in).

The run ends in the one structured error (``E_LIMIT``, "the disk is full", naming the path), never a
traceback; no MLflow run is left RUNNING; once there is room again (the same mount, made larger), the same
command resumes: every record written before the disk filled is still there, unchanged, and every task is
recorded once. Against the scripted test-double endpoint (never a result).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("hydra")
pytest.importorskip("ray")
mlflow = pytest.importorskip("mlflow")

from tests.conftest import REPO_ROOT, collegemsg_head  # noqa: E402
from tgms.pipeline.campaign.config import SuiteConf  # noqa: E402
from tgms.pipeline.campaign.driver import ensure_bundle  # noqa: E402

#: small enough that the run cannot finish in it, large enough that it gets under way: the bundle (~0.8 MB
#: for these 12,000 events) fits, MLflow's store (~0.8 MB once made) does not
SMALL = "1600k"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SMALL}", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip()}); the refused-write faults stand in")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _records(run_dir: Path) -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted((run_dir / "records").glob("*.jsonl"))}


def test_a_full_run_directory_is_a_structured_error_and_the_rerun_finishes(
    small_disk: Path, tmp_path: Path
) -> None:
    run_dir, cache = small_disk / "run", tmp_path / "cache"
    head = collegemsg_head(tmp_path, 12_000)
    argv = [
        sys.executable, "-m", "tgms.pipeline.campaign", "experiment=smoke",
        "systems=[static_graph_rag,text_to_cypher]", "seeds=[0]", "experiment.mutations.enabled=false",
        f"catalog.suites.collegemsg.source={head}",
        f"run.cache_dir={cache}", "cluster.num_cpus=2", "run.progress_every_s=0.5",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update({"TGMS_CACHE": str(cache), "RAY_AUTH_MODE": "disabled"})
    # the bundle in the shared cache (built here if no test has yet), so the run copies it (~0.8 MB) and
    # the disk fills while MLflow makes its store: the first set-up a full disk cuts short, which used to
    # fail every later run in that directory ("table ... already exists")
    ensure_bundle("collegemsg", SuiteConf(dataset="collegemsg", source=str(head)), tmp_path / "warm",
                  Path(os.environ["TGMS_BUNDLE_CACHE"]))  # fmt: skip
    full = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = full.stdout + full.stderr
    assert full.returncode != 0, "the run fitted: make SMALL smaller"
    assert "Traceback" not in out, out[-4000:]
    errors = [json.loads(ln) for ln in full.stderr.splitlines() if ln.startswith("{") and '"error"' in ln]
    assert errors and errors[-1]["error"] == "E_LIMIT", out[-3000:]
    assert "disk is full" in errors[-1]["message"] and "MLflow tracking store" in errors[-1]["message"]
    print("the full disk stopped the run with:", json.dumps(errors[-1])[:600])
    kept = _records(run_dir)
    db = run_dir / "mlflow.db"

    # room again: the same mount, larger (nothing moves, as when a user frees space)
    grown = subprocess.run(
        ["mount", "-o", "remount,size=64m", str(small_disk)], capture_output=True, text=True
    )
    assert grown.returncode == 0, grown.stderr
    again = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    # the half-made store, removed: where the disk filled decides which half (tables without a schema
    # version, or a schema and no runs): both are a first set-up the rerun makes again
    said = again.stdout + again.stderr
    assert "unfinished first set-up" in said or "interrupted first set-up" in said
    after = _records(run_dir)
    for name, lines in kept.items():  # every record written before the disk filled is still there
        assert after[name][: len(lines)] == lines, name
    ids = [(name, json.loads(ln)["task_id"]) for name, lines in after.items() for ln in lines]
    assert len(after) == 2 and ids and len(ids) == len(set(ids))  # every task of every cell once
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("smoke")
    statuses = [r.info.status for r in client.search_runs([exp.experiment_id])]
    assert "RUNNING" not in statuses and statuses.count("FINISHED") >= 3, statuses
