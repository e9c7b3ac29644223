"""``tgms bench motifs``: CollegeMsg five counts at δ = 1 day, node-filtered counts on a synthetic
10^6-event store, and the cost model's estimate next to every measured time (a benchmark).

Every timing is a full operator call through the envelope (validation, cost estimate, kernel, payload),
p50 of ``--reps`` runs after one warm-up, with the store's edge arrays already loaded (a cached
``OpContext``) but the motif selection cache dropped before every run, so the kernels and the selection's
indexes are timed cold ("five counts" builds one selection and runs the five motifs on it, as a planner
asking for all five would). With ``raphtory`` installed, its ``global_temporal_three_node_motif`` (all 40
Paranjape counts, threads = all cores) is timed on the same events. The synthetic store (1000 nodes) is
built in a temporary directory.

    tgms bench motifs [--reps 7] [--n-events 1e6] [--filters 10,100] [--skip-synthetic] [--json OUT]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from tgms.engine.api import (
    OpContext,
    build_store,
    get_operator,
    load_all,
    motif_selection,
    parse_args,
    run_call,
)
from tgms.pipeline.bench import peers_bench
from tgms.pipeline.bench.report import BenchResult, add_reps
from tgms.pipeline.latency.stores import bench_store, default_work_dir, one_scale
from tgms.pipeline.table import Table, to_markdown

HELP = "motif counts on CollegeMsg and node-filtered counts on a synthetic store, with cost estimates"

MOTIFS = ("M_triangle_cyclic", "M_triangle_acyclic_1", "M_2node_pingpong", "M_star_out_3", "M_path_3")
DAY = 86_400 * 1_000_000
HOUR = 3_600 * 1_000_000


def cold(ctx: OpContext) -> None:
    peers_bench.drop_motif_cache(ctx)


def p50(fn: Callable[[], Any], reps: int, before: Callable[[], None] = lambda: None) -> tuple[float, Any]:
    """(median seconds, last result) of ``reps`` timed runs after a warm-up (``peers_bench.timed``)."""
    times, out = peers_bench.timed(fn, reps, before)
    return statistics.median(times) / 1e3, out


def count_call(ctx: OpContext, args: dict[str, Any]) -> tuple[int, float]:
    """(count, the cost model's estimate); the budget is not enforced so refused calls are timed too."""
    res = run_call(ctx, "count_temporal_motifs", args, check_cost=False)
    return res.envelope["payload"]["count"], res.estimate_s


def whole(ctx: OpContext) -> dict[str, int]:
    e = ctx.edges(None)
    return {"t_a": int(e.vt_s[0]), "t_b": int(e.vt_s[-1]) + 1}


def bench_collegemsg(work: Path, reps: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    store = bench_store(work, "collegemsg", progress)
    ctx = OpContext(store)
    win = whole(ctx)
    out = []
    for motif in MOTIFS:
        args = {"motif": motif, "delta": DAY, "window": win}
        s, (count, est) = p50(partial(count_call, ctx, args), reps, lambda: cold(ctx))
        out.append(
            {"case": "collegemsg", "motif": motif, "count": count, "p50_ms": s * 1e3, "est_ms": est * 1e3}
        )

    def five() -> list[int]:
        return [count_call(ctx, {"motif": m, "delta": DAY, "window": win})[0] for m in MOTIFS]

    s, _ = p50(five, reps, lambda: cold(ctx))
    out.append(
        {"case": "collegemsg", "motif": "five counts", "count": None, "p50_ms": s * 1e3, "est_ms": None}
    )
    find = {"motif": "M_path_3", "delta": DAY, "window": win, "limit": 100}
    s, _ = p50(lambda: run_call(ctx, "find_temporal_motif_instances", find), reps, lambda: cold(ctx))
    out.append({"case": "collegemsg", "motif": "find M_path_3 page 1", "count": None, "p50_ms": s * 1e3,
                "est_ms": None})  # fmt: skip
    out += bench_raphtory(ctx, reps)
    store.close()
    return out


def bench_raphtory(ctx: OpContext, reps: int) -> list[dict[str, Any]]:
    try:
        import raphtory
        from raphtory import algorithms
    except ImportError:
        return []
    e = ctx.edges(None)
    g = raphtory.Graph()
    for s, d, t in zip(e.src.tolist(), e.dst.tolist(), (e.vt_s // 1_000_000).tolist(), strict=True):
        g.add_edge(t, s, d)  # our (vt_s, eid, vid) order: raphtory breaks equal times by insertion
    sec, counts = p50(lambda: algorithms.global_temporal_three_node_motif(g, 86_400), reps)
    three = [counts[i] for i in peers_bench.RAPHTORY_INDEX.values()]  # cyclic, acyclic_1, pingpong
    return [{"case": "collegemsg", "motif": "raphtory (40 counts)", "count": three, "p50_ms": sec * 1e3,
             "est_ms": None}]  # fmt: skip


def bench_synthetic(root: Path, reps: int, n_events: int, filters: list[int]) -> list[dict[str, Any]]:
    # 1000 nodes whatever the size (not the bench stores' n / 50): node filters s0 .. s<k-1> stay dense
    store = build_store("synthetic", root / "synthetic", events=n_events, nodes=1000, corrections=False)
    ctx = OpContext(store)
    win = whole(ctx)
    n = ctx.edges(None).n
    out = []
    for n_filter, motif, (delta, name) in itertools.product(filters, MOTIFS, ((HOUR, "1h"), (DAY, "1d"))):
        uids = [f"s{i}" for i in range(n_filter)]
        args = {"motif": motif, "delta": delta, "window": win, "node_filter": uids}
        s, (count, est) = p50(partial(count_call, ctx, args), reps, lambda: cold(ctx))
        sel = motif_selection(
            ctx, parse_args(get_operator("count_temporal_motifs").args, args, "count_temporal_motifs")
        )
        out.append({"case": f"syn{n} filter {n_filter} δ={name}", "motif": motif, "count": count,
                    "events": sel.n_events, "p50_ms": s * 1e3, "est_ms": est * 1e3})  # fmt: skip
    store.close()
    return out


def table(rows: list[dict[str, Any]]) -> str:
    header = ("case", "motif", "count", "events", "p50 ms", "estimate ms")
    cells = (
        [
            r["case"],
            r["motif"],
            r["count"],
            r.get("events") or "",
            f"{r['p50_ms']:.1f}",
            "" if r.get("est_ms") is None else f"{r['est_ms']:.1f}",
        ]
        for r in rows
    )
    return to_markdown(Table.of(header, "llllll", cells, none=""))


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_reps(p)
    p.add_argument("--n-events", default="1e6", help="events of the synthetic store")
    p.add_argument("--filters", default="10,100", help="node_filter sizes (uids s0 .. s<k-1>)")
    p.add_argument("--skip-synthetic", action="store_true", help="CollegeMsg only")


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    load_all()
    n_events = int(one_scale(args.n_events))
    filters = [int(one_scale(x)) for x in args.filters.split(",") if x.strip()]
    rows = bench_collegemsg(Path(args.work or default_work_dir()), args.reps, progress)
    if not args.skip_synthetic:
        with tempfile.TemporaryDirectory(prefix="tgms-bench-motifs-") as tmp:
            rows += bench_synthetic(Path(tmp), args.reps, n_events, filters)
    return BenchResult(rows, table(rows))
