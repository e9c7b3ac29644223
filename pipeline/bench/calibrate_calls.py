"""The varied calls of the cost-guard calibration (:mod:`pipeline.bench.calibrate`): ``per_op`` random
calls per operator over a store, drawn deterministically from a seeded generator (windows of 0.1% .. 100%
of the span, busy / quiet / random seeds, hops, bucket counts, motifs, deltas, limits).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tgms.engine.api import ALLEN_RELATIONS, METRICS, MOTIF_NAMES, OPERATOR_ORDER, OpContext

FRACTIONS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
MINUTE, HOUR, DAY = 60_000_000, 3_600_000_000, 86_400_000_000
Call = tuple[str, str, dict[str, Any]]
REPLY = [{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}]


def varied_calls(ctx: OpContext, rng: np.random.Generator, per_op: int) -> list[Call]:
    """``per_op`` random calls per operator over this store (deterministic from ``rng``)."""
    e = ctx.edges(None)
    uids = ctx.uids()
    deg = np.bincount(np.concatenate([e.src, e.dst]), minlength=len(uids))
    order = np.argsort(-deg, kind="stable")
    active = order[deg[order] > 0]
    busy, quiet = uids[int(active[0])], uids[int(active[-1])]
    lo, hi = int(e.vt_s[0]), int(e.vt_s[-1]) + 1
    span = hi - lo

    def pick(seq: Sequence[Any] | np.ndarray) -> Any:
        return seq[int(rng.integers(len(seq)))]

    def node() -> str:
        kind = pick(("busy", "quiet", "random"))
        return busy if kind == "busy" else quiet if kind == "quiet" else uids[int(pick(active))]

    def top(k: int) -> list[str]:
        return [uids[i] for i in active[:k].tolist()]

    def seeds() -> list[str]:
        k = pick((1, 1, 5, 20))
        if k == 1:
            return [node()]
        return [uids[i] for i in rng.choice(active, min(k, len(active)), replace=False).tolist()]

    def window(frac: float | None = None) -> dict[str, int]:
        w = max(1, int(span * (frac or pick(FRACTIONS))))
        t_a = lo + int(rng.integers(0, span - w + 1))
        return {"t_a": t_a, "t_b": t_a + w}

    def stride(w: dict[str, int], buckets: Sequence[int]) -> int:
        return -(-(w["t_b"] - w["t_a"]) // int(pick(buckets)))  # ceil: never more than the bucket count

    def motif(find: bool) -> dict[str, Any]:
        a = {"motif": pick(MOTIF_NAMES), "delta": pick((MINUTE, HOUR, DAY, 7 * DAY)), "window": window()}
        if rng.random() < 0.4:
            a["node_filter"] = top(pick((10, 100, 1000)))
        return {**a, "limit": pick((10, 100, 1000))} if find else a

    def metric() -> dict[str, Any]:
        w = window()
        return {"metric": pick(METRICS), "window": w, "stride": stride(w, (1, 10, 100, 1000, 2000))}

    def burst() -> dict[str, Any]:
        w = window(pick((0.1, 0.3, 1.0)))  # bursts need history: wide windows
        return {
            "target": pick(("global", busy, quiet)),
            "window": w,
            "stride": stride(w, (10, 100, 1000, 2000)),
            "method": pick(("zscore", "ratio")),
            "params": {"w": pick((3, 7, 30))},
        }

    def neighborhood() -> dict[str, Any]:
        w = window()
        a = {"uid": node(), "t1": w["t_a"], "t2": w["t_b"]}
        return {**a, "stride": stride(w, (10, 100, 1000))} if rng.random() < 0.6 else a

    def edge_spec() -> dict[str, Any]:
        return pick(
            (
                {"src": node()},
                {"uid": node()},
                {"uid": busy, "window": window()},
                {"rel_types": ["follows"]},
                {"rel_types": ["msg"], "window": window(pick((0.001, 0.01)))},
            )
        )

    def compute() -> dict[str, Any]:
        xs = rng.integers(0, 1000, int(pick((10, 100, 1000, 10_000, 100_000)))).tolist()
        fn = pick(("sum", "mean", "median", "count", "topk", "filter"))
        extra = {"k": 10} if fn == "topk" else {"cmp": ">", "value": 500} if fn == "filter" else {}
        return {"fn": fn, "input": xs, **extra}

    makers: dict[str, Callable[[], dict[str, Any]]] = {
        "entity_history": lambda: {
            "uid": node(),
            "include_edges": bool(rng.integers(2)),
            "limit": pick((10, 100, 1000)),
        },
        "snapshot_subgraph": lambda: {
            "seeds": seeds(),
            "t_valid": lo + int(rng.integers(span)),
            "hops": int(rng.integers(4)),
            **pick(({}, {}, {"rel_types": ["msg"]}, {"rel_types": ["follows"]})),
        },
        "diff_snapshots": lambda: {
            **dict(zip(("t1", "t2"), window().values(), strict=True)),
            **pick(({}, {"scope": {"seeds": seeds(), "hops": int(rng.integers(1, 3))}})),
        },
        "temporal_reachability": lambda: {
            "src": node(),
            "window": window(),
            "direction": pick(("out", "in", "both")),
            "delta_max_wait": pick((None, None, MINUTE, HOUR, DAY)),
        },
        "temporal_paths": lambda: {
            "src": node(),
            "dst": pick(top(50)),
            "window": window(),
            "k": pick((1, 5, 20)),
            "max_hops": pick((2, 3, 4, 6)),
        },
        "count_temporal_motifs": lambda: motif(find=False),
        "find_temporal_motif_instances": lambda: motif(find=True),
        "graph_metric_timeseries": metric,
        "burst_detection": burst,
        "neighborhood_evolution": neighborhood,
        "co_active": lambda: {
            "a_spec": edge_spec(),
            "b_spec": edge_spec(),
            "allen_relation": pick(ALLEN_RELATIONS),
        },
        "resolve_entities": lambda: {
            "query": pick((busy, quiet, busy[:2], "12", "nobody at all")),
            **pick(({}, {"label": "user"})),
        },
        "compute": compute,
        "list_events": lambda: {
            "window": window(pick((0.001, 0.01, 0.1))),
            "order": pick(("asc", "desc")),
            **pick(({}, {"node": node()}, {"src": top(10)}, {"rel_types": ["msg"]})),
            "limit": pick((10, 100, 1000)),
        },
        "aggregate_events": lambda: {
            **pick(({}, {"window": window()}, {"node": node()})),
            "group_by": pick(([], ["src"], ["day"], ["unordered_pair"], ["node", "month"])),
            "aggregates": pick(
                (
                    [{"fn": "count"}],
                    [{"fn": "count"}, {"fn": "count_distinct", "field": "dst"}],
                    [{"fn": "first_t"}, {"fn": "last_t"}, {"fn": "max_gap"}],
                )
            ),
            "limit": pick((10, 100, 1000)),
        },
        "belief_changes": lambda: {
            "tt_from": 0,
            "tt_to": 2**62,
            **pick(({"uid": node()}, {"kinds": ["corrected", "retracted", "closed"]}, {"limit": 1000})),
        },
        "longest_temporal_path": lambda: {
            "window": window(pick((0.001, 0.01, 0.1))),
            "max_hops": int(pick((5, 20, 100))),
            **pick(({}, {"src": node()})),
        },
        "connected_components": lambda: {
            "window": window(pick((0.01, 0.1, 1.0))),
            **pick(({}, {"node": node()}, {"rel_types": ["msg"]})),
        },
        "hop_distance": lambda: {
            "src": node(),
            "window": window(pick((0.01, 0.1, 1.0))),
            "direction": pick(("out", "both")),
            **pick(({}, {"dst": node()}, {"max_hops": 3})),
        },
        "next_event": lambda: {
            "a": pick(({}, {"window": window()}, {"node": node()}, {"dst": node()})),
            **pick(({}, {}, {"b": {"window": window()}}, {"b": {"src": node()}})),
            "match": pick(([], [{"a": "src", "b": "src"}], [{"a": "dst", "b": "src"}], REPLY)),
            "direction": pick(("next", "previous")),
            **pick(
                ({}, {"strict": False}, {"within": pick((HOUR, DAY))}, {"quantile": 0.9}, {"unmatched": True})
            ),
            "limit": pick((10, 100, 1000)),
        },
    }
    out: list[Call] = []
    for op in OPERATOR_ORDER:
        seen: set[str] = set()
        for _ in range(per_op):
            args = makers[op]()
            key = json.dumps(args, sort_keys=True)
            if key not in seen:  # small stores and small choice sets repeat themselves
                seen.add(key)
                out.append((op, f"{op}/varied_{len(seen)}", args))
    return out
