"""The static graph of a window: connected_components, hop_distance (``docs/operators.md`` §19–§20).

Analysts ask questions of a window's *aggregated* graph ("how big is the largest component of May's
message graph", "how many ratings apart are two accounts, ignoring time and direction") that the
time-respecting operators do not answer: there, a path must follow time. Here the graph is every
believed edge version valid at some instant of the window (``vt_s < t_b`` and ``vt_e > t_a``), each an
arc src→dst; its nodes are those versions' endpoints. Time plays no further part.

- Components are weakly connected (edge direction ignored): hooking and pointer jumping in numpy. Each
  round hooks the larger root of every arc whose ends have different roots onto the smaller root, then
  compresses every node to its root; a round at least halves the roots an arc still joins, and it ends
  when no arc joins two roots.
- Hop distances are a breadth-first search over the arcs (out, in or both ways), one vectorized frontier
  expansion per level over the traversal index's cached adjacency (arcs by tail, then scan position), so
  a call pays no index build of its own: a frontier node's arcs are one key range, kept when their
  version is in the window's graph.

Orders are fixed so results are the same bytes on every backend: components by size descending, then by
their least member uid (string order); distances by (hops, uid).
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field

from tgms.engine.operators.adjacency import _ranges, adjacency
from tgms.engine.operators.base import MAX_LIST, Model, OneOf, OpArgs, PagedOutput, Uid, Window, dedupe
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import CostEstimate, StoreProfile, memory_factor
from tgms.engine.operators.registry import operator
from tgms.engine.operators.traits import NonEmpty
from tgms.engine.operators.units import Measures, Unit

DIRECTIONS = ("out", "in", "both")
MAX_HOPS = 1_000_000
#: of the versions starting before the window, the share still valid in it (as longest_temporal_path's)
_STRADDLE = 0.05
#: scan rows per arc: the selection, the union rounds (a few, each a pass over the arcs) or the CSR build
_PER_ARC = 12.0

RelTypes = Annotated[Annotated[list[str], Field(max_length=MAX_LIST)] | None, NonEmpty()]


class _StaticArgs(OpArgs):
    window: Window
    rel_types: RelTypes = None


class ComponentsArgs(_StaticArgs):
    node: Annotated[Uid | None, Field(description="also report this node's component")] = None


class ComponentRow(Model):
    component: Annotated[int, Field(description="0 for the largest; by size descending, then first")]
    size: Annotated[int, Measures(Unit.COUNT)]
    first: Annotated[
        str, Measures(Unit.ID), Field(description="the component's least member uid (string order)")
    ]


class ComponentsOut(PagedOutput):
    rows: list[ComponentRow]
    rows_total: Annotated[int, Field(description="the number of components")]
    largest: Annotated[
        int,
        Measures(Unit.COUNT),
        Field(description="the largest component's size (0: no edge in the window)"),
    ]
    nodes_total: Annotated[int, Field(description="nodes with an edge in the window")]
    node_component: Annotated[int | None, Field(description="`node`'s component (null: not asked, no edge)")]
    node_size: Annotated[
        int,
        Measures(Unit.COUNT),
        Field(description="the size of `node`'s component (0: none asked or no edge)"),
    ]


class HopArgs(_StaticArgs):
    src: Uid
    dst: Annotated[Uid | None, Field(description="also report the distance to this node")] = None
    direction: Annotated[str, OneOf(DIRECTIONS)] = "out"
    max_hops: Annotated[int | None, Field(ge=1, le=MAX_HOPS, description="null: no limit")] = None


class HopRow(Model):
    uid: str
    hops: int


class HopOut(PagedOutput):
    rows: Annotated[list[HopRow], Field(description="the nodes reached (src not among them), by (hops, uid)")]
    rows_total: int
    hops: Annotated[int | None, Field(description="the distance to `dst` (null: none asked or not reached)")]
    reached: Annotated[bool, Measures(Unit.BOOLEAN), Field(description="`dst` is reached within max_hops")]


def _cost(p: StoreProfile, a: _StaticArgs) -> CostEstimate:
    w = a.window
    arcs = p.events_in(w.t_a, w.t_b) + _STRADDLE * p.events_in(0, w.t_a)
    return CostEstimate(
        {"scan_row": _PER_ARC * arcs, "row_out": min(arcs, p.n_nodes)},
        ["narrow the window", "restrict rel_types"],
    )


def _window_versions(ctx: OpContext, a: _StaticArgs) -> np.ndarray:
    """Scan positions of the window's versions: the static graph's arcs, one per version."""
    e = ctx.edges(a.as_of_tt)
    return e.overlapping(a.window.t_a, a.window.t_b, None if a.rel_types is None else dedupe(a.rel_types))


def _window_arcs(ctx: OpContext, a: _StaticArgs) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) nids of the window's versions (one arc per version; repeats are harmless here)."""
    e = ctx.edges(a.as_of_tt)
    idx = _window_versions(ctx, a)
    return e.src[idx].astype(np.int64), e.dst[idx].astype(np.int64)


