"""A driver-like process for the resume test: joins the test session's Ray, proves actors, runs the jobs.

``python -m tests.pipeline.campaign._driver_proc --address A --bundle DIR --url URL --out DIR --tasks N
--systems a,b`` runs the first N tasks of the bundle's suite for each system against the endpoint at URL,
appending records under OUT with :func:`~pipeline.campaign.executor.write_result`, resuming from what is
there. The test SIGKILLs it mid-run and runs it again.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.pipeline.campaign.conftest import TEST_KNOBS
from tgms.models.config import ModelConfig
from tgms.pipeline.campaign.bundle import read_manifest, read_suite
from tgms.pipeline.campaign.cells import Cell
from tgms.pipeline.campaign.config import ClusterConf
from tgms.pipeline.campaign.endpoints import open_model
from tgms.pipeline.campaign.executor import CellJob, run_jobs, run_settings, start_actors
from tgms.pipeline.campaign.ray_runtime import ray_session


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    for flag in ("--address", "--bundle", "--url", "--out", "--systems"):
        p.add_argument(flag, required=True)
    p.add_argument("--tasks", type=int, required=True)
    args = p.parse_args(argv)
    bundle, out = Path(args.bundle), Path(args.out)
    suite = read_suite(bundle)
    tasks = [*suite.splits.dev, *suite.splits.test][: args.tasks]
    model = ModelConfig.model_validate(
        {"name": "scripted", "kind": "endpoint", "api_base": [args.url], "concurrency": 16, "timeout_s": 10.0}
    )
    cluster = ClusterConf(kind="ray", address=args.address, actors=2, actor_concurrency=2, actor_cpus=0.1)
    with ray_session(cluster), open_model(model, None, False) as (endpoint, generation):
        jobs = []
        for system in args.systems.split(","):
            cell = Cell("collegemsg", system, model.name, 0)
            records = out / "records" / f"{cell.cell_id}.jsonl"
            traces = out / "traces" / f"{cell.cell_id}.jsonl"
            knobs = dict(TEST_KNOBS.get(system, {}))
            jobs.append(CellJob(cell, knobs, run_settings(cell, generation), tasks, records, traces))
        with start_actors(
            {"collegemsg": (bundle, read_manifest(bundle))}, endpoint, cluster, out / "work"
        ) as pool:
            print("actors ready", flush=True)
            stats = run_jobs(pool, jobs)
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
