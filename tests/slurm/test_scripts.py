"""The slurm/ scripts without a SLURM cluster: they parse (bash -n), their --dry-run prints the commands a
real run executes (and starts nothing), and vllm_replicas.sbatch really launches, polls, publishes and
stops replicas -- the scripted test-double server standing in for `vllm serve` on a machine without GPUs."""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.slurm.conftest import ROOT, SCRIPTED_VLLM, SCRIPTS, SLURM, free_port_pair, port_closed, wait_for


def dry(script: str, *args: str, **env: str) -> list[list[str]]:
    """The commands a dry run prints ("+ " lines), each split back into its argv; a file it would write
    is ``["write", path, content]``."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    full.update(TGMS_ROOT=str(ROOT), **env)
    proc = subprocess.run(
        ["bash", str(SLURM / script), "--dry-run", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    cmds, lines = [], iter(proc.stdout.splitlines())
    for line in lines:
        if line.startswith("+ write "):
            body = "".join(f"{b}\n" for b in iter(lambda: next(lines), "EOF"))
            cmds.append(["write", shlex.split(line[8:])[0], body])
        elif line.startswith("+ "):
            # background commands end in ">LOG 2>&1 &": keep the argv
            cmds.append([a for a in shlex.split(line[2:]) if not (a.startswith(">") or a in ("2>&1", "&"))])
    return cmds


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_parses(script: Path) -> None:
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_scripts_are_shellcheck_clean() -> None:
    extra = [ROOT / ".ci" / "run", SCRIPTED_VLLM]
    proc = subprocess.run(
        ["shellcheck", "-x", "-P", str(SLURM), *map(str, SCRIPTS + extra)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout


def test_vllm_dry_run_one_replica_per_tp_gpus(tmp_path: Path) -> None:
    endpoints = tmp_path / "endpoints.txt"
    cmds = dry(
        "vllm_replicas.sbatch",
        MODEL="Qwen/Qwen2.5-14B-Instruct-AWQ",
        SERVED_NAME="qwen2.5-14b-awq",
        TP="2",
        GPUS="0,1,2,3",
        PORT_BASE="9100",
        QUANTIZATION="awq",
        MAX_MODEL_LEN="32768",
        EXTRA_ARGS="--enforce-eager",
        SEED="7",
        TGMS_ENDPOINTS_FILE=str(endpoints),
        ADVERTISE_HOST="gpu07",
        LOG_DIR=str(tmp_path / "logs"),
    )
    servers = [c for c in cmds if "serve" in c]
    assert len(servers) == 2
    for i, argv in enumerate(servers):
        assert argv[:2] == ["env", f"CUDA_VISIBLE_DEVICES={2 * i},{2 * i + 1}"]
        assert argv[argv.index("serve") + 1] == "Qwen/Qwen2.5-14B-Instruct-AWQ"
        pairs = dict(itertools.pairwise(argv))
        assert pairs["--port"] == str(9100 + i) and pairs["--tensor-parallel-size"] == "2"
        assert pairs["--served-model-name"] == "qwen2.5-14b-awq" and pairs["--quantization"] == "awq"
        assert pairs["--max-model-len"] == "32768" and argv[-1] == "--enforce-eager"
        # a seed for every replica (seeded repairs replay) and prefix caching on: the prompt is one long
        # static prefix per task
        assert pairs["--seed"] == "7" and "--enable-prefix-caching" in argv
    waits = [c for c in cmds if c[0] == "wait_ready"]
    assert [w[1] for w in waits] == ["http://127.0.0.1:9100/health", "http://127.0.0.1:9101/health"]
    assert ["write", str(endpoints), "http://gpu07:9100\nhttp://gpu07:9101\n"] in cmds
    assert not endpoints.exists() and not (tmp_path / "logs").exists()  # a dry run starts nothing


def test_vllm_dry_run_python_entrypoint_and_refusals(tmp_path: Path) -> None:
    cmds = dry(
        "vllm_replicas.sbatch",
        MODEL="/models/phi4",
        GPUS="3",
        TP="1",
        VLLM_CMD="python -m vllm.entrypoints.openai.api_server",
        LOG_DIR=str(tmp_path),
    )
    (server,) = [c for c in cmds if "python" in c]
    assert server[server.index("--model") + 1] == "/models/phi4" and "CUDA_VISIBLE_DEVICES=3" in server
    assert server[server.index("--seed") + 1] == "0" and "--enable-prefix-caching" in server  # defaults
    # a TP larger than the allocation, and no GPUs at all, are refused before anything starts
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "GPUS")}
    env.update(TGMS_ROOT=str(ROOT), MODEL="m", LOG_DIR=str(tmp_path), PATH="/usr/bin:/bin")
    for extra, message in (
        ({"GPUS": "0", "TP": "2"}, "TP=2 needs 2 GPUs"),
        ({}, "no GPUs"),
        ({"GPUS": "0", "SEED": "x"}, "SEED must be"),
        ({"GPUS": "0", "PREFIX_CACHING": "yes"}, "PREFIX_CACHING must be"),
    ):
        proc = subprocess.run(
            ["bash", str(SLURM / "vllm_replicas.sbatch"), "--dry-run"],
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode != 0 and message in proc.stderr, proc.stderr


def test_ray_cluster_dry_run_head_and_workers(tmp_path: Path) -> None:
    addr_file = tmp_path / "ray-address.txt"
    cmds = dry(
        "ray_cluster.sbatch",
        NODES="n1 n2 n3",
        HEAD_IP="10.1.2.3",
        RAY_PORT="6380",
        CPUS_PER_NODE="32",
        RAY_TMP="/scratch/ray-77",
        TGMS_RAY_ADDRESS_FILE=str(addr_file),
    )
    starts = [c for c in cmds if "ray" in c and "start" in c]
    assert len(starts) == 3
    head, *workers = starts
    assert head[:6] == ["srun", "--nodes=1", "--ntasks=1", "--overlap", "-w", "n1"] and "--head" in head
    assert "--node-ip-address=10.1.2.3" in head and "--port=6380" in head
    for node, worker in zip(["n2", "n3"], workers, strict=True):
        assert worker[worker.index("-w") + 1] == node and "--address=10.1.2.3:6380" in worker
    for argv in starts:
        assert {"--temp-dir=/scratch/ray-77", "--num-cpus=32", "--block"} <= set(argv)
    assert ["write", str(addr_file), "10.1.2.3:6380\n"] in cmds and not addr_file.exists()


def test_campaign_dry_run_points_the_driver_at_both(tmp_path: Path) -> None:
    ep, addr = tmp_path / "ep.txt", tmp_path / "addr.txt"
    cmds = dry(
        "campaign.sbatch",
        "seeds=[0,1]",
        TGMS_ENDPOINTS_FILE=str(ep),
        TGMS_RAY_ADDRESS_FILE=str(addr),
        CAMPAIGN_OVERRIDES="model=qwen2.5-14b-awq experiment=frozen_test",
        RUN_DIR=str(tmp_path / "run"),
    )
    assert cmds[-1] == [
        "tgms-campaign",
        "cluster=slurm",
        "cluster.address=null",
        f"cluster.address_file={addr}",
        f"model.endpoints_file={ep}",
        f"hydra.run.dir={tmp_path / 'run'}",
        "model=qwen2.5-14b-awq",
        "experiment=frozen_test",
        "seeds=[0,1]",
    ]
    assert ["wait_for_file", str(ep), "3600"] in cmds
    assert not any("start" in c for c in cmds)  # a Ray address was given: no head of its own


def test_campaign_dry_run_starts_its_own_ray_without_an_address(tmp_path: Path) -> None:
    cmds = dry("campaign.sbatch", "experiment=smoke", RAY_PORT="6399", RAY_TMP="/tmp/ray-x", RAY_CPUS="2")
    head = next(c for c in cmds if c[:3] == ["ray", "start", "--head"])
    assert {"--port=6399", "--temp-dir=/tmp/ray-x", "--num-cpus=2", "--block"} <= set(head)
    ip = next(a for a in head if a.startswith("--node-ip-address=")).split("=", 1)[1]
    assert cmds[-1] == ["tgms-campaign", "cluster=slurm", f"cluster.address={ip}:6399", "experiment=smoke"]


def test_vllm_replicas_for_real_with_the_scripted_server(tmp_path: Path) -> None:
    """Two replicas (GPUS=0,1) of the test double behind the real script: argv recorded, readiness
    polled, endpoints published; a replica that dies is dropped from the list; SIGTERM stops the rest and
    removes the list."""
    port = free_port_pair()
    endpoints, logs = tmp_path / "endpoints.txt", tmp_path / "logs"
    env = dict(
        os.environ,
        TGMS_ROOT=str(ROOT),
        MODEL="some/model",
        SERVED_NAME="qwen-test",
        GPUS="0,1",
        PORT_BASE=str(port),
        POLL_S="0.5",
        GRACE_S="5",
        VLLM_CMD=f"{SCRIPTED_VLLM} serve",
        TGMS_ENDPOINTS_FILE=str(endpoints),
        LOG_DIR=str(logs),
        ADVERTISE_HOST="127.0.0.1",
        SCRIPTED_START_DELAY="1",
    )
    proc = subprocess.Popen(
        ["bash", str(SLURM / "vllm_replicas.sbatch")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: endpoints.exists(), 60, "the endpoints file")
        urls = endpoints.read_text().split()
        assert urls == [f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"]
        for url in urls:  # published only once each replica lists the served name
            with urllib.request.urlopen(url + "/v1/models", timeout=5) as resp:
                assert [m["id"] for m in json.load(resp)["data"]] == ["qwen-test"]
        argv = (logs / "replica-1.argv").read_text().splitlines()
        assert argv[0] == "CUDA_VISIBLE_DEVICES=1" and argv[argv.index("--port") + 1] == str(port + 1)
        assert "some/model" in argv
        # kill replica 0 behind the script's back: the list shrinks to the survivor
        found = subprocess.run(
            ["pgrep", "-f", f"scripted_server --port {port} "], capture_output=True, text=True
        )
        pid0 = int(found.stdout.split()[0])
        os.kill(pid0, signal.SIGKILL)
        wait_for(lambda: endpoints.read_text().split() == [urls[1]], 30, "replica 0 dropped from the list")
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, out
    assert not endpoints.exists() and port_closed(port) and port_closed(port + 1), out


def test_one_endpoints_file_per_model_for_the_scale_sweep(tmp_path: Path) -> None:
    """ "{model}" in TGMS_ENDPOINTS_FILE: each vLLM job writes the file of its model's name, and the
    campaign passes the template with Hydra's ${model.name} in it (resolved per job of `-m model=a,b`),
    leaving the wait to each job's driver (model.endpoints_wait_s) since only it knows the name."""
    template = str(tmp_path / "endpoints.{model}.txt")
    cmds = dry(
        "vllm_replicas.sbatch",
        MODEL="Qwen/Qwen2.5-7B-Instruct",
        SERVED_NAME="qwen2.5-7b",
        GPUS="0",
        TGMS_ENDPOINTS_FILE=template,
        ADVERTISE_HOST="gpu01",
        LOG_DIR=str(tmp_path / "logs"),
    )
    assert ["write", str(tmp_path / "endpoints.qwen2.5-7b.txt"), "http://gpu01:8000\n"] in cmds
    cmds = dry(
        "campaign.sbatch",
        "-m",
        "model=qwen2.5-7b,qwen2.5-14b",
        TGMS_ENDPOINTS_FILE=template,
        TGMS_RAY_ADDRESS="10.0.0.1:6379",
        ENDPOINTS_WAIT_S="900",
    )
    driver = cmds[-1]
    assert f"model.endpoints_file={tmp_path}/endpoints.${{model.name}}.txt" in driver
    assert "model.endpoints_wait_s=900" in driver
    assert not any(c[0] == "wait_for_file" for c in cmds)
