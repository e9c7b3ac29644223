"""The operator calls the task templates make, drawn on a real store (for ``tgms bench ops``).

The suites of the task-suite issue (``pipeline/tasks/``) are not built yet; until they are, this module is
the contract for their speed: one call shape per semantic template of the paper (10 single-operator T1,
3 evolution T3, 4 multi-step T4, whose steps are listed separately; the T5 analyst calls mirror
``pipeline/tasks/templates/t5.py``, one case per template step), with parameters drawn the way a
generator draws them: busy and ordinary entities, week / month windows, δ of an hour or a day. When the
templates exist, their oracle plans' calls replace this list (same case names).

Every draw is deterministic in ``seed``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tgms.engine.api import OpContext, committed_batches

HOUR = 3_600_000_000
DAY = 24 * HOUR
WEEK = 7 * DAY
MONTH = 30 * DAY


def template_calls(ctx: OpContext, draws: int = 3, seed: int = 0) -> list[tuple[str, str, dict[str, Any]]]:
    """``(op, case, args)``: ``draws`` parameter draws of every template step (case ``T?.name/step``)."""
    rng = np.random.default_rng(seed)
    e = ctx.edges(None)
    uids = ctx.uids()
    deg = ctx.degrees(None)
    active = np.flatnonzero(deg)
    busy = np.argsort(-deg, kind="stable")[: max(10, len(active) // 20)]
    lo, hi = int(e.vt_s[0]), int(e.vt_s[-1]) + 1
    batches = committed_batches(ctx.store.root)
    tt_last = batches[-1].tt if batches else 1  # the T5 belief-history window: the last batch
    out: list[tuple[str, str, dict[str, Any]]] = []
    for _ in range(draws):
        u = uids[int(rng.choice(busy))]
        v = uids[int(rng.choice(active))]
        w = uids[int(rng.choice(busy))]
        t = int(rng.integers(lo + WEEK, hi - WEEK))
        wk = {"t_a": t - WEEK // 2, "t_b": t + WEEK // 2}
        mo = {"t_a": max(lo, t - MONTH // 2), "t_b": min(hi, t + MONTH // 2)}
        whole = {"t_a": lo, "t_b": hi}
        day = {"t_a": t - t % DAY, "t_b": t - t % DAY + DAY}
        motif = str(rng.choice(["M_triangle_cyclic", "M_triangle_acyclic_1", "M_2node_pingpong"]))
        calls: list[tuple[str, str, dict[str, Any]]] = [
            # T1: single-operator questions
            ("entity_history", "T1.history/versions", {"uid": v}),
            ("snapshot_subgraph", "T1.neighbours/at_t", {"seeds": [u], "t_valid": t, "hops": 1}),
            ("temporal_reachability", "T1.reach/week", {"src": u, "window": wk}),
            ("temporal_paths", "T1.path/month", {"src": u, "dst": w, "window": mo, "k": 1}),
            ("count_temporal_motifs", "T1.motif_count/month", {"motif": motif, "delta": HOUR, "window": mo}),
            (
                "find_temporal_motif_instances",
                "T1.motif_find/week",
                {"motif": "M_2node_pingpong", "delta": HOUR, "window": wk, "limit": 100},
            ),
            (
                "graph_metric_timeseries",
                "T1.series/weekly",
                {"metric": "edge_event_count", "window": whole, "stride": WEEK},
            ),
            ("burst_detection", "T1.burst/node_daily", {"target": u, "window": whole, "stride": DAY}),
            (
                "co_active",
                "T1.co_active/before",
                {"a_spec": {"uid": u}, "b_spec": {"uid": w}, "allen_relation": "before", "limit": 100},
            ),
            ("resolve_entities", "T1.resolve/uid", {"query": v}),
            # T3: evolution questions
            ("diff_snapshots", "T3.diff/month", {"t1": mo["t_a"], "t2": mo["t_b"]}),
            (
                "neighborhood_evolution",
                "T3.neighbourhood/month",
                {"uid": u, "t1": mo["t_a"], "t2": mo["t_b"]},
            ),
            (
                "graph_metric_timeseries",
                "T3.series/daily_degree",
                {"metric": "mean_out_degree", "window": mo, "stride": DAY},
            ),
            # T4: multi-step questions, one case per step
            ("snapshot_subgraph", "T4.two_hop/snapshot", {"seeds": [u], "t_valid": t, "hops": 2}),
            ("compute", "T4.two_hop/count", {"fn": "count", "input": list(range(int(deg.max())))}),
            ("temporal_reachability", "T4.reach_share/reach", {"src": u, "window": mo}),
            ("compute", "T4.reach_share/ratio", {"fn": "ratio", "a": 17, "b": len(active)}),
            (
                "count_temporal_motifs",
                "T4.ego_motifs/count",
                {
                    "motif": "M_triangle_cyclic",
                    "delta": DAY,
                    "window": whole,
                    "node_filter": [uids[int(i)] for i in busy[:50]],
                },
            ),
            ("diff_snapshots", "T4.changed/diff", {"t1": wk["t_a"], "t2": wk["t_b"], "limit": 20}),
            ("entity_history", "T4.changed/history", {"uid": u}),
            # T5: analyst questions over the event set (pipeline/tasks/templates/t5.py, one case per step)
            (
                "aggregate_events",
                "T5.top_account/week",
                {
                    "window": wk,
                    "group_by": ["src"],
                    "order_by": [{"field": "count", "desc": True}],
                    "limit": 2,
                },
            ),
            (
                "aggregate_events",
                "T5.many_partners/month",
                {
                    "window": mo,
                    "where": [{"field": "src", "op": "ne", "other": "dst"}],
                    "group_by": ["node"],
                    "aggregates": [{"fn": "count_distinct", "field": "other", "as": "partners"}],
                    "having": [{"field": "partners", "op": "gt", "value": 3}],
                    "limit": 1,
                },
            ),
            (
                "aggregate_events",
                "T5.longest_silence/month",
                {"window": mo, "node": [u], "aggregates": [{"fn": "max_gap"}]},
            ),
            (
                "aggregate_events",
                "T5.busiest_slot/month",
                {
                    "window": mo,
                    "group_by": ["hour"],
                    "order_by": [{"field": "count", "desc": True}],
                    "limit": 2,
                },
            ),
            (
                "list_events",
                "T5.self_messages/month",
                {"window": mo, "where": [{"field": "src", "op": "eq", "other": "dst"}], "limit": 1},
            ),
            (
                "belief_changes",
                "T5.belief_changes/batches",
                {"tt_from": tt_last, "tt_to": tt_last + 1, "kinds": ["corrected"], "limit": 1},
            ),
            (
                "longest_temporal_path",
                "T5.longest_chain/day",
                {"src": u, "window": day, "max_hops": 12, "limit": 1},
            ),
            ("aggregate_events", "T5.send_balance/sent", {"window": mo, "src": [u]}),
            ("aggregate_events", "T5.send_balance/received", {"window": mo, "dst": [u]}),
            ("compute", "T5.send_balance/diff", {"fn": "diff", "a": 40, "b": 31}),
            ("connected_components", "T5.largest_component/month", {"window": mo, "limit": 1}),
            (
                "hop_distance",
                "T5.hop_distance/month",
                {"src": u, "dst": w, "window": mo, "direction": "both", "limit": 1},
            ),
            (
                "next_event",
                "T5.reply_delay/month",
                {
                    "a": {"window": mo, "dst": u, "where": [{"field": "src", "op": "ne", "other": "dst"}]},
                    "b": {"src": u},
                    "match": [{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}],
                    "limit": 1,
                },
            ),
            (
                "temporal_reachability",
                "T5.weekday_reach/week",
                {"src": u, "window": wk, "where": [{"field": "dow", "op": "le", "value": 5}], "limit": 1},
            ),
        ]
        out += calls
    return out
