"""Traversal benchmark (not a test): temporal_reachability and temporal_paths on a synthetic store.

Builds (once, cached under ``--work``) a synthetic store of ``--events`` events, then times each call
``--reps`` times after one warm-up call (which also builds the cached adjacency) and prints p50/p95 in ms.

    /work/venv/bin/python bench/bench_traversal.py --events 1000000 --reps 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.operators.context import OpContext
from engine.operators.envelope import call
from engine.store import Store
from pipeline.bench.ops_bench import build_store as ops_build_store


def build_store(root: Path, n_events: int) -> Store:
    """The synthetic store of ``tgms bench ops`` (built once under ``root``, then reused)."""
    return ops_build_store(root, n_events, lambda m: print(m, flush=True))


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
    hour = 3_600_000_000
    return [
        ("temporal_reachability", "reach out 10% window", {"src": top[0], "window": w10}),
        (
            "temporal_reachability",
            "reach both 10% window",
            {"src": top[0], "window": w10, "direction": "both"},
        ),
        ("temporal_reachability", "reach out full span", {"src": top[0], "window": {"t_a": lo, "t_b": hi}}),
        (
            "temporal_reachability",
            "reach out 1% window, delta 1h",
            {"src": top[0], "window": w1, "delta_max_wait": hour},
        ),
        (
            "temporal_reachability",
            "reach out 10% window, delta 1h",
            {"src": top[0], "window": w10, "delta_max_wait": hour},
        ),
        ("temporal_paths", "paths 10% window (k 5, hops 4)", {"src": top[0], "dst": top[1], "window": w10}),
        (
            "temporal_paths",
            "paths 10% window (k 20, hops 6)",
            {"src": top[0], "dst": top[1], "window": w10, "k": 20, "max_hops": 6},
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=10**6)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--work", type=Path, default=Path("/tmp/tgms-bench-traversal"))
    opts = ap.parse_args()
    store = build_store(opts.work / f"syn-{opts.events}", opts.events)
    try:
        ctx = OpContext(store)
        t0 = time.perf_counter()
        n = ctx.edges(None).n
        print(f"{n:,} believed edge versions; cold load {1e3 * (time.perf_counter() - t0):.0f} ms")
        print("| case | rows | warm-up ms | p50 ms | p95 ms | estimate s |\n|---|---:|---:|---:|---:|---:|")
        for op, name, args in cases(ctx):
            t0 = time.perf_counter()
            env = call(ctx, op, args, check_cost=False)
            warm = (time.perf_counter() - t0) * 1e3
            times = []
            for _ in range(opts.reps):
                t0 = time.perf_counter()
                call(ctx, op, args, check_cost=False)
                times.append((time.perf_counter() - t0) * 1e3)
            from engine.operators.cost import profile
            from engine.operators.registry import get_operator

            spec = get_operator(op)
            est = spec.cost(profile(ctx, None), spec.args.model_validate(args)).seconds
            p50, p95 = statistics.median(times), float(np.percentile(times, 95))
            rows = env["payload"]["rows_total"]
            print(f"| {name} | {rows} | {warm:.1f} | {p50:.1f} | {p95:.1f} | {est:.3f} |")
    finally:
        store.close()


if __name__ == "__main__":
    main()
