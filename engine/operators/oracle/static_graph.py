"""Oracles of connected_components and hop_distance: dictionaries and plain loops.

The window's static graph is every believed version that ``overlaps`` the window. Components: a
breadth-first flood from each node not yet labelled, over an undirected neighbour dictionary, the nodes
taken in uid order. Distances: a textbook breadth-first search with a queue. The fast path instead
hooks roots and expands whole frontiers in numpy.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    check_keys,
    choice_arg,
    int_arg,
    overlaps,
    require_known,
    str_arg,
    str_list_arg,
    window_arg,
)


def _graph(store: OracleStore, args: dict[str, Any]) -> list[tuple[str, str]]:
    t_a, t_b = window_arg(args["window"])
    rel_types = str_list_arg(args, "rel_types")
    return [
        (e["src"], e["dst"])
        for e in store.believed_edges(as_of_arg(args))
        if overlaps(e, t_a, t_b) and (rel_types is None or e["rel_type"] in rel_types)
    ]


def oracle_connected_components(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["window"], ["rel_types", "node"], "connected_components")
    node = str_arg(args, "node")
    if node is not None:
        require_known([node], store.known_uids(as_of_arg(args)), "node")
    neighbours: dict[str, set[str]] = {}
    for a, b in _graph(store, args):
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    label: dict[str, int] = {}
    groups: list[list[str]] = []
    for start in sorted(neighbours):
        if start in label:
            continue
        label[start] = len(groups)
        group, queue = [start], deque([start])
        while queue:
            for nb in neighbours[queue.popleft()]:
                if nb not in label:
                    label[nb] = len(groups)
                    group.append(nb)
                    queue.append(nb)
        groups.append(group)
    order = sorted(range(len(groups)), key=lambda g: (-len(groups[g]), min(groups[g])))
    position = {g: i for i, g in enumerate(order)}
    rows = [{"component": i, "size": len(groups[g]), "first": min(groups[g])} for i, g in enumerate(order)]
    own = label.get(node) if node is not None else None
    return {
        "rows": rows,
        "rows_total": len(rows),
        "largest": max((len(g) for g in groups), default=0),
        "nodes_total": len(neighbours),
        "node_component": None if own is None else position[own],
        "node_size": 0 if own is None else len(groups[own]),
    }


def oracle_hop_distance(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["src", "window"], ["rel_types", "dst", "direction", "max_hops"], "hop_distance")
    known = store.known_uids(as_of_arg(args))
    src, dst = str_arg(args, "src"), str_arg(args, "dst")
    assert src is not None  # check_keys refuses a missing or null required argument
    require_known([src], known, "src")
    if dst is not None:
        require_known([dst], known, "dst")
    direction = choice_arg(args, "direction", ("out", "in", "both"), "out")
    max_hops = int_arg(args, "max_hops", None, 1, 1_000_000)
    nexts: dict[str, set[str]] = {}
    for a, b in _graph(store, args):
        if direction in ("out", "both"):
            nexts.setdefault(a, set()).add(b)
        if direction in ("in", "both"):
            nexts.setdefault(b, set()).add(a)
    dist = {src: 0}
    queue = deque([src])
    while queue:
        x = queue.popleft()
        if max_hops is not None and dist[x] >= max_hops:
            continue
        for y in nexts.get(x, ()):
            if y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    reached = sorted((d, u) for u, d in dist.items() if u != src)
    rows = [{"uid": u, "hops": d} for d, u in reached]
    hops = dist.get(dst) if dst is not None else None
    return {"rows": rows, "rows_total": len(rows), "hops": hops, "reached": hops is not None}
