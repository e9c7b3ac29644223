"""Shared pieces of the slurm/ script tests: paths, free ports, and the local SLURM cluster's client
environment (slurm/local_cluster.sh start; tests that need it skip, saying why, when it is not up)."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "slurm"
SCRIPTS = [*sorted(SLURM.glob("*.sbatch")), SLURM / "lib.sh", SLURM / "local_cluster.sh"]
SCRIPTED_VLLM = Path(__file__).with_name("scripted_vllm.sh")
PROBE = Path(__file__).with_name("probe_campaign.py")
LOCAL_CONF = Path(os.environ.get("TGMS_SLURM_DIR", "/tmp/tgms-slurm")) / "slurm.conf"


def free_port_pair() -> int:
    """A port p with p and p+1 free (two replicas on consecutive ports), drawn below the kernel's ephemeral
    range (32768-60999 here): a port the kernel hands out for ``bind(0)`` may be handed out again, to any
    server or outgoing connection, between this check and the job's start (seen in CI: a replica failing
    with "Address already in use")."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20_000, 32_000)
        if _bindable(port) and _bindable(port + 1):
            return port
    raise RuntimeError("no two consecutive free ports")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def port_closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) != 0


def wait_for(predicate, timeout: float, what: str, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture(scope="session")
def slurm_env() -> dict[str, str]:
    """The environment for sbatch/squeue against a running controller; skips when there is none."""
    if shutil.which("sbatch") is None:
        pytest.skip("sbatch is not installed (apt-get install -y slurm-wlm munge; .ci/run does it)")
    env = dict(os.environ)
    if "SLURM_CONF" not in env and LOCAL_CONF.exists():
        env["SLURM_CONF"] = str(LOCAL_CONF)
    ping = subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True, timeout=30)
    if ping.returncode != 0 or "UP" not in ping.stdout:
        pytest.skip(f"no SLURM controller is up (slurm/local_cluster.sh start): {ping.stdout or ping.stderr}")
    env["TGMS_ROOT"] = str(ROOT)
    env["RAY_AUTH_MODE"] = "disabled"
    return env
