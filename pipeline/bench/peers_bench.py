"""``tgms bench peers``: TGMS side by side with Raphtory, in the same process and run (a benchmark).

Case: the five δ-motif counts (``count_temporal_motifs`` for each of the five motifs) at δ = 1 day over
the whole of CollegeMsg, against Raphtory's ``global_temporal_three_node_motif`` at the same δ (all 40
Paranjape 3-node counts; it has no call for one motif). Both are timed p50/p95 over ``reps`` runs after a
warm-up, both on two threads' worth of machine; TGMS's motif selection cache is dropped before every run, so
its kernels and the selection's indexes are timed cold, as Raphtory's are. The counts both compute (cyclic
and acyclic triangle, 2-node ping-pong) must be equal: ``equal`` says so and the command fails otherwise.
Raphtory is an optional extra (``pip install -e .[peers]``); without it the command exits 2.

    tgms bench peers --json peers.json [--update-docs]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from tgms.engine.api import OpContext, load_all, run_call
from tgms.pipeline.bench.report import BenchResult, add_reps, stamp
from tgms.pipeline.latency.stores import bench_store, default_work_dir
from tgms.pipeline.table import Table, to_markdown

MOTIFS = ("M_triangle_cyclic", "M_triangle_acyclic_1", "M_2node_pingpong", "M_star_out_3", "M_path_3")
DAY = 86_400_000_000
#: our motif -> its index in Raphtory's 40 global 3-node counts (checked against brute force on CollegeMsg)
RAPHTORY_INDEX = {"M_triangle_cyclic": 35, "M_triangle_acyclic_1": 38, "M_2node_pingpong": 29}


def timed(
    fn: Callable[[], Any], reps: int, before: Callable[[], None] = lambda: None
) -> tuple[list[float], Any]:
    before()
    out = fn()  # warm-up
    times = []
    for _ in range(reps):
        before()
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times, out


def _stats(times: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(float(np.percentile(times, 95)), 2)}


def drop_motif_cache(ctx: OpContext) -> None:
    """Evict the motif selections (with their indexes and counts) so kernels are timed cold."""
    ctx.drop_cached(keep=lambda k: not (k and k[0] == "motif_selection"))


def raphtory_version() -> str | None:
    try:
        import raphtory
    except ImportError:
        return None
    return str(raphtory.version())  # the typed form of raphtory.__version__


def run(work: Path, reps: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    load_all()
    store = bench_store(work, "collegemsg", progress)
    try:
        ctx = OpContext(store)
        e = ctx.edges(None)
        n = e.n
        win = {"t_a": int(e.vt_s[0]), "t_b": int(e.vt_s[-1]) + 1}

        def count(motif: str) -> int:
            args = {"motif": motif, "delta": DAY, "window": win}
            return int(run_call(ctx, "count_temporal_motifs", args).envelope["payload"]["count"])

        records: list[dict[str, Any]] = []
        progress("tgms: five motif counts")
        times, ours = timed(lambda: [count(m) for m in MOTIFS], reps, lambda: drop_motif_cache(ctx))
        five = dict(zip(MOTIFS, ours, strict=True))
        rec: dict[str, Any] = {
            "op": "count_temporal_motifs",
            "case": "collegemsg/five_motifs_delta_1d",
            "scale": n,
            **_stats(times),
            "counts": five,
        }
        for m in MOTIFS:
            t, c = timed(partial(count, m), reps, lambda: drop_motif_cache(ctx))
            records.append({"op": "count_temporal_motifs", "case": f"collegemsg/{m}_delta_1d", "scale": n,
                            **_stats(t), "count": c})  # fmt: skip
        version = raphtory_version()
        if version is not None:
            progress(f"raphtory {version}: global_temporal_three_node_motif")
            rec.update(_raphtory(e, reps, five))
            rec["peer"] = f"raphtory {version} global_temporal_three_node_motif"
            rec["ratio"] = round(rec["p50_ms"] / rec["peer_ms"], 3)
        records.insert(0, rec)
        return records
    finally:
        store.close()


def _raphtory(e: Any, reps: int, ours: dict[str, int]) -> dict[str, Any]:
    import raphtory
    from raphtory import algorithms

    t0 = time.perf_counter()
    g = raphtory.Graph()
    # our scan order (vt_s, eid, vid) is the insertion order: Raphtory breaks equal times by it
    for s, d, t in zip(e.src.tolist(), e.dst.tolist(), (e.vt_s // 1_000_000).tolist(), strict=True):
        g.add_edge(t, s, d)
    build_ms = (time.perf_counter() - t0) * 1e3
    times, counts = timed(lambda: algorithms.global_temporal_three_node_motif(g, DAY // 1_000_000), reps)
    theirs = {m: int(counts[i]) for m, i in RAPHTORY_INDEX.items()}
    peer = _stats(times)
    return {
        "peer_ms": peer["p50_ms"],
        "peer_p95_ms": peer["p95_ms"],
        "peer_build_ms": round(build_ms, 1),
        "peer_counts": theirs,
        "equal": all(ours[m] == c for m, c in theirs.items()),
    }


def table(records: list[dict[str, Any]]) -> str:
    header = ["case", "events", "p50 ms", "p95 ms", "peer", "peer p50 ms", "ours / peer", "equal counts"]
    rows = [
        [r["case"], f"{r['scale']:,}", r["p50_ms"], r["p95_ms"], str(r.get("peer", "")), r.get("peer_ms"),
         r.get("ratio", ""), str(r.get("equal", ""))]
        for r in records
    ]  # fmt: skip
    return to_markdown(Table.of(header, "lrrrlrrl", rows, none=""))


HELP = "TGMS's five motif counts on CollegeMsg side by side with Raphtory (the `peers` extra)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_reps(p)


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    records = run(Path(args.work or default_work_dir()), args.reps, progress)
    md = (
        f"Measured {stamp()}; p50/p95 of {args.reps} reps after one warm-up, both systems in the same "
        "process.\n\n" + table(records)
    )
    head = records[0]
    section = ("peers-bench", "Side by side with Raphtory: `tgms bench peers`")
    if "peer" not in head:
        md += "\n\nraphtory is not installed (pip install -e '.[peers]'): no peer was timed"
        return BenchResult(records, md, section, exit_code=2)
    if not head["equal"]:
        md += f"\n\ncounts differ: ours {head['counts']} vs raphtory {head['peer_counts']}"
        return BenchResult(records, md, section, exit_code=1)
    return BenchResult(records, md, section)