def _roots(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """root[nid] of every node under the arcs u–v (direction ignored); the root of a component is one of
    its members, the same for all of them."""
    parent = np.arange(n, dtype=np.int64)
    while True:
        pu, pv = parent[u], parent[v]
        join = pu != pv
        if not join.any():
            return parent
        lo, hi = np.minimum(pu[join], pv[join]), np.maximum(pu[join], pv[join])
        np.minimum.at(parent, hi, lo)  # roots only: every node points at a root after the jumps below
        while True:
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up


@operator(
    name="connected_components",
    family="static_graph",
    args=ComponentsArgs,
    output=ComponentsOut,
    cost=_cost,
    manual=(
        "Weakly connected components of the static graph of `window`, direction and time ignored. Its "
        "edges are those valid at some instant of the window. `rows` are the components {component, size,"
        " first}, largest first (ties: least member uid); `largest` is the largest size, `rows_total` "
        "their number, `nodes_total` the nodes; with `node`, `node_component` and `node_size` give its "
        "component (null and 0 when it has no edge there). Paths that follow time: temporal_reachability."
    ),
    example={
        "args": {"window": {"t_a": 1083369600000000, "t_b": 1086048000000000}},
        "outputs": ["largest", "rows_total", "rows"],
        "note": "a→b, c→b, d→e: components {a, b, c} (size 3) and {d, e} (size 2); largest 3",
    },
)
def connected_components(ctx: OpContext, a: ComponentsArgs) -> dict[str, Any]:
    node = None if a.node is None else ctx.require_known([a.node], a.as_of_tt, "node")[0]
    uids = ctx.uids()
    u, v = _window_arcs(ctx, a)
    present = np.zeros(len(uids), bool)
    present[u], present[v] = True, True
    root = _roots(len(uids), u, v)
    members = np.flatnonzero(present)
    size = np.bincount(root[members], minlength=len(uids))
    rank = ctx.uid_rank()
    first = np.full(len(uids), len(uids), np.int64)
    np.minimum.at(first, root[members], rank[members])
    comps = np.flatnonzero(size)
    comps = comps[np.lexsort((first[comps], -size[comps]))]
    by_rank = np.argsort(rank)  # nid by string position
    index = np.full(len(uids), -1, np.int64)
    index[comps] = np.arange(len(comps))
    rows = [
        {"component": i, "size": int(size[c]), "first": uids[int(by_rank[first[c]])]}
        for i, c in enumerate(comps)
    ]
    in_graph = node is not None and bool(present[node])
    return {
        "rows": rows,
        "rows_total": len(rows),
        "largest": rows[0]["size"] if rows else 0,
        "nodes_total": len(members),
        "node_component": int(index[root[node]]) if in_graph else None,
        "node_size": int(size[root[node]]) if in_graph else 0,
    }


def _distances(ctx: OpContext, a: HopArgs, src: int) -> np.ndarray:
    """dist[nid] from ``src`` (-1: not reached): a BFS over the traversal index's cached adjacency
    (:mod:`engine.operators.adjacency`: arcs by (tail, rank), shared with temporal_reachability), the
    arcs of a frontier node being one key range, kept when their version is in the window's graph."""
    g = adjacency(ctx, a.as_of_tt, a.direction)
    in_graph = np.zeros(g.edges.n, bool)
    in_graph[_window_versions(ctx, a)] = True
    r_b = int(np.searchsorted(g.vt_s, a.window.t_b, "left"))  # versions from r_b on start too late
    dist = np.full(g.n_nodes, -1, np.int64)
    dist[src] = 0
    frontier, level = np.array([src], np.int64), 0
    while len(frontier) and (a.max_hops is None or level < a.max_hops):
        level += 1
        base = frontier * g.stride
        arcs, _ = _ranges(np.searchsorted(g.key, base), np.searchsorted(g.key, base + r_b))
        heads = g.to[arcs[in_graph[g.rank[arcs]]]]
        heads = heads[dist[heads] < 0]
        dist[heads] = level
        frontier = np.unique(heads).astype(np.int64)
    return dist


def _hop_cost(p: StoreProfile, a: HopArgs) -> CostEstimate:
    est = _cost(p, a)
    # the traversal adjacency is built on first use and cached: priced on every call, as traversal prices it
    arcs = float(p.n_edges * (2 if a.direction == "both" else 1))
    return CostEstimate({**est.work, "index_row": arcs * memory_factor(p.n_edges)}, est.suggestions)


@operator(
    name="hop_distance",
    family="static_graph",
    args=HopArgs,
    output=HopOut,
    cost=_hop_cost,
    manual=(
        "Hop distances from `src` in the static graph of `window`, time order ignored. Its edges are "
        "those valid at some instant of the window, followed `out` (src→dst, default), `in` or `both` "
        "ways, up to `max_hops` (null: no limit). `rows` are the nodes reached {uid, hops} by (hops, "
        "uid), src not among them; with `dst`, `hops` is its distance (null if not reached) and `reached`"
        " says whether it was. Paths that follow time: temporal_paths."
    ),
    example={
        "args": {
            "src": "n35",
            "dst": "n5655",
            "window": {"t_a": 0, "t_b": 4611686018427387904},
            "direction": "both",
        },
        "outputs": ["hops", "reached", "rows"],
        "note": "a→b, c→b, c→d; from a, direction both: b at 1, c at 2, d at 3; direction out: only b",
    },
)
def hop_distance(ctx: OpContext, a: HopArgs) -> dict[str, Any]:
    src = ctx.require_known([a.src], a.as_of_tt, "src")[0]
    dst = None if a.dst is None else ctx.require_known([a.dst], a.as_of_tt, "dst")[0]
    uids = ctx.uids()
    dist = _distances(ctx, a, src)
    reached = np.flatnonzero(dist > 0)
    rank = ctx.uid_rank()
    reached = reached[np.lexsort((rank[reached], dist[reached]))]
    rows = [{"uid": uids[int(x)], "hops": int(dist[x])} for x in reached]
    got = dst is not None and bool(dist[dst] >= 0)
    return {
        "rows": rows,
        "rows_total": len(rows),
        "hops": int(dist[dst]) if got and dst is not None else None,
        "reached": got,
    }
