"""Random bi-temporal stores and random valid arguments for every operator (shared by operator tests).

Stores mix instantaneous events, interval edges, equal timestamps, self-loops, two rel types, node props
with names, corrections that split intervals, and retractions, over several batches, so that past
``as_of_tt`` values see different beliefs than the current one.
"""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path
from typing import Any

from tgms.engine.operators.oracle.evolution import ALLEN_RELATIONS
from tgms.engine.operators.oracle.metrics import METRICS as ORACLE_METRICS
from tgms.engine.store import Store

N_CASES = int(os.environ.get("TGMS_ORACLE_CASES", "50"))
MOTIFS = ("M_triangle_cyclic", "M_triangle_acyclic_1", "M_2node_pingpong", "M_star_out_3", "M_path_3")
METRICS = ORACLE_METRICS
ALLEN = ALLEN_RELATIONS
T_MAX = 200
#: the graph operators that take edge predicates (``where``)
EDGE_WHERE_OPS = (
    "count_temporal_motifs",
    "find_temporal_motif_instances",
    "temporal_reachability",
    "temporal_paths",
    "longest_temporal_path",
)


def counter_clock(start: int = 1_000_000, step: int = 1_000):
    it = itertools.count(start, step)
    return lambda: next(it)


def random_store(
    root: Path, backend: str, seed: int, n_uids: int = 8, n_batches: int = 6
) -> tuple[Store, list[int]]:
    """A store with random history; returns it and the tt of every committed batch."""
    rng = random.Random(seed)
    store = Store.create(root, backend, now=counter_clock())
    uids = [f"u{i}" for i in range(n_uids)]
    tts = []
    nodes = [
        {
            "op": "assert_node",
            "uid": u,
            "label": rng.choice(["user", "bot"]),
            "props": {"name": f"Name {u[1:]}"},
            "vt_s": rng.randint(0, T_MAX // 4),
        }
        for u in uids
    ]
    tts.append(store.write(nodes).tt)
    edges: list[tuple[str, str, str]] = []
    for _ in range(n_batches):
        ops: list[dict[str, Any]] = []
        for _ in range(rng.randint(3, 10)):
            s, d = rng.choice(uids), rng.choice(uids)
            rel = rng.choice(["msg", "msg", "follows"])
            t = rng.randint(0, T_MAX)
            dur = 1 if rel == "msg" else rng.choice([1, 5, 20, 60])
            ops.append(
                {
                    "op": "assert_edge",
                    "src": s,
                    "dst": d,
                    "rel_type": rel,
                    "props": {"w": rng.randint(1, 4)},
                    "vt_s": t,
                    "vt_e": t + dur,
                }
            )
            edges.append((s, d, rel))
        tts.append(store.write(ops).tt)
        if edges and rng.random() < 0.6:
            s, d, rel = rng.choice(edges)
            a = rng.randint(0, T_MAX)
            r = store.try_write(
                [
                    {
                        "op": "correct",
                        "ref": {"src": s, "dst": d, "rel_type": rel},
                        "props": {"w": rng.randint(5, 9)},
                        "vt_s": a,
                        "vt_e": a + rng.randint(1, 30),
                    }
                ]
            )
            if r.status == "committed":
                tts.append(r.tt)
        if edges and rng.random() < 0.3:
            s, d, rel = rng.choice(edges)
            r = store.try_write(
                [{"op": "retract", "ref": {"src": s, "dst": d, "rel_type": rel}, "t": rng.randint(0, T_MAX)}]
            )
            if r.status == "committed":
                tts.append(r.tt)
        if rng.random() < 0.3:
            u = rng.choice(uids)
            r = store.try_write(
                [
                    {
                        "op": "correct",
                        "ref": {"uid": u},
                        "props": {"name": f"Renamed {u}"},
                        "vt_s": rng.randint(0, T_MAX),
                        "vt_e": T_MAX * 2,
                    }
                ]
            )
            if r.status == "committed":
                tts.append(r.tt)
    return store, tts


def _window(rng: random.Random) -> dict[str, int]:
    a = rng.randint(0, T_MAX)
    return {"t_a": a, "t_b": a + rng.randint(1, T_MAX)}


def edge_where(rng: random.Random, t_max: int = T_MAX) -> list[dict[str, Any]]:
    """One or two edge predicates (the graph operators' ``where``) over the random stores' fields."""
    pool: list[dict[str, Any]] = [
        {"field": "prop.w", "op": rng.choice(["le", "ge", "eq", "ne"]), "value": rng.randint(1, 9)},
        {"field": "prop.w", "op": "in", "value": rng.sample([1, 2, 3, 4, 9], 2)},
        {"field": "rel_type", "op": "eq", "value": rng.choice(["msg", "follows"])},
        {"field": "t", "op": rng.choice(["ge", "lt"]), "value": rng.randint(0, t_max)},
        {"field": "vt_e", "op": "gt", "other": "t"},
        {"field": "prop.w", "op": "missing"},
        {"field": "src", "op": "ne", "other": "dst"},
    ]
    return rng.sample(pool, rng.randint(1, 2))


#: next_event's match shapes: none, one endpoint (each pairing), a reply, the same pair again
MATCHES: list[list[dict[str, str]]] = [
    [],
    [{"a": "src", "b": "src"}],
    [{"a": "dst", "b": "src"}],
    [{"a": "dst", "b": "dst"}],
    [{"a": "src", "b": "dst"}],
    [{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}],
    [{"a": "src", "b": "src"}, {"a": "dst", "b": "dst"}],
]


def _event_spec(rng: random.Random, uids: list[str]) -> dict[str, Any]:
    """An event selection (list_events' keys) over the random stores' times, endpoints and rel types."""
    spec: dict[str, Any] = {}
    if rng.random() < 0.3:
        spec["window"] = _window(rng)
    for k in ("src", "dst", "node"):
        if rng.random() < 0.12:
            spec[k] = rng.choice([rng.choice(uids), rng.sample(uids, rng.randint(0, 3))])
    if rng.random() < 0.2:
        spec["rel_types"] = [rng.choice(["msg", "follows"])]
    if rng.random() < 0.15:
        spec["where"] = edge_where(rng)
    return spec


def sample_args(op: str, rng: random.Random, uids: list[str], tts: list[int]) -> dict[str, Any]:
    """Valid arguments for ``op`` (uids from ``uids``, which must be known at current belief)."""
    u = rng.choice(uids)
    args: dict[str, Any]
    if op == "entity_history":
        args = {"uid": u, "include_edges": rng.random() < 0.7}
    elif op == "snapshot_subgraph":
        args = {
            "seeds": rng.sample(uids, rng.randint(1, 2)),
            "t_valid": rng.randint(0, T_MAX),
            "hops": rng.randint(0, 3),
        }
        if rng.random() < 0.3:
            args["rel_types"] = [rng.choice(["msg", "follows"])]
    elif op == "diff_snapshots":
        t1 = rng.randint(0, T_MAX)
        args = {"t1": t1, "t2": t1 + rng.randint(1, T_MAX)}
        if rng.random() < 0.4:
            args["scope"] = {"seeds": [u], "hops": rng.randint(0, 2)}
    elif op == "temporal_reachability":
        args = {"src": u, "window": _window(rng), "direction": rng.choice(["out", "in", "both"])}
        if rng.random() < 0.5:
            args["delta_max_wait"] = rng.randint(0, 40)
        if rng.random() < 0.4:  # each hop after the first strictly after the arrival at its tail
            args["strict"] = True
        if rng.random() < 0.3:  # the first hop out of src before depart_by, in (t_a, t_b]
            w = args["window"]
            args["depart_by"] = rng.choice([w["t_a"] + 1, rng.randint(w["t_a"] + 1, w["t_b"]), w["t_b"]])
        if rng.random() < 0.4:  # the fewest hops to each node (refused beside a wait limit, by both)
            args["hops"] = True
            if rng.random() < 0.8:
                args.pop("delta_max_wait", None)
    elif op == "temporal_paths":
        s, d = rng.sample(uids, 2)
        args = {
            "src": s,
            "dst": d,
            "window": _window(rng),
            "k": rng.randint(1, 6),
            "max_hops": rng.randint(1, 4),
        }
        if rng.random() < 0.3:
            args["strict"] = True
    elif op in ("count_temporal_motifs", "find_temporal_motif_instances"):
        args = {"motif": rng.choice(MOTIFS), "delta": rng.randint(0, 80), "window": _window(rng)}
        if rng.random() < 0.3:
            args["node_filter"] = rng.sample(uids, rng.randint(0, len(uids)))
    elif op == "graph_metric_timeseries":
        args = {"metric": rng.choice(METRICS), "window": _window(rng), "stride": rng.randint(1, 60)}
        rel_metric = args["metric"] in ("active_edge_count", "edge_event_count", "peak_active_edge_count")
        if rel_metric and rng.random() < 0.5:
            args["rel_types"] = rng.choice([["msg"], ["follows"], ["msg", "follows"], ["none"]])
    elif op == "burst_detection":
        args = {
            "target": rng.choice(["global", u]),
            "window": _window(rng),
            "stride": rng.randint(1, 30),
            "method": rng.choice(["zscore", "ratio"]),
            "params": {"w": rng.randint(2, 6), "threshold": rng.choice([0.5, 1, 1.5, 2])},
        }
    elif op == "neighborhood_evolution":
        t1 = rng.randint(1, T_MAX)
        args = {"uid": u, "t1": t1, "t2": t1 + rng.randint(1, T_MAX)}
        if rng.random() < 0.5:
            args["stride"] = rng.randint(1, 50)
    elif op == "co_active":
        args = {
            "a_spec": {"src": u} if rng.random() < 0.5 else {"window": _window(rng)},
            "b_spec": {"rel_types": ["follows"]} if rng.random() < 0.5 else {"uid": rng.choice(uids)},
            "allen_relation": rng.choice(ALLEN),
        }
        if args["allen_relation"] in ("before", "after") and rng.random() < 0.5:
            args["gap"] = rng.randint(1, 60)
    elif op == "resolve_entities":
        args = {"query": rng.choice([u, u[1:], "name", f"Name {u[1:]}", "zz", "Ren"])}
    elif op == "compute":
        xs = [rng.randint(-5, 9) for _ in range(rng.randint(0, 6))]
        fn = rng.choice(["count", "sum", "min", "max", "mean", "median", "topk"])
        args = {"fn": fn, "input": xs}
        if fn == "topk":
            args["k"] = rng.randint(1, 4)
    elif op == "belief_changes":
        lo = rng.choice(tts)  # >= the first batch's tt: a uid given is then always known
        args = {"tt_from": lo, "tt_to": rng.choice([lo + 1, lo + rng.randint(1, 8_000), 2**62])}
        if rng.random() < 0.4:
            args["uid"] = u
        elif rng.random() < 0.2:
            args["tt_from"] = 0
        if rng.random() < 0.3:
            args["kinds"] = rng.sample(["asserted", "corrected", "retracted", "closed"], rng.randint(1, 3))
    elif op == "longest_temporal_path":
        args = {"window": _window(rng), "max_hops": rng.choice([1, 2, 3, 5, 8])}
        if rng.random() < 0.5:
            args["src"] = u
        if rng.random() < 0.2:
            args["rel_types"] = [rng.choice(["msg", "follows"])]
        if rng.random() < 0.4:  # each hop at most delta after the previous one
            args["delta_max_wait"] = rng.choice([0, 1, 2, 5, rng.randint(0, 60)])
    elif op == "connected_components":
        args = {"window": _window(rng)}
        if rng.random() < 0.5:
            args["node"] = u
        if rng.random() < 0.2:
            args["rel_types"] = [rng.choice(["msg", "follows"])]
    elif op == "hop_distance":
        args = {"src": u, "window": _window(rng), "direction": rng.choice(["out", "in", "both"])}
        if rng.random() < 0.6:
            args["dst"] = rng.choice(uids)
        if rng.random() < 0.3:
            args["max_hops"] = rng.randint(1, 3)
        if rng.random() < 0.2:
            args["rel_types"] = [rng.choice(["msg", "follows"])]
    elif op == "next_event":
        args = {"a": _event_spec(rng, uids), "match": rng.choice(MATCHES)}
        if rng.random() < 0.4:
            args["b"] = _event_spec(rng, uids)
        if rng.random() < 0.4:
            args["direction"] = rng.choice(["next", "previous"])
        if rng.random() < 0.4:
            args["strict"] = rng.random() < 0.3
        if rng.random() < 0.3:
            args["within"] = rng.randint(0, 60)
            if rng.random() < 0.5:
                args["all"] = True  # every b within, a row each
        if rng.random() < 0.3:
            args["unmatched"] = True
        if rng.random() < 0.5:
            args["quantile"] = rng.choice([0.1, 0.25, 1 / 3, 0.5, 0.9, 0.99])
        if rng.random() < 0.3:
            args["order"] = "desc"
    elif op in ("list_events", "aggregate_events"):
        from tests.engine.operators.event_sampling import sample_event_args

        return sample_event_args(op, rng, uids, tts)
    else:  # pragma: no cover - a new operator needs a sampler
        raise AssertionError(f"no sampler for {op}")
    if op in EDGE_WHERE_OPS and rng.random() < 0.35:
        args["where"] = edge_where(rng)
    if rng.random() < 0.35 and op != "compute":
        args["as_of_tt"] = rng.choice(tts)
    if rng.random() < 0.3 and op not in ("count_temporal_motifs", "compute"):
        args["limit"] = rng.randint(1, 4)
    return args
