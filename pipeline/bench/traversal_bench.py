"""``tgms bench traversal``: temporal_reachability and temporal_paths on a synthetic store (a benchmark).

On the bench store of ``--scale`` (:mod:`pipeline.latency.stores`), each call is timed ``--reps`` times
after one warm-up call (which also builds the cached adjacency); prints p50/p95 in ms next to the cost
model's estimate.

    tgms bench traversal --scale 1e6 --reps 7
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tgms.engine.api import OpContext, call, get_operator, load_all, profile
from tgms.pipeline.bench.report import BenchResult, add_reps
from tgms.pipeline.latency.stores import bench_store, default_work_dir, one_scale
from tgms.pipeline.table import Table, to_markdown

HELP = "temporal_reachability and temporal_paths cases on a synthetic store"
HOUR = 3_600_000_000


def cases(ctx: OpContext) -> list[tuple[str, str, dict[str, Any]]]:
    e = ctx.edges(None)
    uids = ctx.uids()
    deg = np.bincount(np.concatenate([e.src, e.dst]))
    top = [uids[i] for i in np.argsort(-deg)[:2].tolist()]
    lo, hi = int(e.vt_s[0]), int(e.vt_s[-1]) + 1
    span = hi - lo
    mid = lo + span // 2
    w10 = {"t_a": mid - span // 20, "t_b": mid + span // 20}
    w1 = {"t_a": mid - span // 200, "t_b": mid + span // 200}
    reach = "temporal_reachability"
    return [
        (reach, "reach out 10% window", {"src": top[0], "window": w10}),
        (reach, "reach both 10% window", {"src": top[0], "window": w10, "direction": "both"}),
        (reach, "reach out full span", {"src": top[0], "window": {"t_a": lo, "t_b": hi}}),
        (reach, "reach out 1% window, delta 1h", {"src": top[0], "window": w1, "delta_max_wait": HOUR}),
        (reach, "reach out 10% window, delta 1h", {"src": top[0], "window": w10, "delta_max_wait": HOUR}),
        ("temporal_paths", "paths 10% window (k 5, hops 4)", {"src": top[0], "dst": top[1], "window": w10}),
        (
            "temporal_paths",
            "paths 10% window (k 20, hops 6)",
            {"src": top[0], "dst": top[1], "window": w10, "k": 20, "max_hops": 6},
        ),
    ]


def measure(scale: int, work: Path, reps: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    load_all()
    out = []
    with bench_store(work, scale, progress) as store:
        ctx = OpContext(store)
        t0 = time.perf_counter()
        n = ctx.edges(None).n
        progress(f"{n:,} believed edge versions; cold load {1e3 * (time.perf_counter() - t0):.0f} ms")
        for op, name, args in cases(ctx):
            t0 = time.perf_counter()
            env = call(ctx, op, args, check_cost=False)
            warm = (time.perf_counter() - t0) * 1e3
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                call(ctx, op, args, check_cost=False)
                times.append((time.perf_counter() - t0) * 1e3)
            spec = get_operator(op)
            est = spec.cost(profile(ctx, None), spec.args.model_validate(args)).seconds
            out.append(
                {
                    "scale": scale,
                    "case": name,
                    "rows": env["payload"]["rows_total"],
                    "warm_up_ms": round(warm, 1),
                    "p50_ms": round(statistics.median(times), 1),
                    "p95_ms": round(float(np.percentile(times, 95)), 1),
                    "estimate_s": round(est, 3),
                }
            )
    return out


def table(records: list[dict[str, Any]]) -> str:
    keys = ("case", "rows", "warm_up_ms", "p50_ms", "p95_ms", "estimate_s")
    header = ("case", "rows", "warm-up ms", "p50 ms", "p95 ms", "estimate s")
    return to_markdown(Table.of(header, "lrrrrr", ([r[k] for k in keys] for r in records), none=""))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scale", default="1e6", help="synthetic event count (default 1e6)")
    add_reps(p)


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    records = measure(int(one_scale(args.scale)), Path(args.work or default_work_dir()), args.reps, progress)
    return BenchResult(records, table(records))
