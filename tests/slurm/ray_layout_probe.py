"""Run by ``slurm/ray_cluster.sbatch`` (``RUN_COMMAND``) in ``test_ray_layout.py``: joins the cluster the
script started (``$TGMS_RAY_ADDRESS``), starts two task actors at one CPU each (one per node: each node
offers one), has each replay the bundle from the object store and prove its digest, runs a few tasks, and
writes what it saw as JSON to ``$PROBE_OUT``.

Usage: python ray_layout_probe.py BUNDLE_DIR OUT_DIR N_TASKS
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import ray

from tests.pipeline.campaign.child_ray import static_graph_job
from tgms.models.config import EndpointConfig
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.models.testing.smoke_rule import smoke_reply
from tgms.pipeline.campaign.config import ClusterConf
from tgms.pipeline.campaign.executor import run_jobs, start_actors, write_result


def main(bundle_dir: Path, out: Path, n_tasks: int) -> dict[str, object]:
    job, manifest = static_graph_job(bundle_dir, out, n_tasks)
    ray.init(address=os.environ["TGMS_RAY_ADDRESS"], log_to_driver=False, configure_logging=False)
    try:
        nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
        conf = ClusterConf(kind="slurm", actors=2, actor_concurrency=2, actor_cpus=1.0)
        with ScriptedServer(smoke_reply) as server:
            endpoint = EndpointConfig(base_urls=(server.url,), model="scripted", concurrency=16, timeout_s=20)
            with start_actors({"collegemsg": (bundle_dir, manifest)}, endpoint, conf, out / "work") as pool:
                proofs = ray.get([a.handle.ready.remote() for a in pool.actors["collegemsg"]])
                stats = run_jobs(pool, [job], write_result)
        records = [json.loads(line) for line in job.records_path.read_text().splitlines()]
        return {
            "nodes": nodes,
            "actor_nodes": [p["node_id"] for p in proofs],
            "digests": [p["digest"] for p in proofs],
            "expected_digest": manifest.store_digest,
            "stats": stats,
            "task_ids": [r["task_id"] for r in records],
            "statuses": [r["status"] for r in records],
        }
    finally:
        ray.shutdown()


if __name__ == "__main__":
    seen = main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
    Path(os.environ["PROBE_OUT"]).write_text(json.dumps(seen, default=str), encoding="utf-8")
