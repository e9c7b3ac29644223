"""What the tests that run a Ray runtime of their own in a child process share (``multinode_run.py``,
``memory_kill_run.py``): the one static_graph_rag cell they run, and running such a script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def static_graph_job(bundle_dir: Path, out: Path, n_tasks: int) -> tuple[Any, dict[str, Any]]:
    """The first ``n_tasks`` tasks of the bundle as one static_graph_rag cell against the scripted
    double (records and traces under ``out``; ``conftest.jobs_for``), and the bundle's manifest."""
    from tests.pipeline.campaign.conftest import Bundle, jobs_for, scripted_model
    from tgms.pipeline.campaign.bundle import read_manifest, read_suite

    manifest = read_manifest(bundle_dir)
    bundle = Bundle(bundle_dir, manifest, read_suite(bundle_dir))
    (job,) = jobs_for(bundle, ["static_graph_rag"], n_tasks, out, scripted_model())
    return job, manifest


def run_script(name: str, bundle_dir: Path, out: Path, n_tasks: int) -> dict[str, Any]:
    """Run ``HERE/name BUNDLE OUT N`` in a child process; the JSON object it prints last."""
    root = str(HERE.parents[2])  # the scripts import this package (tests.…) as well as the project
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, str(HERE / name), str(bundle_dir), str(out), str(n_tasks)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
