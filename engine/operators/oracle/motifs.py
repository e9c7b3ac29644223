"""Oracles of δ-temporal motifs (Paranjape et al.): count_temporal_motifs, find_temporal_motif_instances.

Events are believed edge versions with vt_s in the window, totally ordered by (t, eid) (vid last, which never
decides at one belief state: one identity has at most one version starting at a given vt_s). An instance
is three events e1 < e2 < e3 with t3 − t1 ≤ δ matching the pattern with pairwise-distinct node variables.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.operators.oracle.events import edge_filter
from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    check_keys,
    choice_arg,
    int_arg,
    require_known,
    str_list_arg,
    window_arg,
)

#: pattern = (variables in binding order, three (from, to) variable pairs in event order)
MOTIFS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "M_triangle_cyclic": (("u", "v", "w"), (("u", "v"), ("v", "w"), ("w", "u"))),
    "M_triangle_acyclic_1": (("u", "v", "w"), (("u", "v"), ("u", "w"), ("v", "w"))),
    "M_2node_pingpong": (("u", "v"), (("u", "v"), ("v", "u"), ("u", "v"))),
    "M_star_out_3": (("u", "a", "b", "c"), (("u", "a"), ("u", "b"), ("u", "c"))),
    "M_path_3": (("u", "v", "w", "x"), (("u", "v"), ("v", "w"), ("w", "x"))),
}


def _args(store: OracleStore, args: dict[str, Any], op: str) -> tuple[str, int, list[dict[str, Any]]]:
    check_keys(args, ["motif", "delta", "window"], ["node_filter", "where"], op)
    a = as_of_arg(args)
    motif = choice_arg(args, "motif", tuple(MOTIFS), None)
    delta = int_arg(args, "delta", None, 0, None)
    assert delta is not None
    t_a, t_b = window_arg(args["window"])
    node_filter = str_list_arg(args, "node_filter")
    passes = edge_filter(args.get("where"))
    if node_filter is not None:
        require_known(node_filter, store.known_uids(a), "node_filter")
    events = [e for e in store.believed_edges(a) if t_a <= e["vt_s"] < t_b and passes(e)]
    if node_filter is not None:
        allowed = set(node_filter)
        events = [e for e in events if e["src"] in allowed and e["dst"] in allowed]
    events.sort(key=lambda e: (e["vt_s"], e["eid"], e["vid"]))
    return motif, delta, events


def _bind(motif: str, triple: tuple[dict[str, Any], ...]) -> dict[str, str] | None:
    """The variable binding under which the three events match the pattern, or None."""
    variables, pattern = MOTIFS[motif]
    binding: dict[str, str] = {}
    for (x, y), e in zip(pattern, triple, strict=True):
        for var, node in ((x, e["src"]), (y, e["dst"])):
            if var in binding and binding[var] != node:
                return None
            binding[var] = node
    if len(set(binding.values())) != len(variables):
        return None  # variables must bind pairwise-distinct nodes
    return binding


def _instances(motif: str, delta: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    variables = MOTIFS[motif][0]
    out: list[dict[str, Any]] = []
    n = len(events)
    for i in range(n):
        for j in range(i + 1, n):
            if events[j]["vt_s"] - events[i]["vt_s"] > delta:
                break
            for k in range(j + 1, n):
                if events[k]["vt_s"] - events[i]["vt_s"] > delta:
                    break
                triple = (events[i], events[j], events[k])
                binding = _bind(motif, triple)
                if binding is not None:
                    out.append(
                        {
                            "edges": [
                                {
                                    "vid": e["vid"],
                                    "eid": e["eid"],
                                    "src": e["src"],
                                    "dst": e["dst"],
                                    "rel_type": e["rel_type"],
                                    "t": e["vt_s"],
                                }
                                for e in triple
                            ],
                            "nodes": [binding[v] for v in variables],
                        }
                    )
    # generated in (t1, eid1, t2, eid2, t3, eid3) order already; the sort states the contract
    out.sort(key=lambda r: tuple(x for e in r["edges"] for x in (e["t"], e["eid"], e["vid"])))
    return out


def oracle_count_temporal_motifs(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    motif, delta, events = _args(store, args, "count_temporal_motifs")
    return canonicalize({"count": len(_instances(motif, delta, events)), "n_events_in_window": len(events)})


def oracle_find_temporal_motif_instances(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    motif, delta, events = _args(store, args, "find_temporal_motif_instances")
    rows = _instances(motif, delta, events)
    return canonicalize({"rows": rows, "rows_total": len(rows)})
