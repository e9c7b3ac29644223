"""Metrics benchmark (not a test): graph_metric_timeseries with 100 buckets on synthetic stores.

Builds (once, cached under ``--work``) a synthetic store per scale
(``engine.ingest.synthetic.generate(n_events=N, n_nodes=max(1000, N // 50), seed=0)``, every frame through
``Store.ingest_events``), then for every metric over the full valid-time span in 100 buckets: one cold call
(which builds the cached per-belief-state index that metric needs), one warm-up, and ``--reps`` timed
calls through the envelope (``engine.operators.envelope.call``). Prints cold ms and p50/p95 ms.

    /work/venv/bin/python bench/bench_metrics.py --scales 1e5,1e6 --reps 7
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
from engine.operators.metrics import METRICS
from engine.store import Store
from pipeline.bench.ops_bench import build_store as ops_build_store

#: p50 targets (ms) of the 100-bucket case (pipeline/bench/ops_bench.py, edge_event_count)
TARGETS = {10**5: 144, 10**6: 157, 10**7: 1127}


def build_store(root: Path, n_events: int) -> Store:
    """The synthetic store of ``tgms bench ops`` (built once under ``root``, then reused)."""
    return ops_build_store(root, n_events, lambda m: print(m, flush=True))


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="1e5,1e6", help="comma-separated event counts, e.g. 1e5,1e6,1e7")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--work", type=Path, default=Path("/tmp/tgms-bench-metrics"))
    a = ap.parse_args(argv)
    print("| scale | case | cold ms | p50 ms | p95 ms | target p50 ms |\n|---:|---|---:|---:|---:|---:|")
    for scale in (int(float(s)) for s in a.scales.split(",")):
        store = build_store(a.work / f"syn-{scale}", scale)
        try:
            ctx = OpContext(store)
            e = ctx.edges(None)
            lo, hi = int(e.vt_s[0]), int(e.vt_s[-1]) + 1
            window, stride = {"t_a": lo, "t_b": hi}, -(-(hi - lo) // 100)
            cases: list[tuple[str, str, dict[str, Any]]] = [
                ("graph_metric_timeseries", m, {"metric": m, "window": window, "stride": stride})
                for m in METRICS
            ]
            cases.append(("burst_detection", "burst zscore global", {"target": "global", "window": window,
                                                                      "stride": stride}))  # fmt: skip
            for op, case, args in cases:
                cold, p50, p95 = timed(ctx, op, args, a.reps)
                target = TARGETS.get(scale, "") if case == "edge_event_count" else ""
                print(f"| {scale:,} | {case} | {cold:.1f} | {p50:.1f} | {p95:.1f} | {target} |", flush=True)
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
