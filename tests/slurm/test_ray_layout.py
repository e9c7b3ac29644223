"""The SLURM scripts' Ray layout (issue 26, item 12): ``slurm/ray_cluster.sbatch`` starts a head on the
first node and joins every other node with ``ray start --address``. Run here outside SLURM with the same
host named twice (``NODES``), it brings up two Ray nodes of one CPU each; task actors placed one per node
replay the bundle from the object store, prove its digest and run tasks, and the script stops both
nodes when its command ends. The layout under ``sbatch`` on one node is ``test_local_slurm.py``'s."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import collegemsg_head
from tests.slurm.conftest import ROOT, SLURM
from tgms.pipeline.campaign.bundle import build_bundle

HERE = Path(__file__).parent


def test_the_scripts_two_nodes_each_host_an_actor_that_proves_the_bundle(tmp_path: Path) -> None:
    if not (Path(sys.prefix) / "bin" / "ray").exists():
        pytest.skip("the ray command is not installed in this environment (the campaign extra)")
    manifest = build_bundle(
        "collegemsg", 0, tmp_path / "bundle", source=str(collegemsg_head(tmp_path, 6_000)), crosscheck=False
    )
    host, n_tasks = socket.gethostname(), 8
    probe = f"python {HERE / 'ray_layout_probe.py'} {tmp_path / 'bundle'} {tmp_path / 'out'} {n_tasks}"
    env = {
        **os.environ,
        "NODES": f"{host} {host}",
        "CPUS_PER_NODE": "1",
        "TGMS_ROOT": str(ROOT),
        "TGMS_VENV": sys.prefix,
        "TGMS_RAY_ADDRESS_FILE": str(tmp_path / "ray-address.txt"),
        "LOG_DIR": str(tmp_path / "ray"),
        "RAY_AUTH_MODE": "disabled",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "PROBE_OUT": str(tmp_path / "probe.json"),
        "RUN_COMMAND": probe,
    }
    env.pop("SLURM_JOB_ID", None)  # outside an allocation: the script runs each node's command itself
    done = subprocess.run(
        ["bash", str(SLURM / "ray_cluster.sbatch")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    seen = json.loads((tmp_path / "probe.json").read_text())
    assert len(seen["nodes"]) == 2 and sorted(seen["actor_nodes"]) == seen["nodes"]  # one actor per node
    assert seen["digests"] == [manifest.store_digest] * 2 == [seen["expected_digest"]] * 2
    assert (
        sorted(Counter(seen["task_ids"]).values()) == [1] * n_tasks and "infra_error" not in seen["statuses"]
    )
    assert (
        "Ray cluster up" in done.stdout + done.stderr
        and "stopping Ray on 2 node(s)" in done.stdout + done.stderr
    )
    assert not (tmp_path / "ray-address.txt").exists()  # removed when the script ended
