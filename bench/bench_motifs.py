"""Motif benchmark (not a test): CollegeMsg five counts at δ = 1 day, node-filtered counts on a synthetic
10^6-event store, and the cost model's estimate next to every measured time.

Every timing is a full operator call through the envelope (validation, cost estimate, kernel, payload),
p50 of ``--reps`` runs after one warm-up, with the store's edge arrays already loaded (a cached
``OpContext``) but the motif selection cache dropped before every run, so the kernels and the selection's
indexes are timed cold ("five counts" builds one selection and runs the five motifs on it, as a planner
asking for all five would). With ``raphtory`` installed, its ``global_temporal_three_node_motif`` (all 40
Paranjape counts, threads = all cores) is timed on the same events.

    python bench/bench_motifs.py [--reps 7] [--n-events 1000000] [--filters 10,100] [--json OUT]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.operators.context import OpContext  # noqa: E402
from engine.operators.envelope import run_call  # noqa: E402
from engine.operators.motifs import CountMotifsArgs, selection  # noqa: E402
from engine.store import Store  # noqa: E402
from pipeline.bench import peers_bench  # noqa: E402

MOTIFS = ("M_triangle_cyclic", "M_triangle_acyclic_1", "M_2node_pingpong", "M_star_out_3", "M_path_3")
DAY = 86_400 * 1_000_000
HOUR = 3_600 * 1_000_000


def drop_motif_cache(ctx: OpContext) -> None:
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


def bench_collegemsg(root: Path, reps: int) -> list[dict[str, Any]]:
    from engine.ingest.snap import load_dataset

    store = Store.create(root / "collegemsg", "duckdb")
    store.ingest_events(load_dataset("collegemsg"))
    ctx = OpContext(store)
    win = whole(ctx)
    out = []
    for motif in MOTIFS:
        args = {"motif": motif, "delta": DAY, "window": win}
        s, (count, est) = p50(lambda a=args: count_call(ctx, a), reps, lambda: drop_motif_cache(ctx))
        out.append(
            {"case": "collegemsg", "motif": motif, "count": count, "p50_ms": s * 1e3, "est_ms": est * 1e3}
        )

    def five() -> list[int]:
        return [count_call(ctx, {"motif": m, "delta": DAY, "window": win})[0] for m in MOTIFS]

    s, _ = p50(five, reps, lambda: drop_motif_cache(ctx))
    out.append(
        {"case": "collegemsg", "motif": "five counts", "count": None, "p50_ms": s * 1e3, "est_ms": None}
    )
    find = {"motif": "M_path_3", "delta": DAY, "window": win, "limit": 100}
    s, _ = p50(
        lambda: run_call(ctx, "find_temporal_motif_instances", find), reps, lambda: drop_motif_cache(ctx)
    )
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
    from engine.ingest.synthetic import generate

    ds = generate(n_events=n_events, seed=0)
    store = Store.create(root / "synthetic", "duckdb")
    for frame in ds.frames:
        store.ingest_events(frame)
    ctx = OpContext(store)
    win = whole(ctx)
    n = ctx.edges(None).n
    out = []
    for n_filter, motif, (delta, name) in itertools.product(filters, MOTIFS, ((HOUR, "1h"), (DAY, "1d"))):
        uids = [f"s{i}" for i in range(n_filter)]
        args = {"motif": motif, "delta": delta, "window": win, "node_filter": uids}
        s, (count, est) = p50(lambda a=args: count_call(ctx, a), reps, lambda: drop_motif_cache(ctx))
        sel = selection(ctx, CountMotifsArgs.model_validate(args))
        out.append({"case": f"syn{n} filter {n_filter} δ={name}", "motif": motif, "count": count,
                    "events": sel.n_events, "p50_ms": s * 1e3, "est_ms": est * 1e3})  # fmt: skip
    store.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--n-events", type=int, default=10**6)
    ap.add_argument("--filters", default="10,100", help="node_filter sizes (uids s0 .. s<k-1>)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--skip-synthetic", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = bench_collegemsg(Path(tmp), a.reps)
        if not a.skip_synthetic:
            rows += bench_synthetic(Path(tmp), a.reps, a.n_events, [int(x) for x in a.filters.split(",")])
    print("| case | motif | count | events | p50 ms | estimate ms |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        est = f"{r['est_ms']:.1f}" if r.get("est_ms") is not None else ""
        print(f"| {r['case']} | {r['motif']} | {r['count'] if r['count'] is not None else ''} | "
              f"{r.get('events') or ''} | {r['p50_ms']:.1f} | {est} |")  # fmt: skip
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
