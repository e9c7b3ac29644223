"""``tgms bench ops``: operator latency on synthetic stores of several scales (a benchmark, not a test).

For each scale a synthetic store is built once (cached under ``--work``, see :mod:`pipeline.latency.stores`),
then every typical call is run once to warm up and ``reps`` times timed; p50 and p95 are reported with the
target where one applies (issue targets on this 2-core machine) and the ratio p50 / target. The task
templates' calls are timed the same way on CollegeMsg (``--datasets``). Peak RSS is that of the process
that ran each scale.

    tgms bench ops --scales 1e5,1e6,1e7 --json ops.json [--update-docs]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from tgms.pipeline.bench.report import BenchResult, add_reps, stamp
from tgms.pipeline.latency.operators import run, table, template_summary
from tgms.pipeline.latency.stores import default_work_dir, parse_scales

HELP = "operator p50/p95 on synthetic stores vs targets, and the task templates' calls on CollegeMsg"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scales", default="1e5,1e6", help="edge-version counts, e.g. 1e5,1e6,1e7")
    p.add_argument(
        "--datasets", default="collegemsg", help="data sets whose task-template calls are timed ('' = none)"
    )
    add_reps(p)


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    scales = parse_scales(args.datasets, datasets=True) + parse_scales(args.scales)
    records = run(scales, args.reps, Path(args.work or default_work_dir()), progress)
    md = (
        f"Measured {stamp()}; "
        f"p50/p95 of {args.reps} reps after one warm-up (the warm-up, the first call on the store, "
        "builds the operator's cached indexes and is shown as *first call*; the store-wide believed-edge "
        "arrays are loaded before, in *cold_load*); peak RSS of the process that ran each scale.\n\n"
        + table(records)
        + "\n\n"
        + template_summary(records)
    )
    return BenchResult(records, md, ("ops-bench", "Operators: `tgms bench ops`"))
