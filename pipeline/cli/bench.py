"""Benchmarks (not tests): ``tgms bench ops`` times the operators on synthetic stores of several scales
and the task-template calls on CollegeMsg; ``tgms bench peers`` times TGMS and Raphtory side by side.
Both print a table and write it into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from engine.errors import InvalidArgError
from pipeline.cli._common import progress
from pipeline.cli.inputs import count_list, whole

MAX_SCALE = 10**8  # edge versions: ten times the largest scale the benchmark is built for
REAL_DATASETS = ("collegemsg", "bitcoin-otc", "email-eu")


def _datasets(text: str) -> list[str]:
    names = [d.strip() for d in text.split(",") if d.strip()]
    for name in names:
        if name not in REAL_DATASETS:
            raise InvalidArgError(
                f"--datasets: unknown data set {name!r} (one of {', '.join(REAL_DATASETS)})", value=name
            )
    return names


HELP = "benchmarks: `tgms bench ops --scales 1e5,1e6,1e7`, `tgms bench peers` (Raphtory)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=["ops", "peers"], help="which benchmark")
    p.add_argument(
        "--scales",
        type=count_list("--scales", 1, MAX_SCALE),
        default="1e5,1e6",
        help="comma-separated edge-version counts (e.g. 1e5,1e6,1e7)",
    )
    p.add_argument(
        "--datasets",
        type=_datasets,
        default="collegemsg",
        help="real datasets whose task-template calls are timed (20 ms each; '' = none)",
    )
    p.add_argument(
        "--reps", type=whole("--reps", 1, 1000), default=7, help="timed repetitions after one warm-up"
    )
    p.add_argument("--work", default="bench-out", help="where synthetic stores are built and kept")
    p.add_argument("--json", metavar="OUT", help="write one JSON record per measured case")
    p.add_argument("--docs", default="docs/benchmarks.md", help="Markdown file to update ('' = none)")


def run(args: argparse.Namespace) -> int:
    if args.what == "peers":
        return _peers(args)
    from pipeline.bench.ops_bench import run as run_bench
    from pipeline.bench.ops_bench import table, template_summary

    scales: list[int | str] = list(args.datasets)
    scales += args.scales
    records = run_bench(scales, args.reps, Path(args.work), progress)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    md = (
        f"Measured {stamp} on {platform.node()} ({os.cpu_count()} cores, "
        f"Python {platform.python_version()}); "
        f"p50/p95 of {args.reps} reps after one warm-up (the warm-up, the first call on the store, "
        "builds the operator's cached indexes and is shown as *first call*; the store-wide believed-edge "
        "arrays are loaded before, in *cold_load*); peak RSS of the process that ran each scale.\n\n"
        + table(records)
        + "\n\n"
        + template_summary(records)
    )
    print(md)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2) + "\n")
    if args.docs:
        from pipeline.bench.docs import update_section

        update_section(Path(args.docs), "ops-bench", "Operators: `tgms bench ops`", md)
    return 0


def _peers(args: argparse.Namespace) -> int:
    from pipeline.bench import peers_bench

    records = peers_bench.run(Path(args.work), args.reps, progress)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    md = (
        f"Measured {stamp} on {platform.node()} ({os.cpu_count()} cores, "
        f"Python {platform.python_version()}); p50/p95 of {args.reps} reps after one warm-up, both systems "
        "in the same process.\n\n" + peers_bench.table(records)
    )
    print(md)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2) + "\n")
    head = records[0]
    if "peer" not in head:
        print("raphtory is not installed (pip install -e '.[peers]'): no peer was timed", flush=True)
        return 2
    if args.docs:
        from pipeline.bench.docs import update_section

        update_section(Path(args.docs), "peers-bench", "Side by side with Raphtory: `tgms bench peers`", md)
    if not head["equal"]:
        print(f"counts differ: ours {head['counts']} vs raphtory {head['peer_counts']}", flush=True)
        return 1
    return 0
