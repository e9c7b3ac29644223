"""Historical state (O1–O3): entity_history, snapshot_subgraph, diff_snapshots.

Fast path: believed edges come from the cached, ``(vt_s, eid, vid)``-sorted columnar arrays of the
context; filtering and BFS run in numpy over int32 nids; uids and props are materialized only for the
rows that leave in the payload. Semantics: ``docs/operators.md`` §2–§4.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
from pydantic import Field, model_validator

from engine.operators.base import Model, OpArgs, PagedOutput, Time, Uid, UidList, dedupe, invalid
from engine.operators.context import EdgeArrays, OpContext
from engine.operators.cost import CostEstimate, StoreProfile
from engine.operators.registry import operator
from engine.operators.rows import EdgeVersionRow, NodeVersionRow
from engine.store.model import ScanFilter

# -- entity_history -------------------------------------------------------------------------------------


class EntityHistoryArgs(OpArgs):
    uid: Uid
    include_edges: bool = False


class EntityHistoryOut(PagedOutput):
    rows: list[NodeVersionRow]
    rows_total: int
    edges: list[EdgeVersionRow]
    edges_total: int
    edges_truncated: bool


def _entity_history_cost(p: StoreProfile, a: EntityHistoryArgs) -> CostEstimate:
    work = {"scan_row": 0.0, "row_out": 16.0}
    if a.include_edges:
        work["scan_row"] = p.n_edges * 0.05  # pushed-down nid filter: a fraction of a full scan
        work["row_out"] += p.max_degree
    return CostEstimate(work, ["set include_edges false, or page with a smaller limit"])


@operator(
    name="entity_history",
    family="history",
    args=EntityHistoryArgs,
    output=EntityHistoryOut,
    cost=_entity_history_cost,
    manual=(
        "Returns the version history of one node under a belief state: every believed node version of "
        "`uid` ordered by (vt_s, vid) in `rows`, and with include_edges=true every believed edge version "
        "touching it, ordered by (vt_s, eid, vid), in `edges`. Use as_of_tt to see what was believed at a "
        "past transaction time; corrected versions then reappear."
    ),
    example={"args": {"uid": "n9", "include_edges": True, "limit": 20}, "outputs": ["rows", "edges_total"]},
)
def entity_history(ctx: OpContext, a: EntityHistoryArgs) -> dict[str, Any]:
    (nid,) = ctx.require_known([a.uid], a.as_of_tt, "uid")
    backend = ctx.store.backend
    nodes = backend.scan_nodes(ScanFilter(as_of_tt=a.as_of_tt, ids=(nid,)))
    nodes = nodes.sort_by([("vt_s", "ascending"), ("vid", "ascending")])
    rows = ctx.node_rows(nodes)
    erows: list[dict[str, Any]] = []
    if a.include_edges:
        erows = ctx.edge_rows(backend.scan_edges(ScanFilter(as_of_tt=a.as_of_tt, nids=(nid,))))
    return {"rows": rows, "rows_total": len(rows), "edges": erows, "edges_total": len(erows)}


# -- snapshot_subgraph ----------------------------------------------------------------------------------


class SnapshotArgs(OpArgs):
    seeds: UidList
    t_valid: Time
    hops: Annotated[int, Field(ge=0, le=3)] = 1
    rel_types: list[Annotated[str, Field(min_length=1)]] | None = None


class SnapshotNode(Model):
    uid: str
    label: str | None
    hop: int


class SnapshotOut(PagedOutput):
    rows: list[EdgeVersionRow]
    rows_total: int
    nodes: list[SnapshotNode]
    nodes_total: int
    nodes_truncated: bool


def _valid_at(e: EdgeArrays, t: int, rel_types: list[str] | None) -> np.ndarray:
    """Indices of edges valid at t (optionally of the given rel types), in scan order."""
    hi = int(np.searchsorted(e.vt_s, t, "right"))
    idx = np.nonzero(e.vt_e[:hi] > t)[0]
    if rel_types is not None and len(idx):
        rel = e.table["rel_type"].take(pa.array(idx)).to_numpy(zero_copy_only=False)
        idx = idx[np.isin(rel, np.array(rel_types, dtype=object))]
    return idx


def _bfs(n_nodes: int, seeds: list[int], src: np.ndarray, dst: np.ndarray, hops: int) -> np.ndarray:
    """Undirected BFS distance by nid (-1 = not reached within ``hops``)."""
    dist = np.full(n_nodes, -1, dtype=np.int64)
    dist[seeds] = 0
    frontier = np.zeros(n_nodes, dtype=bool)
    frontier[seeds] = True
    for h in range(1, hops + 1):
        if not frontier.any():
            break
        reach = np.concatenate([dst[frontier[src]], src[frontier[dst]]])
        reach = np.unique(reach)
        reach = reach[dist[reach] < 0]
        dist[reach] = h
        frontier = np.zeros(n_nodes, dtype=bool)
        frontier[reach] = True
    return dist


def _labels_at(ctx: OpContext, a_tt: int | None, t: int, nids: np.ndarray) -> dict[int, str]:
    nodes = ctx.nodes(a_tt)
    vs = nodes["vt_s"].to_numpy()
    ve = nodes["vt_e"].to_numpy()
    nn = nodes["nid"].to_numpy()
    ok = (vs <= t) & (ve > t) & np.isin(nn, nids)
    labels = nodes["label"].filter(pa.array(ok)).to_pylist()
    return dict(zip(nn[ok].tolist(), labels, strict=True))


def _snapshot_cost(p: StoreProfile, a: SnapshotArgs) -> CostEstimate:
    reach = min(p.n_nodes, max(1, len(a.seeds)) * max(1, p.max_degree) ** a.hops)
    return CostEstimate(
        {"scan_row": p.n_edges * (1 + a.hops), "row_out": min(p.n_edges, reach * 4)},
        ["use fewer hops", "restrict rel_types", "use fewer seeds"],
    )


@operator(
    name="snapshot_subgraph",
    family="history",
    args=SnapshotArgs,
    output=SnapshotOut,
    cost=_snapshot_cost,
    manual=(
        "Returns the k-hop neighbourhood (hops 0..3, undirected BFS) of `seeds` in the snapshot "
        "G(t_valid, as_of_tt): `nodes` {uid, label, hop} ordered by (hop, uid), and `rows`, the edge "
        "versions valid at t_valid with both endpoints among the nodes, ordered by (vt_s, eid, vid). "
        "rel_types restricts the edges used."
    ),
    example={"args": {"seeds": ["n9"], "t_valid": 1085000000000000, "hops": 2}, "outputs": ["nodes", "rows"]},
)
def snapshot_subgraph(ctx: OpContext, a: SnapshotArgs) -> dict[str, Any]:
    seeds = dedupe(a.seeds)
    seed_nids = ctx.require_known(seeds, a.as_of_tt, "seeds")
    e = ctx.edges(a.as_of_tt)
    idx = _valid_at(e, a.t_valid, dedupe(a.rel_types) if a.rel_types is not None else None)
    src, dst = e.src[idx], e.dst[idx]
    dist = _bfs(len(ctx.uids()), seed_nids, src, dst, a.hops)
    inside = np.nonzero(dist >= 0)[0]
    labels = _labels_at(ctx, a.as_of_tt, a.t_valid, inside)
    uids = ctx.uids()
    nodes = sorted(
        ({"uid": uids[n], "label": labels.get(n), "hop": int(dist[n])} for n in inside.tolist()),
        key=lambda r: (r["hop"], r["uid"]),
    )
    keep = idx[(dist[src] >= 0) & (dist[dst] >= 0)]
    rows = ctx.edge_rows(e.table.take(pa.array(keep, pa.int64())))
    return {"rows": rows, "rows_total": len(rows), "nodes": nodes, "nodes_total": len(nodes)}


# -- diff_snapshots -------------------------------------------------------------------------------------


class DiffScope(Model):
    seeds: UidList
    hops: Annotated[int, Field(ge=0, le=3)] = 1


class DiffArgs(OpArgs):
    t1: Time
    t2: Time
    scope: DiffScope | None = None

    @model_validator(mode="after")
    def _ordered(self) -> DiffArgs:
        if self.t1 >= self.t2:
            raise invalid(f"t1 must be < t2 (got t1={self.t1}, t2={self.t2})")
        return self


class DiffNode(Model):
    uid: str
    label: str | None


class PropChange(Model):
    kind: str
    uid: str | None
    eid: int | None
    key: str
    change: str
    before: Any
    after: Any


class DiffOut(PagedOutput):
    nodes_added: list[DiffNode]
    nodes_added_total: int
    nodes_added_truncated: bool
    nodes_removed: list[DiffNode]
    nodes_removed_total: int
    nodes_removed_truncated: bool
    edges_added: list[EdgeVersionRow]
    edges_added_total: int
    edges_added_truncated: bool
    edges_removed: list[EdgeVersionRow]
    edges_removed_total: int
    edges_removed_truncated: bool
    props_changed: list[PropChange]
    props_changed_total: int
    props_changed_truncated: bool


def _diff_cost(p: StoreProfile, a: DiffArgs) -> CostEstimate:
    return CostEstimate(
        {"scan_row": p.n_edges * 4, "row_out": p.n_edges * 0.01}, ["add a scope {seeds, hops}"]
    )


def _node_state(ctx: OpContext, a_tt: int | None, t: int) -> dict[int, tuple[str, str | None]]:
    """nid -> (label, props text) of node versions valid at t."""
    nodes = ctx.nodes(a_tt)
    vs, ve = nodes["vt_s"].to_numpy(), nodes["vt_e"].to_numpy()
    ok = np.nonzero((vs <= t) & (ve > t))[0]
    sub = nodes.take(pa.array(ok, pa.int64()))
    return dict(
        zip(
            sub["nid"].to_pylist(),
            zip(sub["label"].to_pylist(), sub["props"].to_pylist(), strict=True),
            strict=True,
        )
    )


def _props_diff(kind: str, ident: Any, before: str | None, after: str | None) -> list[dict[str, Any]]:
    if before == after:
        return []
    b = json.loads(before) if before else {}
    c = json.loads(after) if after else {}
    out = []
    for key in sorted(set(b) | set(c)):
        if key in b and key in c:
            if json.dumps(b[key], sort_keys=True) == json.dumps(c[key], sort_keys=True):
                continue
            change = "modified"
        else:
            change = "added" if key in c else "removed"
        out.append(
            {
                "kind": kind,
                "uid": ident if kind == "node" else None,
                "eid": ident if kind == "edge" else None,
                "key": key,
                "change": change,
                "before": b.get(key),
                "after": c.get(key),
            }
        )
    return out


@operator(
    name="diff_snapshots",
    family="history",
    args=DiffArgs,
    output=DiffOut,
    cost=_diff_cost,
    manual=(
        "Compares snapshots G(t1) and G(t2) under one belief state: nodes and edges added and removed, and "
        "per-key property changes of nodes and edges present in both. scope {seeds, hops} restricts the "
        "comparison to the BFS neighbourhood of the seeds in either snapshot. Every list has a _total."
    ),
    example={"args": {"t1": 1083000000000000, "t2": 1086000000000000}, "outputs": ["edges_added_total"]},
)
def diff_snapshots(ctx: OpContext, a: DiffArgs) -> dict[str, Any]:
    e = ctx.edges(a.as_of_tt)
    i1, i2 = _valid_at(e, a.t1, None), _valid_at(e, a.t2, None)
    n_nodes = len(ctx.uids())
    in_scope: np.ndarray | None = None
    if a.scope is not None:
        seeds = ctx.require_known(dedupe(a.scope.seeds), a.as_of_tt, "scope.seeds")
        d1 = _bfs(n_nodes, seeds, e.src[i1], e.dst[i1], a.scope.hops)
        d2 = _bfs(n_nodes, seeds, e.src[i2], e.dst[i2], a.scope.hops)
        in_scope = (d1 >= 0) | (d2 >= 0)
        i1 = i1[in_scope[e.src[i1]] & in_scope[e.dst[i1]]]
        i2 = i2[in_scope[e.src[i2]] & in_scope[e.dst[i2]]]
    n1, n2 = _node_state(ctx, a.as_of_tt, a.t1), _node_state(ctx, a.as_of_tt, a.t2)
    if in_scope is not None:
        n1 = {k: v for k, v in n1.items() if in_scope[k]}
        n2 = {k: v for k, v in n2.items() if in_scope[k]}
    uids = ctx.uids()
    added = sorted(
        ({"uid": uids[k], "label": n2[k][0]} for k in n2.keys() - n1.keys()), key=lambda r: r["uid"]
    )
    removed = sorted(
        ({"uid": uids[k], "label": n1[k][0]} for k in n1.keys() - n2.keys()), key=lambda r: r["uid"]
    )
    e1, e2 = e.eid[i1], e.eid[i2]
    only2 = i2[~np.isin(e2, e1)]
    only1 = i1[~np.isin(e1, e2)]
    changes = []
    for k in sorted(n1.keys() & n2.keys(), key=lambda k: uids[k]):
        changes += _props_diff("node", uids[k], n1[k][1], n2[k][1])
    # edges in both snapshots: pair by eid (one version per eid at a time, invariant 1)
    common = np.intersect1d(e1, e2)
    if len(common):
        p1 = dict(zip(e1.tolist(), e.table["props"].take(pa.array(i1)).to_pylist(), strict=True))
        p2 = dict(zip(e2.tolist(), e.table["props"].take(pa.array(i2)).to_pylist(), strict=True))
        for eid in np.sort(common).tolist():
            changes += _props_diff("edge", eid, p1[eid], p2[eid])
    ea = ctx.edge_rows(e.table.take(pa.array(only2, pa.int64())))
    er = ctx.edge_rows(e.table.take(pa.array(only1, pa.int64())))
    return {
        "nodes_added": added,
        "nodes_added_total": len(added),
        "nodes_removed": removed,
        "nodes_removed_total": len(removed),
        "edges_added": ea,
        "edges_added_total": len(ea),
        "edges_removed": er,
        "edges_removed_total": len(er),
        "props_changed": changes,
        "props_changed_total": len(changes),
    }
