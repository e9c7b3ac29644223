"""Which Ray a campaign joins (the address file a SLURM job writes, else the address; clear errors
otherwise) and how many actors it starts there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tgms.engine.api import InvalidArgError, NotFoundError
from tgms.pipeline.campaign.config import ClusterConf
from tgms.pipeline.campaign.ray_runtime import actors_per_suite, cluster_address


def test_address_file_wins_over_address(tmp_path: Path) -> None:
    f = tmp_path / "ray_address"
    f.write_text("10.0.0.7:6379\n", encoding="utf-8")
    # conf/cluster/slurm.yaml defaults address to "auto": the allocation's own head file is more specific
    assert cluster_address(ClusterConf(kind="slurm", address="auto", address_file=str(f))) == "10.0.0.7:6379"
    assert cluster_address(ClusterConf(kind="slurm", address_file=str(f))) == "10.0.0.7:6379"
    assert cluster_address(ClusterConf(kind="ray", address="10.0.0.9:6379")) == "10.0.0.9:6379"


def test_actors_are_capped_to_the_cluster_cpus() -> None:
    slurm = ClusterConf(kind="slurm", actors=16, actor_cpus=1)
    assert actors_per_suite(slurm, 2.0, 1) == 2, "16 actors of 1 CPU on 2 CPUs: only 2 can be placed"
    assert actors_per_suite(slurm, 64.0, 1) == 16
    assert actors_per_suite(slurm, 64.0, 4) == 16
    assert actors_per_suite(slurm, 8.0, 4) == 2, "every suite gets its share"
    assert actors_per_suite(slurm, 2.0, 4) == 1, "never fewer than one per suite"
    local = ClusterConf(kind="local", actors=2, actor_cpus=0.5)
    assert actors_per_suite(local, 2.0, 1) == 2


def test_missing_or_empty_address_is_a_structured_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgError, match=r"cluster\.address"):
        cluster_address(ClusterConf(kind="ray"))
    with pytest.raises(NotFoundError, match="does not exist"):
        cluster_address(ClusterConf(kind="slurm", address_file=str(tmp_path / "absent")))
    (tmp_path / "empty").write_text("\n", encoding="utf-8")
    with pytest.raises(InvalidArgError, match="is empty"):
        cluster_address(ClusterConf(kind="slurm", address_file=str(tmp_path / "empty")))


def test_a_local_runtime_is_its_own_whatever_ray_start_or_ray_address_left(tmp_path: Path) -> None:
    # kind "local" must not join another Ray: with $RAY_ADDRESS naming a dead address (as `ray start` on
    # this machine leaves /tmp/ray/ray_current_cluster), ray.init without address="local" tries to join it
    # and fails on num_cpus. In a child process: the test session's own runtime is already up.
    import os
    import subprocess
    import sys

    pytest.importorskip("ray")
    code = (
        "from tgms.pipeline.campaign.config import ClusterConf\n"
        "from tgms.pipeline.campaign.ray_runtime import ray_session\n"
        "with ray_session(ClusterConf(kind='local', num_cpus=1)) as info:\n"
        "    print('started', info['started_here'])\n"
    )
    env = {
        **os.environ,
        "RAY_ADDRESS": "127.0.0.1:9",
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env,
                          cwd=Path(__file__).parents[3])  # fmt: skip
    assert done.returncode == 0 and "started True" in done.stdout, done.stderr[-2000:]
