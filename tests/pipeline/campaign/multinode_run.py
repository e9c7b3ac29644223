"""A three-node Ray cluster on this machine, run as its own process by ``test_multinode.py`` (the test
session's own Ray runtime is single-node, and a process joins one runtime only).

``ray.cluster_utils.Cluster`` starts a head and two more raylets, each with its own resources (one CPU
each) joined to the head's GCS: Ray's own way of testing several nodes on one machine. Two task actors at
one CPU each land on two different nodes; each replays the bundle's event log from the object store and
proves its digest. After a few records the node of an actor that is not the head is killed without grace:
Ray restarts its actor on the spare node, where it replays and proves the store again, and the tasks that
were in flight run again (Ray's task retry, or the driver's resubmission when the failure reaches it).
Prints one JSON object: the nodes, the proofs before and after, the executor's stats.

Usage: python multinode_run.py BUNDLE_DIR OUT_DIR N_TASKS
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster

from tests.pipeline.campaign.child_ray import static_graph_job
from tgms.models.config import EndpointConfig
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.models.testing.smoke_rule import smoke_reply
from tgms.pipeline.campaign.config import ClusterConf
from tgms.pipeline.campaign.executor import CellJob, run_jobs, start_actors, write_result
from tgms.pipeline.campaign.records import TaskResult

#: a killed node is declared dead after about a second instead of Ray's default of tens of seconds
FAST_HEALTH = {"health_check_period_ms": 200, "health_check_failure_threshold": 5}


def main(bundle_dir: Path, out: Path, n_tasks: int) -> dict[str, Any]:
    job, manifest = static_graph_job(bundle_dir, out, n_tasks)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "_system_config": FAST_HEALTH},
    )
    spare = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    try:
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        nodes = {cluster.head_node.node_id: "head", spare[0].node_id: "n2", spare[1].node_id: "n3"}
        conf = ClusterConf(kind="local", actors=2, actor_concurrency=2, actor_cpus=1.0)
        result: dict[str, Any] = {"nodes": sorted(nodes.values())}
        with ScriptedServer(smoke_reply) as server:
            server.delay_s = 0.3
            endpoint = EndpointConfig(base_urls=(server.url,), model="scripted", concurrency=16, timeout_s=20)
            with start_actors({"collegemsg": (bundle_dir, manifest)}, endpoint, conf, out / "work") as pool:
                before = ray.get([a.handle.ready.remote() for a in pool.actors["collegemsg"]])
                result["before"] = [
                    {"node": nodes.get(p["node_id"], "?"), "digest": p["digest"]} for p in before
                ]
                victim = next(a for a, p in zip(pool.actors["collegemsg"], before, strict=True)
                              if nodes.get(p["node_id"]) != "head")  # fmt: skip
                doomed = next(n for n in spare if n.node_id == before[victim.index]["node_id"])
                written: list[str] = []

                def on_record(j: CellJob, r: TaskResult) -> None:
                    write_result(j, r)
                    written.append(r.record.task_id)
                    if len(written) == 4:
                        result["killed"] = nodes[doomed.node_id]
                        cluster.remove_node(doomed, allow_graceful=False)

                result["stats"] = run_jobs(pool, [job], on_record)
                after = ray.get(victim.handle.ready.remote(), timeout=60)
                result["after"] = {"node": nodes.get(after["node_id"], "?"), "digest": after["digest"]}
        result["expected_digest"] = manifest.store_digest
        result["records"] = [json.loads(line) for line in job.records_path.read_text().splitlines()]
        return result
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    out = main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
    print(json.dumps(out, default=str))
