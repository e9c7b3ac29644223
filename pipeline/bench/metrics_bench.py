"""``tgms bench metrics``: graph_metric_timeseries with 100 buckets on synthetic stores (a benchmark).

On the bench store of each scale (:mod:`pipeline.latency.stores`), for every metric over the full
valid-time span in 100 buckets (and a global z-score burst detection): one cold call (which builds the
cached per-belief-state index that metric needs), one warm-up, and ``--reps`` timed calls through the
envelope. Prints cold ms and p50/p95 ms.

    tgms bench metrics --scales 1e5,1e6 --reps 7
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tgms.engine.api import METRICS, OpContext, call, load_all
from tgms.pipeline.bench.report import BenchResult, add_reps
from tgms.pipeline.latency.operators import TARGETS as OPS_TARGETS
from tgms.pipeline.latency.stores import bench_store, default_work_dir, parse_scales
from tgms.pipeline.table import Table, to_markdown

HELP = "graph_metric_timeseries (every metric) and burst_detection, 100 buckets, on synthetic stores"
#: the ops benchmark's case whose targets apply to the edge_event_count row
TARGET_CASE = "graph_metric_timeseries/100_buckets"


def timed(ctx: OpContext, op: str, args: dict[str, Any], reps: int) -> tuple[float, float, float]:
    """(cold ms, p50 ms, p95 ms)."""
    t0 = time.perf_counter()
    call(ctx, op, args, check_cost=False)
    cold = (time.perf_counter() - t0) * 1e3
    call(ctx, op, args, check_cost=False)  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        call(ctx, op, args, check_cost=False)
        times.append((time.perf_counter() - t0) * 1e3)
    return cold, statistics.median(times), float(np.percentile(times, 95))


def measure(scale: int, work: Path, reps: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    load_all()
    out = []
    with bench_store(work, scale, progress) as store:
        ctx = OpContext(store)
        e = ctx.edges(None)
        lo, hi = int(e.vt_s[0]), int(e.vt_s[-1]) + 1
        window, stride = {"t_a": lo, "t_b": hi}, -(-(hi - lo) // 100)
        cases: list[tuple[str, str, dict[str, Any]]] = [
            ("graph_metric_timeseries", m, {"metric": m, "window": window, "stride": stride}) for m in METRICS
        ]
        burst = {"target": "global", "window": window, "stride": stride}
        cases.append(("burst_detection", "burst zscore global", burst))
        for op, case, args in cases:
            progress(f"  {scale:>10,}  {case}")
            cold, p50, p95 = timed(ctx, op, args, reps)
            rec: dict[str, Any] = {"scale": scale, "case": case, "cold_ms": round(cold, 1)}
            rec |= {"p50_ms": round(p50, 1), "p95_ms": round(p95, 1)}
            if case == "edge_event_count" and (TARGET_CASE, scale) in OPS_TARGETS:
                rec["target_ms"] = OPS_TARGETS[(TARGET_CASE, scale)]
            out.append(rec)
    return out


def table(records: list[dict[str, Any]]) -> str:
    header = ("scale", "case", "cold ms", "p50 ms", "p95 ms", "target p50 ms")
    keys = ("cold_ms", "p50_ms", "p95_ms", "target_ms")
    rows = ([f"{r['scale']:,}", r["case"], *map(r.get, keys)] for r in records)
    return to_markdown(Table.of(header, "rlrrrr", rows, none=""))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scales", default="1e5,1e6", help="comma-separated event counts, e.g. 1e5,1e6,1e7")
    add_reps(p)


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    work = Path(args.work or default_work_dir())
    records = [r for s in parse_scales(args.scales) for r in measure(int(s), work, args.reps, progress)]
    return BenchResult(records, table(records))
