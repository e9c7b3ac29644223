"""Oracles of the historical-state family: entity_history, snapshot_subgraph, diff_snapshots."""

from __future__ import annotations

from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.errors import SchemaError
from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    check_keys,
    edge_key,
    edge_row,
    int_arg,
    node_row,
    require_known,
    str_arg,
    str_list_arg,
    t1_t2_args,
    time_arg,
    valid_at,
)


def oracle_entity_history(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["uid"], ["include_edges"], "entity_history")
    a = as_of_arg(args)
    uid = str_arg(args, "uid")
    assert uid is not None  # check_keys refuses a missing or null required argument
    include_edges = args.get("include_edges", False)
    if include_edges is None:
        include_edges = False
    if not isinstance(include_edges, bool):
        raise SchemaError("include_edges must be a boolean", field="include_edges")
    require_known([uid], store.known_uids(a), "uid")
    nodes, edges = store.believed(a)
    rows = [node_row(v) for v in nodes if v["uid"] == uid]
    rows.sort(key=lambda r: (r["vt_s"], r["vid"]))
    erows: list[dict[str, Any]] = []
    if include_edges:
        erows = [edge_row(e) for e in edges if e["src"] == uid or e["dst"] == uid]
        erows.sort(key=edge_key)
    return canonicalize({"rows": rows, "rows_total": len(rows), "edges": erows, "edges_total": len(erows)})


def _snapshot(store: OracleStore, a: int | None, t: int) -> tuple[dict[str, dict[str, Any]], list[dict]]:
    """G(t, a): {uid: node version valid at t}, [edge versions valid at t]."""
    nodes, edges = store.believed(a)
    nmap: dict[str, dict[str, Any]] = {}
    for v in nodes:
        if valid_at(v, t):
            nmap[v["uid"]] = v  # invariant 1: at most one per uid
    return nmap, [e for e in edges if valid_at(e, t)]


def _bfs_hops(seeds: list[str], edges: list[dict[str, Any]], hops: int) -> dict[str, int]:
    """Undirected BFS distance (≤ hops) from the seed set over the given edges."""
    adj: dict[str, set[str]] = {}
    for e in edges:
        adj.setdefault(e["src"], set()).add(e["dst"])
        adj.setdefault(e["dst"], set()).add(e["src"])
    dist = {s: 0 for s in seeds}
    frontier = list(seeds)
    for h in range(1, hops + 1):
        nxt = []
        for u in frontier:
            for w in sorted(adj.get(u, ())):
                if w not in dist:
                    dist[w] = h
                    nxt.append(w)
        frontier = nxt
    return dist


def oracle_snapshot_subgraph(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["seeds", "t_valid"], ["hops", "rel_types"], "snapshot_subgraph")
    a = as_of_arg(args)
    seeds = str_list_arg(args, "seeds") or []
    t = time_arg(args["t_valid"], "t_valid")
    hops = int_arg(args, "hops", 1, 0, 3)
    assert hops is not None
    rel_types = str_list_arg(args, "rel_types")
    require_known(seeds, store.known_uids(a), "seeds")
    nmap, edges = _snapshot(store, a, t)
    if rel_types is not None:
        edges = [e for e in edges if e["rel_type"] in rel_types]
    dist = _bfs_hops(seeds, edges, hops)
    nodes = [{"uid": u, "label": nmap[u]["label"] if u in nmap else None, "hop": h} for u, h in dist.items()]
    nodes.sort(key=lambda r: (r["hop"], r["uid"]))
    rows = [edge_row(e) for e in edges if e["src"] in dist and e["dst"] in dist]
    rows.sort(key=edge_key)
    return canonicalize({"rows": rows, "rows_total": len(rows), "nodes": nodes, "nodes_total": len(nodes)})


def _scope_arg(args: dict[str, Any]) -> tuple[list[str], int] | None:
    scope = args.get("scope")
    if scope is None:
        return None
    if not isinstance(scope, dict):
        raise SchemaError("scope must be an object {seeds, hops}", field="scope")
    unknown = sorted(set(scope) - {"seeds", "hops"})
    if unknown or scope.get("seeds") is None:
        raise SchemaError("scope must have seeds and optional hops", field="scope", unknown=unknown)
    seeds = str_list_arg(scope, "seeds") or []
    hops = int_arg(scope, "hops", 1, 0, 3)
    assert hops is not None
    return seeds, hops


def _prop_changes(
    kind: str, ident: dict[str, Any], before: dict[str, Any], after: dict[str, Any]
) -> list[dict[str, Any]]:
    out = []
    for key in sorted(set(before) | set(after)):
        if key in before and key in after:
            if canonicalize(before[key]) == canonicalize(after[key]):
                continue
            change = "modified"
        else:
            change = "added" if key in after else "removed"
        out.append(
            {
                "kind": kind,
                **ident,
                "key": key,
                "change": change,
                "before": before.get(key),
                "after": after.get(key),
            }
        )
    return out


def oracle_diff_snapshots(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["t1", "t2"], ["scope"], "diff_snapshots")
    a = as_of_arg(args)
    t1, t2 = t1_t2_args(args)
    scope = _scope_arg(args)
    n1, e1 = _snapshot(store, a, t1)
    n2, e2 = _snapshot(store, a, t2)
    in_scope: set[str] | None = None
    if scope is not None:
        seeds, hops = scope
        require_known(seeds, store.known_uids(a), "scope.seeds")
        in_scope = set(_bfs_hops(seeds, e1, hops)) | set(_bfs_hops(seeds, e2, hops))

    def node_ok(u: str) -> bool:
        return in_scope is None or u in in_scope

    def edge_ok(e: dict[str, Any]) -> bool:
        return in_scope is None or (e["src"] in in_scope and e["dst"] in in_scope)

    em1 = {e["eid"]: e for e in e1 if edge_ok(e)}
    em2 = {e["eid"]: e for e in e2 if edge_ok(e)}
    nodes_added = [{"uid": u, "label": n2[u]["label"]} for u in sorted(n2) if u not in n1 and node_ok(u)]
    nodes_removed = [{"uid": u, "label": n1[u]["label"]} for u in sorted(n1) if u not in n2 and node_ok(u)]
    edges_added = sorted((edge_row(e) for k, e in em2.items() if k not in em1), key=edge_key)
    edges_removed = sorted((edge_row(e) for k, e in em1.items() if k not in em2), key=edge_key)
    changed: list[dict[str, Any]] = []
    for u in sorted(set(n1) & set(n2)):
        if node_ok(u):
            changed += _prop_changes("node", {"uid": u, "eid": None}, n1[u]["props"], n2[u]["props"])
    for k in sorted(set(em1) & set(em2)):
        changed += _prop_changes("edge", {"uid": None, "eid": k}, em1[k]["props"], em2[k]["props"])
    out: dict[str, Any] = {}
    for name, lst in (
        ("nodes_added", nodes_added),
        ("nodes_removed", nodes_removed),
        ("edges_added", edges_added),
        ("edges_removed", edges_removed),
        ("props_changed", changed),
    ):
        out[name] = lst
        out[f"{name}_total"] = len(lst)
    return canonicalize(out)
