"""A whole campaign through a real Ray memory kill, run as its own process by ``test_memory_kill.py``.

``tgms-campaign experiment=smoke`` as a user runs it (Hydra, the driver's own local Ray runtime, a SQLite
MLflow store, the scripted test double), on a given bundle, with Ray's memory monitor set 5 GiB above what
the machine uses and the task actors replaced by ones whose first task allocates until it is killed
(:func:`memory_kill_run.hungry_actor_class`). Prints one JSON object: the exit code, the pid the
allocation happened in and whether it still runs, the records per cell, and the driver log's lines on memory.

Usage: python memory_kill_campaign.py BUNDLE_DIR OUT_DIR PER_FAMILY
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.pipeline.campaign.memory_kill_run import (
    HEADROOM,
    REFRESH_ENV,
    THRESHOLD_ENV,
    hungry_actor_class,
    used_fraction_with,
)

SYSTEMS = ("static_graph_rag", "tgms")


def running(pid: int) -> bool:
    try:  # "pid (comm) state ...": a zombie runs no more
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def main(bundle_dir: Path, out: Path, per_family: int) -> dict[str, Any]:
    os.environ[THRESHOLD_ENV] = f"{used_fraction_with(HEADROOM):.4f}"  # read by the raylet the driver starts
    os.environ[REFRESH_ENV] = "100"
    os.environ["TGMS_CACHE"] = str(out / "cache")
    os.environ.pop("MLFLOW_TRACKING_URI", None)  # the run's own store
    import ray

    import tgms.pipeline.campaign.actors as actors
    from tgms.pipeline.campaign.driver import main as campaign_main

    marker = out / "allocated"
    actors._ACTOR_CLASS = ray.remote(hungry_actor_class(marker))
    run_dir = out / "run"
    sys.argv = [
        "tgms-campaign", "experiment=smoke", f"catalog.suites.collegemsg.bundle={bundle_dir}",
        f"run.cache_dir={out / 'cache'}", "cluster.num_cpus=2", "cluster.actors=1",
        f"hydra.run.dir={run_dir}",
        f"systems=[{','.join(SYSTEMS)}]", "seeds=[0]", "experiment.mutations.enabled=false",
        f"experiment.per_family={per_family}",
    ]  # fmt: skip
    code: Any = 0
    try:
        campaign_main()
    except SystemExit as exc:
        code = exc.code
    killed = int(marker.read_text()) if marker.exists() else None
    log = run_dir / "driver.log"
    return {
        "exit": code,
        "allocated_in": killed,
        "allocated_in_running": running(killed) if killed else None,
        "records": {  # per cell id
            f.stem: [json.loads(line) for line in f.read_text().splitlines()]
            for f in sorted(run_dir.rglob("records/*.jsonl"))
        },
        "memory_lines": [ln for ln in log.read_text().splitlines() if "memory" in ln] if log.exists() else [],
        "db": str(run_dir / "mlflow.db"),
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])), default=str))
