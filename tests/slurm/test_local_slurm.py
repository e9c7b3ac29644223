"""The slurm/ scripts on a real one-node SLURM cluster (slurm/local_cluster.sh; .ci/run starts it):

- the README walk-through: a vLLM replica job (the scripted test double in vLLM's place: no GPU here),
  then the campaign job with ``--dependency=after:`` that waits for the endpoint list, starts its own
  Ray head and runs the driver's command against both; scancel stops the replicas;
- ray_cluster.sbatch bringing a Ray cluster up in its allocation and running campaign.sbatch on it;
- the smoke campaign itself (``tgms-campaign experiment=smoke``) submitted with ``sbatch --wait``, its
  MLflow store checked.
Skipped, with the reason, when sbatch is missing or no controller answers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import collegemsg_head
from tests.slurm.conftest import PROBE, ROOT, SCRIPTED_VLLM, SLURM, free_port_pair, port_closed, wait_for

pytestmark = pytest.mark.slow


def sbatch(env: dict[str, str], script: Path, *args: str, opts: list[str], timeout: float = 600) -> str:
    """Submit from the repository root; the job id. With ``--wait`` in opts, returns once the job ended
    (and fails the test with the job's output when it failed)."""
    proc = subprocess.run(
        ["sbatch", "--parsable", *opts, str(script), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out = next((o.split("=", 1)[1] for o in opts if o.startswith("--output=")), None)
    log = Path(out).read_text() if out and Path(out).exists() else ""
    assert proc.returncode == 0, f"sbatch failed ({proc.returncode}): {proc.stderr}\n{log}"
    return proc.stdout.strip().split(";")[0]


def job_gone(env: dict[str, str], job: str) -> bool:
    q = subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True)
    return q.returncode != 0 or not q.stdout.strip()


def no_process_with(text: str) -> bool:
    return subprocess.run(["pgrep", "-f", text], capture_output=True).returncode != 0


def test_vllm_job_then_dependent_campaign_job(slurm_env: dict[str, str], tmp_path: Path) -> None:
    port = free_port_pair()
    endpoints, probe_out = tmp_path / "endpoints.txt", tmp_path / "probe.json"
    env = dict(
        slurm_env,
        MODEL="some/model",
        SERVED_NAME="qwen-test",
        GPUS="0,1",
        PORT_BASE=str(port),
        POLL_S="1",
        GRACE_S="5",
        VLLM_CMD=f"{SCRIPTED_VLLM} serve",
        TGMS_ENDPOINTS_FILE=str(endpoints),
        LOG_DIR=str(tmp_path / "vllm"),
        ADVERTISE_HOST="127.0.0.1",
        RUN_DIR=str(tmp_path / "run"),
        CAMPAIGN_CMD=f"python {PROBE}",
        PROBE_OUT=str(probe_out),
        RAY_CPUS="1",
        # a vLLM job that fails must fail the campaign job soon, not hold the node for the default hour
        ENDPOINTS_WAIT_S="120",
    )
    small = ["--cpus-per-task=1", "--mem=1G", "--gres=none"]
    vllm_job = sbatch(env, SLURM / "vllm_replicas.sbatch", opts=[*small, f"--output={tmp_path}/vllm.out"])
    try:
        campaign_job = sbatch(
            env,
            SLURM / "campaign.sbatch",
            "experiment=smoke",
            opts=[*small, "--wait", f"--dependency=after:{vllm_job}", f"--output={tmp_path}/campaign.out"],
        )
        seen = json.loads(probe_out.read_text())
        urls = [f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"]
        # the driver got the cluster, the Ray head this job started, the endpoint list and the overrides
        assert seen["slurm_job_id"] == campaign_job and seen["ray_nodes"] == 1
        assert seen["argv"][0] == "cluster=slurm" and seen["argv"][1] == f"cluster.address={seen['address']}"
        assert seen["argv"][2:] == [
            f"model.endpoints_file={endpoints}",
            f"hydra.run.dir={tmp_path / 'run'}",
            "experiment=smoke",
        ]
        # a Ray task on that cluster reached both replicas under the served name
        assert seen["served"] == {u: ["qwen-test"] for u in urls}
        # the job stopped the Ray head it started (its temp dir is per job)
        assert no_process_with(f"ray-{campaign_job}")
        argv = (tmp_path / "vllm" / "replica-0.argv").read_text().splitlines()
        assert "some/model" in argv and argv[argv.index("--port") + 1] == str(port)
    finally:
        subprocess.run(["scancel", vllm_job], env=slurm_env, check=False)
        wait_for(lambda: job_gone(slurm_env, vllm_job), 90, f"vLLM job {vllm_job} to end")
    # the job's trap stopped the replicas and withdrew the endpoint list
    wait_for(lambda: port_closed(port) and port_closed(port + 1), 30, "the replicas to stop")
    assert not endpoints.exists()
    assert "replica 0 ready" in (tmp_path / "vllm.out").read_text()


def test_ray_cluster_job_runs_the_campaign_on_its_cluster(slurm_env: dict[str, str], tmp_path: Path) -> None:
    addr_file, probe_out = tmp_path / "ray-address.txt", tmp_path / "probe.json"
    env = dict(
        slurm_env,
        TGMS_RAY_ADDRESS_FILE=str(addr_file),
        LOG_DIR=str(tmp_path / "ray"),
        CPUS_PER_NODE="1",
        GRACE_S="20",
        RUN_COMMAND=f"{SLURM / 'campaign.sbatch'} experiment=smoke",
        CAMPAIGN_CMD=f"python {PROBE}",
        PROBE_OUT=str(probe_out),
    )
    job = sbatch(
        env,
        SLURM / "ray_cluster.sbatch",
        opts=["--nodes=1", "--cpus-per-task=1", "--mem=2G", "--wait", f"--output={tmp_path}/ray.out"],
    )
    seen = json.loads(probe_out.read_text())
    # campaign.sbatch found TGMS_RAY_ADDRESS exported by the cluster job and started no head of its own
    assert seen["argv"] == ["cluster=slurm", f"cluster.address={seen['address']}", "experiment=smoke"]
    assert seen["ray_nodes"] == 1 and seen["slurm_job_id"] == job
    out = (tmp_path / "ray.out").read_text()
    assert f"Ray cluster up: {seen['address']}" in out and "stopping the Ray head" not in out
    assert not addr_file.exists() and no_process_with(f"ray-{job}")
    assert (tmp_path / "ray" / "head.log").is_file()  # the logs went where LOG_DIR said


def test_smoke_campaign_under_sbatch(slurm_env: dict[str, str], tmp_path: Path) -> None:
    import mlflow

    # the first 12,000 CollegeMsg events, as the driver's own smoke test does: seconds, not minutes
    head = collegemsg_head(tmp_path, 12_000)
    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    env = dict(slurm_env, RUN_DIR=str(run_dir), RAY_CPUS="2", TGMS_CACHE=str(cache))
    overrides = [
        "experiment=smoke", f"catalog.suites.collegemsg.source={head}", f"run.cache_dir={cache}",
        # SLURM is what is under test (the driver's own tests cover every system and both seeds): two
        # systems, one seed keep it to under a minute; vector_rag's embedding alone took ~8 min on a loaded
        # 2-core machine
        "systems=[tgms,text_to_cypher]", "seeds=[0]", "experiment.mutations.enabled=false",
        # conf/cluster/slurm.yaml sizes the actors for a real allocation; this node has 2 CPUs
        "cluster.actors=2", "cluster.actor_cpus=0.5",
    ]  # fmt: skip
    sbatch(
        env, SLURM / "campaign.sbatch", *overrides, timeout=900,
        opts=["--cpus-per-task=2", "--mem=6G", "--wait", f"--output={tmp_path}/campaign.out"],
    )  # fmt: skip
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{run_dir / 'mlflow.db'}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    parents = [r for r in runs if r.data.tags.get("tgms.kind") == "campaign"]
    cells = [r for r in runs if r.data.tags.get("tgms.kind") == "cell"]
    assert len(parents) == 1, (tmp_path / "campaign.out").read_text()
    # two systems x one seed, each a child run of the parent with its denominators
    assert len(cells) == 2
    assert {r.data.tags["mlflow.parentRunId"] for r in cells} == {parents[0].info.run_id}
    assert all(r.data.metrics["accuracy_den"] >= 1 for r in cells)
    assert {(r.data.tags["tgms.system"], r.data.tags["tgms.seed"]) for r in cells} == {
        (s, "0") for s in ("tgms", "text_to_cypher")
    }
