"""Historical state (O1–O3): entity_history, snapshot_subgraph, diff_snapshots.

Fast path: believed edges come from the cached, ``(vt_s, eid, vid)``-sorted columnar arrays of the
context; filtering and BFS run in numpy over int32 nids; uids and props are materialized only for the
rows that leave in the payload. Semantics: ``docs/operators.md`` §2–§4.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from tgms.engine.operators.arrow_take import take_rows
from tgms.engine.operators.base import Model, OpArgs, PagedOutput, Time, Uid, UidList, dedupe, invalid
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import CostEstimate, StoreProfile
from tgms.engine.operators.edge_arrays import EdgeArrays
from tgms.engine.operators.lazy_rows import LazyRows
from tgms.engine.operators.registry import operator
from tgms.engine.operators.rows import EdgeVersionRow, NodeVersionRow
from tgms.engine.operators.traits import NonEmpty, TimePoint
from tgms.engine.store.model import EDGE_SCHEMA

#: a selecting uid list (``[]`` selects nothing) and a snapshot time, for the plan verifier
Seeds = Annotated[UidList, NonEmpty()]
SnapshotTime = Annotated[Time, TimePoint()]

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
    edge_arrays=False,  # node tables and edge statistics only
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
    # from the cached belief-state tables (sorted by (nid, vt_s, vid) and (vt_s, eid, vid)), not a
    # database query per call: ~2.7 ms per call at any scale, and a 10^7 edge scan with include_edges
    nodes = ctx.nodes(a.as_of_tt)
    nid_col = nodes["nid"].to_numpy()
    lo, hi = np.searchsorted(nid_col, [nid, nid + 1])
    rows = ctx.node_rows(nodes.slice(int(lo), int(hi - lo)))
    erows: Sequence[dict[str, Any]] = []
    if a.include_edges:  # rows built only for the page returned (a hub touches 10^4+ versions)
        e = ctx.edges(a.as_of_tt)
        erows = EdgeVersionRows(ctx, e, np.flatnonzero((e.src == nid) | (e.dst == nid)))
    return {"rows": rows, "rows_total": len(rows), "edges": erows, "edges_total": len(erows)}


# -- snapshot_subgraph ----------------------------------------------------------------------------------


class SnapshotArgs(OpArgs):
    seeds: Seeds
    t_valid: SnapshotTime
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
        rel = e.col_at("rel_type", idx).to_numpy(zero_copy_only=False)
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
    rows = ctx.edge_rows(e.rows(keep))
    return {"rows": rows, "rows_total": len(rows), "nodes": nodes, "nodes_total": len(nodes)}


# -- diff_snapshots -------------------------------------------------------------------------------------


class DiffScope(Model):
    seeds: Seeds
    hops: Annotated[int, Field(ge=0, le=3)] = 1


class DiffArgs(OpArgs):
    t1: SnapshotTime
    t2: SnapshotTime
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
    # two valid-at masks, eid set operations and a bulk props comparison over the believed edges; rows
    # are built for the returned page only (10^7 global, measured: 0.13 s)
    return CostEstimate(
        {"scan_row": p.n_edges * 0.6, "row_out": 5.0 * a.limit}, ["add a scope {seeds, hops}"]
    )


def _node_state(ctx: OpContext, a_tt: int | None, t: int) -> tuple[np.ndarray, np.ndarray, pa.Table]:
    """Node versions valid at t: their nids (sorted), the row of each in ``ctx.nodes``, and the table."""
    nodes = ctx.nodes(a_tt)
    vs, ve = nodes["vt_s"].to_numpy(), nodes["vt_e"].to_numpy()
    ok = np.flatnonzero((vs <= t) & (ve > t))
    nid = nodes["nid"].to_numpy()[ok]
    order = np.argsort(nid, kind="stable")  # one valid version per uid at t (invariant 1)
    return nid[order], ok[order], nodes


class EdgeVersionRows(LazyRows):
    """Edge-version rows given as scan positions, built (uids, props objects) only for the slice that is
    read: a global diff has ~10^5 added edges, of which the envelope returns one page."""

    def __init__(self, ctx: OpContext, e: EdgeArrays, pos: np.ndarray) -> None:
        super().__init__(pos)
        self._ctx, self._e = ctx, e

    def _build(self, pos: np.ndarray) -> list[dict[str, Any]]:
        return self._ctx.edge_rows(self._e.rows(pos))

    def has_column(self, name: str) -> bool:
        return name in EDGE_SCHEMA.names and name != "props"  # props: objects parsed row by row

    def int_column(self, name: str) -> np.ndarray | None:
        if name not in _INT_KEYS:
            return None
        return np.asarray(self._e.key_at(name, self._pos), dtype=np.int64)

    def column(self, name: str) -> list[Any]:
        if not self.has_column(name):
            raise NotImplementedError(f"edge-version rows have no column {name!r}")
        ints = self.int_column(name)
        if ints is not None:  # numpy's own list, without an Arrow table between
            return ints.tolist()
        values = self._e.rows(self._pos, [name]).column(name).to_pylist()
        if name in ("src", "dst"):  # as edge_rows gives them: uids, not node indices
            uids = self._ctx.uids()
            return [uids[i] for i in values]
        return values


#: the int64 key columns that are never null (vt_e is: an open interval)
_INT_KEYS = frozenset({"vid", "eid", "vt_s"})


def _node_refs(
    uids: list[str], labels: pa.ChunkedArray, rows: np.ndarray, nids: np.ndarray
) -> list[dict[str, Any]]:
    lab = labels.take(pa.array(rows, pa.int64())).to_pylist()
    return sorted(
        ({"uid": uids[k], "label": x} for k, x in zip(nids.tolist(), lab, strict=True)),
        key=lambda r: r["uid"],
    )


def _differing(a: Any, b: Any, keys: np.ndarray) -> list[tuple[int, str | None, str | None]]:
    """(key, props1, props2) of the aligned rows whose props texts differ (texts are canonical JSON, so
    equal text = equal props; a differing text may still compare equal key by key, _props_diff decides)."""
    if not len(keys):
        return []
    same = pc.fill_null(pc.equal(a, b), False)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    diff = np.flatnonzero(~pc.or_(same, both_null).to_numpy(zero_copy_only=False))
    if not len(diff):
        return []
    idx = pa.array(diff, pa.int64())
    return list(zip(keys[diff].tolist(), a.take(idx).to_pylist(), b.take(idx).to_pylist(), strict=True))


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
    uids = ctx.uids()
    (k1, r1, nodes), (k2, r2, _) = _node_state(ctx, a.as_of_tt, a.t1), _node_state(ctx, a.as_of_tt, a.t2)
    if in_scope is not None:
        keep1, keep2 = in_scope[k1], in_scope[k2]
        k1, r1, k2, r2 = k1[keep1], r1[keep1], k2[keep2], r2[keep2]
    labels = nodes["label"]
    added = _node_refs(uids, labels, r2[~np.isin(k2, k1)], k2[~np.isin(k2, k1)])
    removed = _node_refs(uids, labels, r1[~np.isin(k1, k2)], k1[~np.isin(k1, k2)])
    changes = []
    # nodes in both: compare the (canonical) props texts in bulk, diff key by key only where they differ
    c1, c2 = np.isin(k1, k2), np.isin(k2, k1)  # both sorted by nid: the common ones align
    both_k, both_r1, both_r2 = k1[c1], r1[c1], r2[c2]
    props = nodes["props"]
    node_changes = _differing(take_rows(props, both_r1), take_rows(props, both_r2), both_k)
    for k, b, c in sorted(node_changes, key=lambda x: uids[x[0]]):
        changes += _props_diff("node", uids[k], b, c)
    # edges in both snapshots: pair by eid (one version per eid at a time, invariant 1)
    e1, e2 = e.eid[i1], e.eid[i2]
    only2 = i2[~np.isin(e2, e1)]
    only1 = i1[~np.isin(e1, e2)]
    o1, o2 = np.argsort(e1, kind="stable"), np.argsort(e2, kind="stable")
    s1, s2 = e1[o1], e2[o2]
    m1, m2 = np.isin(s1, s2), np.isin(s2, s1)
    both1, both2 = e.col_at("props", i1[o1][m1]), e.col_at("props", i2[o2][m2])
    for eid, b, c in _differing(both1, both2, s1[m1]):
        changes += _props_diff("edge", eid, b, c)
    ea = EdgeVersionRows(ctx, e, only2)
    er = EdgeVersionRows(ctx, e, only1)
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
