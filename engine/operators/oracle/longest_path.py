"""Oracle of longest_temporal_path: a memoized recursion over (node, arrival) states.

A walk is a sequence of believed edge versions e1..ek with e_i.dst = e_{i+1}.src, each taken at
τ_i = max(τ_{i-1} + 1, vt_s) (τ_0 = t_a − 1) with τ_i < vt_e and τ_i < t_b. ``longest_from`` tries every
next hop from a state (plain scans of the edge list, no index); the answer is the least walk in step
order ((τ, eid, vid) hop by hop) among the longest, up to max_hops (searching one hop further tells
whether the answer was capped). The fast path instead runs backward latest-departure rounds.

``simple: true`` (no node twice, the start included; ``strict: false`` takes τ = max(α, vt_s), α₀ = t_a):
every simple path is enumerated by plain recursion, and the answer is the least path in step order among
those of the greatest length ≤ max_hops. The fast path searches depth first with a numpy selection per
state and a budget.

``delta_max_wait`` δ: every hop after the first is at τ ≤ α + δ (α the previous hop's time); the first
hop is not limited. Both searches simply skip the other hops (the memo key says whether a hop is first).
"""

from __future__ import annotations

from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.errors import InvalidArgError
from tgms.engine.operators.oracle.events import edge_filter
from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    check_keys,
    int_arg,
    require_known,
    str_arg,
    str_list_arg,
    window_arg,
)


def oracle_longest_temporal_path(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(
        args,
        ["window"],
        ["src", "rel_types", "max_hops", "where", "simple", "strict", "delta_max_wait"],
        "longest_temporal_path",
    )
    a = as_of_arg(args)
    t_a, t_b = window_arg(args["window"])
    src = str_arg(args, "src")
    rel_types = str_list_arg(args, "rel_types")
    max_hops = int_arg(args, "max_hops", 20, 1, 1000)
    assert max_hops is not None
    delta = int_arg(args, "delta_max_wait", None, 0, None)
    passes = edge_filter(args.get("where"))
    if src is not None:
        require_known([src], store.known_uids(a), "src")
    edges = [
        e for e in store.believed_edges(a) if (rel_types is None or e["rel_type"] in rel_types) and passes(e)
    ]
    simple, strict = bool(args.get("simple", False)), bool(args.get("strict", True))
    if not strict and not simple:
        raise InvalidArgError("strict: false needs simple: true")
    if simple:
        return _simple_paths(edges, src, t_a, t_b, max_hops, strict, delta)

    def hops_from(node: str | None, alpha: int, first: bool) -> list[tuple[int, int, int, dict[str, Any]]]:
        """Every hop possible after arriving at node at alpha (None: from any node), least first."""
        out = []
        for e in edges:
            if node is not None and e["src"] != node:
                continue
            tau = max(alpha + 1, e["vt_s"])
            if not first and delta is not None and tau - alpha > delta:
                continue
            if tau < e["vt_e"] and tau < t_b:
                out.append((tau, e["eid"], e["vid"], e))
        return sorted(out, key=lambda x: x[:3])

    memo: dict[tuple[str | None, int, int, bool], int] = {}

    def longest_from(node: str | None, alpha: int, cap: int, first: bool = False) -> int:
        """The most hops (at most cap) a walk can still make after arriving at node at alpha (``first``:
        the start, whose hop is not wait-limited)."""
        key = (node, alpha, cap, first)
        if key not in memo:
            most = 0
            for tau, _eid, _vid, e in hops_from(node, alpha, first) if cap else []:
                most = max(most, 1 + longest_from(e["dst"], tau, cap - 1))
                if most == cap:
                    break
            memo[key] = most
        return memo[key]

    # one past the cap: tells whether it was capped
    longest = longest_from(src, t_a - 1, max_hops + 1, first=True)
    capped = longest > max_hops
    length = min(longest, max_hops)
    # the least walk of that length: at each hop the least next hop that can still make the rest
    best: list[tuple[dict[str, Any], int]] = []
    node, alpha = src, t_a - 1
    for i in range(length):
        need = length - i - 1
        for tau, _eid, _vid, e in hops_from(node, alpha, i == 0):
            if longest_from(e["dst"], tau, need) >= need:
                best.append((e, tau))
                node, alpha = e["dst"], tau
                break
    rows = _rows(best)
    nodes = [src] if src is not None else []
    if best:
        nodes = [best[0][0]["src"], *(e["dst"] for e, _ in best)]
    return canonicalize(
        {"hops": len(best), "capped": capped, "nodes": nodes, "rows": rows, "rows_total": len(rows)}
    )


def _simple_paths(
    edges: list[dict[str, Any]],
    src: str | None,
    t_a: int,
    t_b: int,
    max_hops: int,
    strict: bool,
    delta: int | None,
) -> dict[str, Any]:
    """Every node-simple path, by recursion; the least (τ, eid, vid) path of the greatest length."""
    step = 1 if strict else 0
    found: list[list[tuple[int, int, int, dict[str, Any]]]] = []

    def extend(path: list[tuple[int, int, int, dict[str, Any]]], node: str | None, alpha: int) -> None:
        found.append(list(path))
        if len(path) > max_hops:  # one past the cap is enough to say capped
            return
        on_path = {src} if src is not None else set()
        for _t, _eid, _vid, e in path:
            on_path |= {e["src"], e["dst"]}
        for e in edges:
            if node is not None and e["src"] != node:
                continue
            if e["dst"] in on_path or e["src"] == e["dst"]:
                continue
            tau = max(alpha + step, e["vt_s"])
            if path and delta is not None and tau - alpha > delta:
                continue
            if tau < e["vt_e"] and tau < t_b:
                extend([*path, (tau, e["eid"], e["vid"], e)], e["dst"], tau)

    extend([], src, t_a - 1 if strict else t_a)
    longest = max(len(p) for p in found)
    length = min(longest, max_hops)
    best = min((p[:length] for p in found if len(p) >= length), key=lambda p: [h[:3] for h in p])
    rows = _rows([(e, t) for t, _eid, _vid, e in best])
    nodes = [best[0][3]["src"], *(e["dst"] for *_, e in best)] if best else ([src] if src is not None else [])
    return canonicalize(
        {"hops": length, "capped": longest > max_hops, "nodes": nodes, "rows": rows, "rows_total": len(rows)}
    )


def _rows(steps: list[tuple[dict[str, Any], int]]) -> list[dict[str, Any]]:
    """A path's rows from its (edge, traversal time) steps."""
    keys = ("vid", "eid", "src", "dst", "rel_type")
    return [{**{k: e[k] for k in keys}, "t": t} for e, t in steps]
