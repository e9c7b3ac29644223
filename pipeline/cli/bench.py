"""Benchmarks (not tests): ``tgms bench ops`` times the operators on synthetic stores of several scales
and writes the table into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from pipeline.cli._common import progress

HELP = "benchmarks: `tgms bench ops --scales 1e5,1e6,1e7`"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=["ops"], help="which benchmark")
    p.add_argument(
        "--scales", default="1e5,1e6", help="comma-separated edge-version counts (e.g. 1e5,1e6,1e7)"
    )
    p.add_argument("--reps", type=int, default=7, help="timed repetitions after one warm-up")
    p.add_argument("--work", default="bench-out", help="where synthetic stores are built and kept")
    p.add_argument("--json", metavar="OUT", help="write one JSON record per measured case")
    p.add_argument("--docs", default="docs/benchmarks.md", help="Markdown file to update ('' = none)")


def run(args: argparse.Namespace) -> int:
    from pipeline.bench.ops_bench import run as run_bench
    from pipeline.bench.ops_bench import table

    scales = [int(float(s)) for s in args.scales.split(",")]
    records = run_bench(scales, args.reps, Path(args.work), progress)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    md = (
        f"Measured {stamp} on {platform.node()} ({os.cpu_count()} cores, "
        f"Python {platform.python_version()}); "
        f"p50/p95 of {args.reps} reps after one warm-up (the warm-up, the first call on the store, "
        "builds the operator's cached indexes and is shown as *first call*; the store-wide believed-edge "
        "arrays are loaded before, in *cold_load*); peak RSS of the process that ran each scale.\n\n"
        + table(records)
    )
    print(md)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2) + "\n")
    if args.docs:
        from pipeline.bench.docs import update_section

        update_section(Path(args.docs), "ops-bench", "Operators: `tgms bench ops`", md)
    return 0
