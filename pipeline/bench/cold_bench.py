"""``tgms bench cold``: open a store in a fresh process and time its first query (a benchmark).

For each operator case, ``--runs`` fresh interpreters each open the store read-only (the event log is
verified) and make one call with the guard on, as a user's first command would; the Python import time is
reported apart. Prints the median and max per case. The store is a bench store of ``--scale`` (built
once under ``--work``) unless ``--store DIR`` names one.

    tgms bench cold --scale 1e7 [--runs 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tgms.engine.api import OpContext, Store, load_all
from tgms.pipeline import inputs
from tgms.pipeline.bench.report import BenchResult
from tgms.pipeline.latency.operators import typical_calls
from tgms.pipeline.latency.stores import bench_store, default_work_dir, one_scale, store_dir
from tgms.pipeline.table import Table, to_markdown

HELP = "open + first query of a store in fresh processes"

#: what each fresh interpreter runs: import, open read-only, one guarded call (timings as JSON)
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.registry import load_all
from tgms.engine.store import Store
load_all()
t1 = time.perf_counter()
store = Store.open(sys.argv[1], read_only=True)
t2 = time.perf_counter()
call(OpContext(store), sys.argv[2], json.loads(sys.argv[3]))
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_s": t3 - t2}))
"""

CASES = (
    "entity_history/one_node",
    "snapshot_subgraph/2hop_busy_seed",
    "diff_snapshots/global",
    "graph_metric_timeseries/100_buckets",
    "temporal_reachability/10pct_window",
)


def case_args(root: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """The typical calls' arguments, drawn once in this process (the children only open and call)."""
    load_all()
    with Store.open(root, read_only=True) as store:
        return {case: (op, args) for op, case, args in typical_calls(OpContext(store)) if case in CASES}


def measure(root: Path, runs: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    env = {**os.environ, "NUMPY_MADVISE_HUGEPAGE": "0"}
    calls = case_args(root)
    out = []
    for case in CASES:
        op, args = calls[case]
        timings = []
        for i in range(runs):
            progress(f"{case} run {i + 1}/{runs}")
            res = subprocess.run(
                [sys.executable, "-c", CHILD, str(root), op, json.dumps(args)],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            timings.append(json.loads(res.stdout.strip().splitlines()[-1]))
        total = [r["open_s"] + r["first_s"] for r in timings]
        out.append(
            {
                "case": case,
                "runs": timings,
                "open_plus_first_s_median": round(statistics.median(total), 3),
                "open_plus_first_s_max": round(max(total), 3),
                "import_s_median": round(statistics.median(r["import_s"] for r in timings), 3),
            }
        )
    return out


def table(records: list[dict[str, Any]]) -> str:
    header = ("first call (fresh process)", "open s", "first call s", "open + first s", "max", "import s")
    rows = (
        [
            r["case"],
            f"{statistics.median(x['open_s'] for x in r['runs']):.2f}",
            f"{statistics.median(x['first_s'] for x in r['runs']):.2f}",
            f"{r['open_plus_first_s_median']:.2f}",
            f"{r['open_plus_first_s_max']:.2f}",
            f"{r['import_s_median']:.2f}",
        ]
        for r in records
    )
    return to_markdown(Table.of(header, "lrrrrr", rows, none=""))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", default="1e7", help="synthetic bench store to open (default 1e7)")
    p.add_argument("--store", type=Path, metavar="DIR", help="open this store instead of a bench store")
    inputs.add_whole(p, "--runs", 1, 1000, default=3, help="fresh processes per case")


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    root = args.store
    if root is None:
        scale = one_scale(args.scale)
        work = Path(args.work or default_work_dir())
        bench_store(work, scale, progress).close()
        root = store_dir(work, scale)
    records = measure(Path(root), args.runs, progress)
    return BenchResult(records, table(records))
