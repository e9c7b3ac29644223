"""Operator latency, measured: every typical call of the thirteen operators on synthetic stores of several
scales, and the task templates' calls on a real data set, each warmed up once and timed ``reps`` times
(p50, p95, the first call, the target where one applies, peak RSS of the process that ran the scale).

Used by the campaign's operator experiment (``experiment.ops_bench``, §5.6) and by ``tgms bench ops``
(:mod:`pipeline.bench.ops_bench`); the stores are built once under a work directory
(:mod:`pipeline.latency.stores`).
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tgms.engine.api import (
    REGISTRY,
    ExecConfig,
    OpContext,
    TGMSError,
    build_plan,
    call,
    error_from_dict,
    execute,
    load_all,
)
from tgms.pipeline.latency.stores import Scale, bench_store, store_dir
from tgms.pipeline.table import Cell, Table, to_markdown

# p50 targets in ms by (case, scale): the paper's DuckDB p50s (40 threads) and our own goals
TARGETS: dict[tuple[str, int], float] = {
    ("snapshot_subgraph/2hop_busy_seed", 10**5): 13,
    ("snapshot_subgraph/2hop_busy_seed", 10**6): 99,
    ("snapshot_subgraph/2hop_busy_seed", 10**7): 272,
    ("diff_snapshots/global", 10**5): 23,
    ("diff_snapshots/global", 10**6): 163,
    ("diff_snapshots/global", 10**7): 485,
    ("graph_metric_timeseries/100_buckets", 10**5): 144,
    ("graph_metric_timeseries/100_buckets", 10**6): 157,
    ("graph_metric_timeseries/100_buckets", 10**7): 1127,
    ("temporal_reachability/10pct_window", 10**6): 100,
    ("count_temporal_motifs/node_filter", 10**6): 50,
    ("entity_history/one_node", 10**5): 5,
    ("entity_history/one_node", 10**6): 5,
    ("entity_history/one_node", 10**7): 10,
    ("aggregate_events/count_by_src_whole_span", 10**6): 100,
    ("list_events/filtered_1000_rows", 10**6): 100,
    ("next_event/reply_quantile_whole_span", 10**6): 100,
    ("next_event/sender_next_whole_span", 10**6): 100,
    ("next_event/every_reply_within_1h_whole_span", 10**6): 100,
    # issue 27: every new capability at <= 100 ms p50 at 10^6
    ("temporal_reachability/strict_depart_by_10pct_window", 10**6): 100,
    ("temporal_reachability/strict_depart_by_hops_10pct_window", 10**6): 100,
    ("temporal_reachability/strict_wait_1h_msg_10pct_window", 10**6): 100,
    ("longest_temporal_path/max_wait_1h_10pct_window", 10**6): 100,
    # temporal_reachability from a list of sources: five walks in one call (the fifth set's ve09)
    ("temporal_reachability/strict_5_sources_10pct_window", 10**6): 100,
    ("aggregate_events/messages_by_sender_and_instant_10pct_window", 10**6): 100,
    # issue 27, item 2: aggregation over a whole result (the rows a plan's compute reads past a page)
    ("compute/median_1e6_times", 10**6): 100,
    ("compute/group_by_src_median_1e6_rows", 10**6): 100,
    # the same median through a plan: list_events (a page of 10) -> compute over every row's vt_s
    ("plan/median_of_1e6_event_times", 10**6): 100,
    # compute rolling (issue 27, sy19): 2,000 buckets, a six-bucket sum per bucket, the top one
    ("plan/busiest_six_of_2000_buckets_rolling", 10**6): 100,
    # the per-sender count and median time of every event, grouped in the engine (not through a page)
    ("aggregate_events/count_and_median_t_by_src_whole_span", 10**6): 100,
    # an aggregate's own where (the third set's conditional counts)
    ("aggregate_events/count_and_heavy_count_by_src_whole_span", 10**6): 100,
    # the most edge versions in force at one instant per bucket, of every type and of one (sy45)
    ("graph_metric_timeseries/peak_100_buckets", 10**6): 100,
    ("graph_metric_timeseries/peak_follows_100_buckets", 10**6): 100,
    # the bucket key (the seventh set's 30-day blocks and weeks from day 0): per sender and 7-day span
    ("aggregate_events/count_by_src_and_week_bucket_whole_span", 10**6): 100,
    # each sender's median time between two messages (the seventh set's xb05, xs02: four compute steps)
    ("aggregate_events/median_gap_by_src_whole_span", 10**6): 100,
}

#: the "op" of a case that is a whole plan, run by the executor (its args are the plan)
PLAN = "(plan)"

#: the most elements the whole-result compute cases read (the store's first 10^6 edge versions)
BIG_INPUT = 10**6


TEMPLATE_TARGET_MS = 20.0  # every call the task templates make, on CollegeMsg


def typical_calls(ctx: OpContext) -> list[tuple[str, str, dict[str, Any]]]:
    """(op, case, args) for the store: a busy seed, a 10% window in the middle, 100 buckets, ..."""
    e = ctx.edges(None)
    uids = ctx.uids()
    deg = ctx.degrees(None)
    busy = uids[int(np.argmax(deg))]
    busiest5 = [uids[i] for i in np.argsort(-deg, kind="stable")[:5].tolist()]
    lo, hi = int(e.vt_s[0]), int(e.vt_s[-1]) + 1
    span = hi - lo
    mid = lo + span // 2
    w10 = {"t_a": mid - span // 20, "t_b": mid + span // 20}
    top = [uids[i] for i in np.argsort(-deg)[:50].tolist()]
    day = 86_400_000_000
    hour_lt_12 = {"field": "hour", "op": "lt", "value": 12}
    w_ge_2 = {"field": "prop.w", "op": "ge", "value": 2}
    msg = {"field": "rel_type", "op": "eq", "value": "msg"}
    reply = [{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}]
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("entity_history", "entity_history/one_node", {"uid": busy}),
        (
            "snapshot_subgraph",
            "snapshot_subgraph/2hop_busy_seed",
            {"seeds": [busy], "t_valid": mid, "hops": 2},
        ),
        ("diff_snapshots", "diff_snapshots/global", {"t1": lo + span // 4, "t2": lo + 3 * span // 4}),
        ("temporal_reachability", "temporal_reachability/10pct_window", {"src": busy, "window": w10}),
        ("temporal_paths", "temporal_paths/10pct_window", {"src": busy, "dst": top[1], "window": w10}),
        (
            "count_temporal_motifs",
            "count_temporal_motifs/node_filter",
            {
                "motif": "M_triangle_cyclic",
                "delta": day,
                "window": {"t_a": lo, "t_b": hi},
                "node_filter": top,
            },
        ),
        (
            "find_temporal_motif_instances",
            "find_temporal_motif_instances/10pct_window",
            {"motif": "M_2node_pingpong", "delta": 3_600_000_000, "window": w10},
        ),
        (
            "graph_metric_timeseries",
            "graph_metric_timeseries/100_buckets",
            {"metric": "edge_event_count", "window": {"t_a": lo, "t_b": hi}, "stride": -(-span // 100)},
        ),
        (
            "graph_metric_timeseries",
            "graph_metric_timeseries/peak_100_buckets",
            {"metric": "peak_active_edge_count", "window": {"t_a": lo, "t_b": hi}, "stride": -(-span // 100)},
        ),
        (
            "graph_metric_timeseries",
            "graph_metric_timeseries/peak_follows_100_buckets",
            {
                "metric": "peak_active_edge_count",
                "window": {"t_a": lo, "t_b": hi},
                "stride": -(-span // 100),
                "rel_types": ["follows"],
            },
        ),
        (
            "burst_detection",
            "burst_detection/100_buckets",
            {"target": "global", "window": {"t_a": lo, "t_b": hi}, "stride": -(-span // 100)},
        ),
        ("neighborhood_evolution", "neighborhood_evolution/busy", {"uid": busy, "t1": mid, "t2": hi}),
        (
            "co_active",
            "co_active/busy_during",
            {"a_spec": {"src": busy}, "b_spec": {"uid": busy, "window": w10}, "allen_relation": "during"},
        ),
        ("resolve_entities", "resolve_entities/uid", {"query": busy}),
        ("compute", "compute/sum_1000", {"fn": "sum", "input": list(range(1000))}),
        ("aggregate_events", "aggregate_events/count_by_src_whole_span", {"group_by": ["src"]}),
        (
            "aggregate_events",
            "aggregate_events/count_and_median_t_by_src_whole_span",
            {"group_by": ["src"], "aggregates": [{"fn": "count"}, {"fn": "median", "field": "t"}]},
        ),
        # the exact time as a group key (issue 27): one message to a list of recipients is one group; over
        # the whole span (here ~10^6 groups: the synthetic times are nearly all distinct) and a 10% window
        *(
            (
                "aggregate_events",
                f"aggregate_events/messages_by_sender_and_instant_{name}",
                {
                    "group_by": ["src", "t"],
                    "aggregates": [{"fn": "count_distinct", "field": "dst", "as": "recipients"}],
                    "having": [{"field": "recipients", "op": "ge", "value": 2}],
                    **window,
                },
            )
            for name, window in (("whole_span", {}), ("10pct_window", {"window": w10}))
        ),
        (
            "list_events",
            "list_events/filtered_1000_rows",
            {"window": w10, "rel_types": ["msg"], "where": [hour_lt_12], "limit": 1000},
        ),
        (
            "aggregate_events",
            "aggregate_events/node_distinct_partners_gaps",
            {
                "group_by": ["node"],
                "aggregates": [{"fn": "count_distinct", "field": "other"}, {"fn": "max_gap"}],
            },
        ),
        (
            "aggregate_events",
            "aggregate_events/prop_where_by_day",
            {"where": [{"field": "prop.w", "op": "ge", "value": 4}], "group_by": ["day"]},
        ),
        # the bucket key: per sender and 7-day span counted from the data's first day
        (
            "aggregate_events",
            "aggregate_events/count_by_src_and_week_bucket_whole_span",
            {"group_by": ["src", "bucket"], "bucket": {"width": 7 * day, "origin": lo}},
        ),
        (
            "aggregate_events",
            "aggregate_events/median_gap_by_src_whole_span",
            {"group_by": ["src"], "aggregates": [{"fn": "median_gap"}]},
        ),
        # an aggregate's own where (SQL's FILTER): per sender every message and the heavy ones, one call
        (
            "aggregate_events",
            "aggregate_events/count_and_heavy_count_by_src_whole_span",
            {
                "group_by": ["src"],
                "aggregates": [
                    {"fn": "count"},
                    {"fn": "count", "as": "heavy", "where": [{"field": "prop.w", "op": "ge", "value": 4}]},
                ],
            },
        ),
        ("belief_changes", "belief_changes/one_node", {"tt_from": 0, "tt_to": 2**62, "uid": busy}),
        (
            "belief_changes",
            "belief_changes/store_wide_corrections",
            {"tt_from": 0, "tt_to": 2**62, "kinds": ["corrected", "retracted", "closed"]},
        ),
        ("longest_temporal_path", "longest_temporal_path/10pct_window", {"window": w10, "max_hops": 20}),
        (
            "longest_temporal_path",
            "longest_temporal_path/simple_busy_0.1pct_window",
            {"window": {"t_a": mid, "t_b": mid + span // 1000}, "src": busy, "simple": True, "strict": False},
        ),
        (  # no cap reached: the search is exhaustive
            "longest_temporal_path",
            "longest_temporal_path/simple_busy_0.01pct_window_uncapped",
            {
                "window": {"t_a": mid, "t_b": mid + span // 10_000},
                "src": busy,
                "simple": True,
                "strict": False,
                "max_hops": 1000,
            },
        ),
        ("connected_components", "connected_components/whole_span", {"window": {"t_a": lo, "t_b": hi}}),
        ("connected_components", "connected_components/10pct_window", {"window": w10, "node": busy}),
        (
            "hop_distance",
            "hop_distance/whole_span_both",
            {"src": busy, "window": {"t_a": lo, "t_b": hi}, "direction": "both"},
        ),
        ("hop_distance", "hop_distance/10pct_window_out", {"src": busy, "window": w10}),
        # per-entity event sequences (issue 27): every reply's delay over the whole store, the same
        # sender's next message, and a busy account's replies to what it receives within a day
        (
            "next_event",
            "next_event/reply_quantile_whole_span",
            {"a": {}, "match": reply, "quantile": 0.9},
        ),
        ("next_event", "next_event/sender_next_whole_span", {"a": {}, "match": [{"a": "src", "b": "src"}]}),
        (
            "next_event",
            "next_event/busy_answers_within_a_day",
            {"a": {"dst": busy}, "b": {"src": busy}, "match": reply, "within": day, "unmatched": True},
        ),
        (  # every reply within an hour, a row each (the pairs of a temporal join; cm34)
            "next_event",
            "next_event/every_reply_within_1h_whole_span",
            {"a": {}, "match": reply, "within": 3_600_000_000, "all": True},
        ),
        # edge predicates in the graph operators (issue 27): the same calls, only the edges passing w >= 2
        (
            "temporal_reachability",
            "temporal_reachability/where_10pct_window",
            {"src": busy, "window": w10, "where": [w_ge_2]},
        ),
        (
            "temporal_paths",
            "temporal_paths/where_10pct_window",
            {"src": busy, "dst": top[1], "window": w10, "where": [w_ge_2]},
        ),
        (
            "count_temporal_motifs",
            "count_temporal_motifs/where_10pct_window",
            {"motif": "M_2node_pingpong", "delta": 3_600_000_000, "window": w10, "where": [w_ge_2]},
        ),
        (
            "longest_temporal_path",
            "longest_temporal_path/where_10pct_window",
            {"window": w10, "max_hops": 20, "where": [w_ge_2]},
        ),
        # strict hops, a first hop before depart_by, a maximum wait between hops (issue 27): "a message
        # the busy account sent on the window's first 1% passed on strictly later", the same messages
        # only within an hour, and the longest chain with at most an hour between messages
        (
            "temporal_reachability",
            "temporal_reachability/strict_depart_by_10pct_window",
            {"src": busy, "window": w10, "strict": True, "depart_by": w10["t_a"] + span // 100},
        ),
        (  # the same walk with each reached node's fewest hops (issue 27, sy51)
            "temporal_reachability",
            "temporal_reachability/strict_depart_by_hops_10pct_window",
            {"src": busy, "window": w10, "strict": True, "depart_by": w10["t_a"] + span // 100, "hops": True},
        ),
        (
            "temporal_reachability",
            "temporal_reachability/strict_wait_1h_msg_10pct_window",
            {"src": busy, "window": w10, "strict": True, "delta_max_wait": 3_600_000_000, "where": [msg]},
        ),
        (
            "longest_temporal_path",
            "longest_temporal_path/max_wait_1h_10pct_window",
            {"window": w10, "max_hops": 20, "delta_max_wait": 3_600_000_000},
        ),
        (  # a walk from each of the five busiest senders, strict (the fifth set's ve09: reach per source)
            "temporal_reachability",
            "temporal_reachability/strict_5_sources_10pct_window",
            {"src": busiest5, "window": w10, "strict": True},
        ),
    ]
    return [c for c in calls + whole_result_calls(ctx) if c[0] in REGISTRY]


def whole_result_calls(ctx: OpContext) -> list[tuple[str, str, dict[str, Any]]]:
    """compute over a whole result (issue 27, item 2): what a plan's compute step reads when it
    aggregates every edge version past a page — the median of 10^6 event times, and per sender the count
    and median time of 10^6 rows {src, t}. The input is a literal, so the call is the whole cost of the
    aggregation, envelope included (validation, canonical echo of the input, digests)."""
    e = ctx.edges(None)
    uids = ctx.uids()
    n = min(BIG_INPUT, len(e.vt_s))
    times = e.vt_s[:n].tolist()
    src = [uids[i] for i in e.src[:n].tolist()]
    rows = [{"src": s, "t": t} for s, t in zip(src, times, strict=True)]
    per_src = [{"fn": "count"}, {"fn": "median", "field": "t"}]
    return [
        ("compute", "compute/median_1e6_times", {"fn": "median", "input": times}),
        (
            "compute",
            "compute/group_by_src_median_1e6_rows",
            {"fn": "group", "input": rows, "by": "src", "aggregates": per_src},
        ),
    ]


def plan_calls(ctx: OpContext) -> list[tuple[str, str, dict[str, Any]]]:
    """Whole plans, timed as a plan runs (the executor, its default budgets): the median of every event's
    time read past a page of 10 (a full read of one field of 10^6 rows; issue 27, item 2), and the busiest
    run of six consecutive buckets of the whole span (2,000 buckets: hourly ones on a 12-week span; a
    rolling sum over the metric's rows, then the top one: sy19)."""
    e = ctx.edges(None)
    lo, hi = int(e.vt_s[0]), int(e.vt_s[-1]) + 1
    stride = -(-(hi - lo) // 2000)
    buckets = {"metric": "edge_event_count", "window": {"t_a": lo, "t_b": hi}, "stride": stride}
    busiest = {
        "plan_id": "busiest_six_buckets",
        "question": "the six consecutive buckets with the most events",
        "steps": [
            {
                "id": "s1",
                "op": "graph_metric_timeseries",
                "args": buckets,
            },
            {
                "id": "s2",
                "op": "compute",
                "args": {"fn": "rolling", "input": {"$ref": "s1.rows"}, "frame": [0, 5],
                         "aggregates": [{"fn": "sum", "field": "value", "as": "n6"}]},
                "depends_on": ["s1"],
            },
            {
                "id": "s3",
                "op": "compute",
                "args": {"fn": "topk", "input": {"$ref": "s2.rows"}, "field": "n6", "k": 1},
                "depends_on": ["s2"],
            },
        ],
        "answer_spec": {"kind": "rows", "from": "s3.rows"},
    }  # fmt: skip
    median_plan = {
        "plan_id": "median",
        "question": "the median time of every event",
        "steps": [
            {"id": "s1", "op": "list_events", "args": {"limit": 10}},
            {
                "id": "s2",
                "op": "compute",
                "args": {"fn": "median", "input": {"$ref": "s1.rows[*].vt_s"}},
                "depends_on": ["s1"],
            },
        ],
        "answer_spec": {"kind": "value", "from": "s2.value"},
    }
    return [
        (PLAN, "plan/median_of_1e6_event_times", median_plan),
        (PLAN, "plan/busiest_six_of_2000_buckets_rolling", busiest),
    ]


def run_scale(scale: Scale, reps: int, work: Path, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every typical call on one store (the template calls on a dataset); records carry peak RSS."""
    load_all()
    records = []
    store = bench_store(work, scale, progress)
    try:
        ctx = OpContext(store)
        t0 = time.perf_counter()
        ctx.edges(None)
        cold_ms = (time.perf_counter() - t0) * 1e3
        records.append(
            {
                "op": "(store)",
                "case": "cold_load_believed_edges",
                "scale": scale,
                "p50_ms": round(cold_ms, 2),
                "p95_ms": round(cold_ms, 2),
            }
        )
        if isinstance(scale, str):
            from tgms.pipeline.latency.template_calls import template_calls

            calls = template_calls(ctx)
        else:
            calls = typical_calls(ctx) + plan_calls(ctx)
        for op, case, args in calls:
            progress(f"  {scale:>10}  {case}")
            records.append(_time_case(ctx, op, case, args, scale, reps))
    finally:
        store.close()
    rss = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    for r in records:
        r["peak_rss_mb"] = rss
    return records


def _run_case(ctx: OpContext, op: str, args: dict[str, Any]) -> None:
    """One call, unguarded; a plan case runs through the executor with its default budgets (the guard
    on: what a plan pays) and fails as its first failing step does."""
    if op != PLAN:
        call(ctx, op, args, check_cost=False)
        return
    trace = execute(build_plan(args), ctx, config=ExecConfig())
    failed = next((s for s in trace.steps if not s.ok), None)
    if failed is not None:
        assert failed.error is not None
        raise error_from_dict(failed.error)


def _time_case(
    ctx: OpContext, op: str, case: str, args: dict[str, Any], scale: Scale, reps: int
) -> dict[str, Any]:
    times = []
    error = None
    for _ in range(reps + 1):
        t0 = time.perf_counter()
        try:
            _run_case(ctx, op, args)
        except TGMSError as exc:
            error = exc.code
            break
        times.append((time.perf_counter() - t0) * 1e3)
    rec: dict[str, Any] = {"op": op, "case": case, "scale": scale}
    if error:
        rec["error"] = error
    else:
        # the warm-up is the first call on this store: it pays for the operator's derived indexes
        rec["first_ms"] = round(times.pop(0), 2)
        rec["p50_ms"] = round(statistics.median(times), 2)
        rec["p95_ms"] = round(float(np.percentile(times, 95)), 2)
    target = TEMPLATE_TARGET_MS if isinstance(scale, str) else TARGETS.get((case, scale))
    if target is not None:
        rec["target_ms"] = target
        if "p50_ms" in rec:
            rec["ratio"] = round(rec["p50_ms"] / target, 3)
    return rec


def _child(scale: Scale, reps: int, work: Path) -> list[dict[str, Any]]:
    import sys

    return run_scale(scale, reps, work, lambda m: print(m, file=sys.stderr, flush=True))


def _build_child(scale: Scale, work: Path) -> None:
    import sys

    bench_store(work, scale, lambda m: print(m, file=sys.stderr, flush=True)).close()


def run(scales: list[Scale], reps: int, work: Path, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """One fresh process per scale (after another that builds its store if not cached), so each scale's
    peak RSS is that of querying it alone."""
    import multiprocessing as mp

    records: list[dict[str, Any]] = []
    for scale in scales:
        progress(f"scale {scale:,}" if isinstance(scale, int) else f"dataset {scale}")
        if not (store_dir(work, scale) / "store.json").exists():
            with mp.get_context("spawn").Pool(1) as pool:
                pool.apply(_build_child, (scale, work))
        with mp.get_context("spawn").Pool(1) as pool:
            records += pool.apply(_child, (scale, reps, work))
    return records


def _scale(scale: Scale) -> str:
    return f"{scale:,}" if isinstance(scale, int) else scale


def template_summary(records: list[dict[str, Any]]) -> str:
    """One line per dataset: how many template calls were timed and the slowest p50 against 20 ms."""
    lines = []
    for ds in sorted({r["scale"] for r in records if isinstance(r["scale"], str)}):
        rs = [r for r in records if r["scale"] == ds and r["op"] != "(store)"]
        timed = [r for r in rs if "p50_ms" in r]
        if not timed:
            continue
        worst = max(timed, key=lambda r: r["p50_ms"])
        over = [r for r in timed if r["p50_ms"] > TEMPLATE_TARGET_MS]
        lines.append(
            f"{ds}: {len(timed)} template calls timed ({len(rs) - len(timed)} errors); slowest p50 "
            f"{worst['p50_ms']} ms ({worst['case']}); {len(over)} over {TEMPLATE_TARGET_MS:g} ms"
        )
    return "\n".join(lines)


def table_model(records: list[dict[str, Any]]) -> Table:
    """The latency table (bare: callers put their caption around it); a missing figure is an empty cell,
    an errored call shows its error where the p50 would be."""
    header = ["scale", "case", "first call ms", "p50 ms", "p95 ms", "target ms", "p50/target", "peak RSS MB"]
    rows = [
        [
            Cell(text=_scale(r["scale"]), value=r["scale"]),
            r["case"],
            r.get("first_ms", ""),
            r.get("p50_ms", r.get("error", "")),
            r.get("p95_ms", ""),
            r.get("target_ms", ""),
            r.get("ratio", ""),
            r["peak_rss_mb"] if r["op"] == "(store)" else "",  # the process's peak, on its store row
        ]
        for r in records
    ]
    return Table.of(header, "rlrrrrrr", rows, name="ops", label="tab:operators")


def table(records: list[dict[str, Any]]) -> str:
    return to_markdown(table_model(records))
