"""Oracles of the temporal-traversal family: temporal_reachability, temporal_paths.

Time-respecting rule (DESIGN §3.4): an edge u→v valid [s, e) entered at arrival α is usable at
τ = max(α, s) if τ < e and τ < t_b; the arrival at v is τ. The traveller starts at src at t_a.
``strict``: every edge after the first is taken at τ = max(α + 1, s) (strictly after the arrival); the
first edge out of src is still taken at max(t_a, s), and before ``depart_by`` when given.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.errors import InvalidArgError, SchemaError
from tgms.engine.operators.oracle.events import edge_filter
from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    bool_arg,
    check_keys,
    choice_arg,
    int_arg,
    require_known,
    str_arg,
    time_arg,
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


#: the arcs out of each node: {to, vt_s, vt_e}
Arcs = dict[str, list[dict[str, Any]]]


def oracle_temporal_reachability(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(
        args,
        ["src", "window"],
        ["delta_max_wait", "direction", "where", "strict", "depart_by", "hops"],
        "temporal_reachability",
    )
    want_hops = bool_arg(args, "hops")
    a = as_of_arg(args)
    raw_src = args.get("src")
    if isinstance(raw_src, list):  # a list of sources: a walk from each, first occurrence kept
        if not raw_src or len(raw_src) > 1000 or not all(isinstance(u, str) for u in raw_src):
            raise SchemaError("src must be a uid or a list of 1..1000 uids", field="src", value=raw_src)
        sources = list(dict.fromkeys(raw_src))
    else:
        src_one = str_arg(args, "src")
        assert src_one is not None
        sources = [src_one]
    t_a, t_b = window_arg(args["window"])
    delta = int_arg(args, "delta_max_wait", None, 0, None)
    direction = choice_arg(args, "direction", ("out", "in", "both"), "out")
    strict = bool_arg(args, "strict")
    depart_by = None
    if args.get("depart_by") is not None:
        depart_by = time_arg(args["depart_by"], "depart_by", allow_open_end=True)
        if not t_a < depart_by <= t_b:
            raise InvalidArgError("depart_by must lie in (t_a, t_b]", field="depart_by", value=depart_by)
    passes = edge_filter(args.get("where"))  # each argument's own check before the pair's (as pydantic)
    if want_hops and delta is not None:
        raise InvalidArgError("hops is not available with delta_max_wait", field="hops", value=True)
    require_known(sources, store.known_uids(a), "src")
    arcs_from: dict[str, list[dict[str, Any]]] = {}
    # an edge outside the window is never usable (τ >= t_a >= its end, or τ >= its start >= t_b): left out,
    # so each walk scans the window's arcs, not the whole time line's
    inside = [e for e in store.believed_edges(a) if e["vt_e"] > t_a and e["vt_s"] < t_b and passes(e)]
    for x, y, e in _oriented(inside, direction):
        arcs_from.setdefault(x, []).append({"to": y, "vt_s": e["vt_s"], "vt_e": e["vt_e"]})
    rows: list[dict[str, Any]] = []
    for src in sources:  # one walk each, in the given order; a list's rows name their walk's source
        walk = _walk(arcs_from, src, t_a, t_b, delta, strict, depart_by, want_hops)
        rows += walk if isinstance(raw_src, str) else [{**r, "src": src} for r in walk]
    return canonicalize({"rows": rows, "rows_total": len(rows)})


def _walk(
    arcs_from: Arcs,
    src: str,
    t_a: int,
    t_b: int,
    delta: int | None,
    strict: bool,
    depart_by: int | None,
    want_hops: bool,
) -> list[dict[str, Any]]:
    """One source's reached nodes {uid, earliest_arrival[, hops]} by (earliest_arrival, uid)."""

    # Exact search over labelled states (node, arrival, free). `free` marks the start state: the wait at
    # the source before the first edge is not an intermediate wait and is not limited, its edge is taken
    # at max(t_a, s) even when strict, and before depart_by; a return to src is an ordinary state. With a
    # wait limit we explore every state: every arrival is t_a or some edge's vt_s, plus (strict) α + 1
    # after an interval edge entered after it started, all below t_b, so the state space is finite.
    # Without one an earlier arrival at a node can do all a later one can, so a state is explored only
    # when it is the earliest yet at its node (a strict walk round a cycle of interval edges would
    # otherwise meet every µs up to t_b).
    start = (src, t_a, True)
    seen = {start}
    stack = [start]
    earliest: dict[str, int] = {}
    while stack:
        u, alpha, free = stack.pop()
        if not free and delta is None and earliest.get(u, alpha) < alpha:
            continue  # an earlier arrival at u was found since this state was pushed
        for arc in arcs_from.get(u, []):
            e, y = arc, arc["to"]
            tau = max(alpha + (1 if strict and not free else 0), e["vt_s"])
            if not (tau < e["vt_e"] and tau < t_b):
                continue
            if free and depart_by is not None and tau >= depart_by:
                continue
            if not free and delta is not None and tau - alpha > delta:
                continue
            state = (y, tau, False)
            if delta is None:
                if y in earliest and earliest[y] <= tau:
                    continue
                earliest[y] = tau
            if state not in seen:
                seen.add(state)
                stack.append(state)
    best: dict[str, int] = {}
    for v, alpha, _free in seen:
        if v != src and (v not in best or alpha < best[v]):
            best[v] = alpha
    rows: list[dict[str, Any]] = [{"uid": v, "earliest_arrival": t} for v, t in best.items()]
    if want_hops:
        fewest = _fewest_hops(arcs_from, src, t_a, t_b, strict, depart_by)
        for r in rows:
            r["hops"] = fewest[r["uid"]]
    rows.sort(key=lambda r: (r["earliest_arrival"], r["uid"]))
    return rows


