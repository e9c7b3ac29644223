"""Oracle of longest_temporal_path: a memoized recursion over (node, arrival) states.

A walk is a sequence of believed edge versions e1..ek with e_i.dst = e_{i+1}.src, each taken at
τ_i = max(τ_{i-1} + 1, vt_s) (τ_0 = t_a − 1) with τ_i < vt_e and τ_i < t_b. ``longest_from`` tries every
next hop from a state (plain scans of the edge list, no index); the answer is the least walk in step
order ((τ, eid, vid) hop by hop) among the longest, up to max_hops (searching one hop further tells
whether the answer was capped). The fast path instead runs backward latest-departure rounds.
"""

from __future__ import annotations

from typing import Any

from engine.canonical import canonicalize
from engine.operators.oracle.events import edge_filter
from engine.operators.oracle.store import (
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
    check_keys(args, ["window"], ["src", "rel_types", "max_hops", "where"], "longest_temporal_path")
    a = as_of_arg(args)
    t_a, t_b = window_arg(args["window"])
    src = str_arg(args, "src")
    rel_types = str_list_arg(args, "rel_types")
    max_hops = int_arg(args, "max_hops", 20, 1, 1000)
    assert max_hops is not None
    passes = edge_filter(args.get("where"))
    if src is not None:
        require_known([src], store.known_uids(a), "src")
    edges = [
        e for e in store.believed_edges(a) if (rel_types is None or e["rel_type"] in rel_types) and passes(e)
    ]

    def hops_from(node: str | None, alpha: int) -> list[tuple[int, int, int, dict[str, Any]]]:
        """Every hop possible after arriving at node at alpha (None: from any node), least first."""
        out = []
        for e in edges:
            if node is not None and e["src"] != node:
                continue
            tau = max(alpha + 1, e["vt_s"])
            if tau < e["vt_e"] and tau < t_b:
                out.append((tau, e["eid"], e["vid"], e))
        return sorted(out, key=lambda x: x[:3])

    memo: dict[tuple[str | None, int, int], int] = {}

    def longest_from(node: str | None, alpha: int, cap: int) -> int:
        """The most hops (at most cap) a walk can still make after arriving at node at alpha."""
        key = (node, alpha, cap)
        if key not in memo:
            most = 0
            for tau, _eid, _vid, e in hops_from(node, alpha) if cap else []:
                most = max(most, 1 + longest_from(e["dst"], tau, cap - 1))
                if most == cap:
                    break
            memo[key] = most
        return memo[key]

    longest = longest_from(src, t_a - 1, max_hops + 1)  # one past the cap: tells whether it was capped
    capped = longest > max_hops
    length = min(longest, max_hops)
    # the least walk of that length: at each hop the least next hop that can still make the rest
    best: list[tuple[dict[str, Any], int]] = []
    node, alpha = src, t_a - 1
    for i in range(length):
        need = length - i - 1
        for tau, _eid, _vid, e in hops_from(node, alpha):
            if longest_from(e["dst"], tau, need) >= need:
                best.append((e, tau))
                node, alpha = e["dst"], tau
                break
    rows = [
        {
            "vid": e["vid"],
            "eid": e["eid"],
            "src": e["src"],
            "dst": e["dst"],
            "rel_type": e["rel_type"],
            "t": t,
        }
        for e, t in best
    ]
    nodes = [src] if src is not None else []
    if best:
        nodes = [best[0][0]["src"], *(e["dst"] for e, _ in best)]
    return canonicalize(
        {"hops": len(best), "capped": capped, "nodes": nodes, "rows": rows, "rows_total": len(rows)}
    )
