"""Oracles of the temporal-traversal family: temporal_reachability, temporal_paths.

Time-respecting rule (DESIGN §3.4): an edge u→v valid [s, e) entered at arrival α is usable at
τ = max(α, s) if τ < e and τ < t_b; the arrival at v is τ. The traveller starts at src at t_a.
"""

from __future__ import annotations

from typing import Any

from engine.canonical import canonicalize
from engine.errors import InvalidArgError
from engine.operators.oracle.events import edge_filter
from engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    check_keys,
    choice_arg,
    int_arg,
    require_known,
    str_arg,
    window_arg,
)


def _oriented(edges: list[dict[str, Any]], direction: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(from, to, version) triples: out = as stored, in = reversed, both = both orientations."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for e in edges:
        if direction in ("out", "both"):
            out.append((e["src"], e["dst"], e))
        if direction in ("in", "both"):
            out.append((e["dst"], e["src"], e))
    return out


def oracle_temporal_reachability(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["src", "window"], ["delta_max_wait", "direction", "where"], "temporal_reachability")
    a = as_of_arg(args)
    src = str_arg(args, "src")
    assert src is not None
    t_a, t_b = window_arg(args["window"])
    delta = int_arg(args, "delta_max_wait", None, 0, None)
    direction = choice_arg(args, "direction", ("out", "in", "both"), "out")
    passes = edge_filter(args.get("where"))
    require_known([src], store.known_uids(a), "src")
    arcs_from: dict[str, list[dict[str, Any]]] = {}
    for x, y, e in _oriented([e for e in store.believed_edges(a) if passes(e)], direction):
        arcs_from.setdefault(x, []).append({"to": y, "vt_s": e["vt_s"], "vt_e": e["vt_e"]})

    # Exact search over labelled states (node, arrival, free). `free` marks the start state: the wait at
    # the source before the first edge is not an intermediate wait and is not limited. Every arrival is
    # t_a or some edge's vt_s, so the state space is finite; we explore all of it (no label dominance).
    start = (src, t_a, True)
    seen = {start}
    stack = [start]
    while stack:
        u, alpha, free = stack.pop()
        for arc in arcs_from.get(u, []):
            e, y = arc, arc["to"]
            tau = max(alpha, e["vt_s"])
            if not (tau < e["vt_e"] and tau < t_b):
                continue
            if not free and delta is not None and tau - alpha > delta:
                continue
            state = (y, tau, False)
            if state not in seen:
                seen.add(state)
                stack.append(state)
    best: dict[str, int] = {}
    for v, alpha, _free in seen:
        if v != src and (v not in best or alpha < best[v]):
            best[v] = alpha
    rows = [{"uid": v, "earliest_arrival": t} for v, t in best.items()]
    rows.sort(key=lambda r: (r["earliest_arrival"], r["uid"]))
    return canonicalize({"rows": rows, "rows_total": len(rows)})


def _step(e: dict[str, Any], tau: int) -> dict[str, Any]:
    return {
        "vid": e["vid"],
        "eid": e["eid"],
        "src": e["src"],
        "dst": e["dst"],
        "rel_type": e["rel_type"],
        "t": tau,
    }


def oracle_temporal_paths(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["src", "dst", "window"], ["k", "max_hops", "where"], "temporal_paths")
    a = as_of_arg(args)
    src = str_arg(args, "src")
    dst = str_arg(args, "dst")
    assert src is not None and dst is not None
    t_a, t_b = window_arg(args["window"])
    k = int_arg(args, "k", 5, 1, 20)
    max_hops = int_arg(args, "max_hops", 4, 1, 6)
    assert k is not None and max_hops is not None
    passes = edge_filter(args.get("where"))
    require_known([src, dst], store.known_uids(a), "src/dst")
    if src == dst:
        raise InvalidArgError("src and dst must differ (paths are node-simple)", field="dst", uid=dst)
    edges = [e for e in store.believed_edges(a) if passes(e)]

    # A path is a node sequence; it is realised by its earliest-arrival edge choice at every hop (earliest
    # arrival at a prefix never hurts later hops without a wait limit). Ties in τ: smallest (eid, vid).
    found: list[dict[str, Any]] = []

    def extend(nodes: list[str], alpha: int, steps: list[dict[str, Any]]) -> None:
        u = nodes[-1]
        if u == dst:
            found.append({"arrival": alpha, "hops": len(steps), "nodes": list(nodes), "edges": list(steps)})
            return
        if len(steps) == max_hops:
            return
        best: dict[str, tuple[int, int, int, dict[str, Any]]] = {}
        for e in edges:
            if e["src"] != u or e["dst"] in nodes:
                continue
            tau = max(alpha, e["vt_s"])
            if not (tau < e["vt_e"] and tau < t_b):
                continue
            cand = (tau, e["eid"], e["vid"], e)
            w = e["dst"]
            if w not in best or cand[:3] < best[w][:3]:
                best[w] = cand
        for w in sorted(best):
            tau, _eid, _vid, e = best[w]
            extend([*nodes, w], tau, [*steps, _step(e, tau)])

    extend([src], t_a, [])
    found.sort(key=lambda r: (r["arrival"], r["hops"], r["nodes"]))
    rows = found[:k]
    return canonicalize({"rows": rows, "rows_total": len(rows)})
