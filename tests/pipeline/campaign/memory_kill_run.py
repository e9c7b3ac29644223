"""A real Ray memory kill, run as its own process by ``test_memory_kill.py`` (the memory monitor is set
when a Ray runtime starts, and the test session's runtime is already up).

Ray's memory monitor kills a worker when the node's used memory passes ``RAY_memory_usage_threshold``
(a fraction of the total). The runtime here starts with the threshold 5 GiB above what the machine uses
now; one task actor's first task allocates (and touches) memory a chunk at a time until the monitor kills
its worker. The headroom is wide because the campaign's own Ray runtime, driver and actors, and the tests
the other pytest-xdist worker runs meanwhile, use memory too: with 2 GiB a CI run saw the monitor kill the
ordinary workers again and again. Allocating until killed, rather than a fixed amount, crosses the
threshold whatever the rest of the machine did since it was set. Ray restarts the actor, which replays
and proves its store again; the task is run again (by Ray's own task retry or by the executor's
resubmission, whichever sees it first) and, the allocation being a one-off, finishes. Prints one JSON
object: the executor's stats, the records, the actor's pid before and after, and whether the allocation
happened.

Usage: python memory_kill_run.py BUNDLE_DIR OUT_DIR N_TASKS
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tgms.pipeline.scoring.suite import Task

GIB = 1 << 30
#: Ray's own spelling of its settings (lower case after the prefix)
THRESHOLD_ENV, REFRESH_ENV = "RAY_memory_usage_threshold", "RAY_memory_monitor_refresh_ms"
HEADROOM, CHUNK = 5 * GIB, GIB // 4
#: the allocation stops growing (and waits to be killed) when this little is left, so that a monitor that
#: never fires fails the test instead of the machine
FLOOR = GIB
#: what a test needs available to run: the headroom, then room to cross it before the floor
NEEDED = HEADROOM + FLOOR + 2 * GIB


def available_bytes() -> int:
    with open("/proc/meminfo", encoding="ascii") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemAvailable:"))


def used_fraction_with(headroom: int) -> float:
    with open("/proc/meminfo", encoding="ascii") as fh:
        info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in fh}
    total, available = info["MemTotal"], info["MemAvailable"]
    return min(0.99, (total - available + headroom) / total)


def hungry_actor_class(marker: Path) -> type:
    """A task actor whose first task (on any restart of any actor) allocates until it is killed, once,
    writing its pid to ``marker`` first."""
    import tgms.pipeline.campaign.actors as actors

    class HungryTaskActor(actors.TaskActor):
        def run(self, task: Task, *args: Any) -> Any:
            try:  # one task of all (an actor runs several at once) claims the allocation
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                fd = -1
            if fd >= 0:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                hog = []
                while available_bytes() > FLOOR + CHUNK:  # the monitor kills this worker on the way
                    chunk = bytearray(CHUNK)
                    for i in range(0, CHUNK, 4096):  # touch every page: memory is only used once written
                        chunk[i] = 1
                    hog.append(chunk)
                time.sleep(60)
            return super().run(task, *args)

    return HungryTaskActor


def main(bundle_dir: Path, out: Path, n_tasks: int) -> dict[str, Any]:
    os.environ[THRESHOLD_ENV] = f"{used_fraction_with(HEADROOM):.4f}"
    os.environ[REFRESH_ENV] = "100"
    import ray

    import tgms.pipeline.campaign.actors as actors
    from tests.pipeline.campaign.child_ray import static_graph_job
    from tgms.models.config import EndpointConfig
    from tgms.models.testing.scripted_server import ScriptedServer
    from tgms.models.testing.smoke_rule import smoke_reply
    from tgms.pipeline.campaign.config import ClusterConf
    from tgms.pipeline.campaign.executor import run_jobs, start_actors, write_result

    marker = out / "allocated"
    actors._ACTOR_CLASS = ray.remote(hungry_actor_class(marker))
    job, manifest = static_graph_job(bundle_dir, out, n_tasks)
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False
    )
    try:
        conf = ClusterConf(kind="local", actors=1, actor_concurrency=2, actor_cpus=1.0)
        with ScriptedServer(smoke_reply) as server:
            endpoint = EndpointConfig(base_urls=(server.url,), model="scripted", concurrency=16, timeout_s=20)
            with start_actors({"collegemsg": (bundle_dir, manifest)}, endpoint, conf, out / "work") as pool:
                actor = pool.actors["collegemsg"][0]
                before = ray.get(actor.handle.ready.remote())
                stats = run_jobs(pool, [job], write_result)
                after = ray.get(actor.handle.ready.remote(), timeout=60)
        return {
            "threshold": os.environ[THRESHOLD_ENV],
            "allocated_in": marker.read_text() if marker.exists() else None,
            "pid_before": before["pid"],
            "pid_after": after["pid"],
            "digest_after": after["digest"],
            "expected_digest": manifest.store_digest,
            "stats": stats,
            "records": [json.loads(line) for line in job.records_path.read_text().splitlines()],
        }
    finally:
        ray.shutdown()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])), default=str))