def _fewest_hops(
    arcs_from: Arcs, src: str, t_a: int, t_b: int, strict: bool, depart_by: int | None
) -> dict[str, int]:
    """The fewest edges of a time-respecting walk to each node: labels (node, arrival) taken one hop count
    at a time, a label kept only if it arrives earlier than every label of as few hops or fewer at its
    node (without a wait limit such a label does all a later one can, with no more hops; pruning the rest
    loses no node's fewest hops). Every kept label lowers its node's best arrival, so the search ends."""
    fewest: dict[str, int] = {}
    best: dict[str, int] = {}
    layer: dict[str, int] = {}
    for arc in arcs_from.get(src, []):  # the first edge: from t_a, before depart_by, never strict
        tau = max(t_a, arc["vt_s"])
        if tau < arc["vt_e"] and tau < t_b and (depart_by is None or tau < depart_by):
            layer[arc["to"]] = min(tau, layer.get(arc["to"], tau))
    k = 1
    while layer:
        kept = {v: t for v, t in layer.items() if v not in best or t < best[v]}
        nxt: dict[str, int] = {}
        for u, alpha in kept.items():
            best[u] = alpha
            fewest.setdefault(u, k)
            for arc in arcs_from.get(u, []):
                tau = max(alpha + (1 if strict else 0), arc["vt_s"])
                if tau < arc["vt_e"] and tau < t_b:
                    nxt[arc["to"]] = min(tau, nxt.get(arc["to"], tau))
        layer, k = nxt, k + 1
    return fewest


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
    check_keys(args, ["src", "dst", "window"], ["k", "max_hops", "where", "strict"], "temporal_paths")
    a = as_of_arg(args)
    src = str_arg(args, "src")
    dst = str_arg(args, "dst")
    assert src is not None and dst is not None
    t_a, t_b = window_arg(args["window"])
    k = int_arg(args, "k", 5, 1, 20)
    max_hops = int_arg(args, "max_hops", 4, 1, 6)
    assert k is not None and max_hops is not None
    step = 1 if bool_arg(args, "strict") else 0
    passes = edge_filter(args.get("where"))
    require_known([src, dst], store.known_uids(a), "src/dst")
    if src == dst:
        raise InvalidArgError("src and dst must differ (paths are node-simple)", field="dst", uid=dst)
    edges = [e for e in store.believed_edges(a) if passes(e)]

    # A path is a node sequence; it is realised by its earliest-arrival edge choice at every hop (earliest
    # arrival at a prefix never hurts later hops without a wait limit, strict or not). Ties in τ: smallest
    # (eid, vid). Strict: a hop after the first is at max(α + 1, s).
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
            tau = max(alpha + (step if steps else 0), e["vt_s"])
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
