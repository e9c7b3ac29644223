"""The traversal index: one adjacency per belief state and direction, every arc sorted by ``(from,
rank)`` (``rank`` = the edge version's position in the ``(vt_s, eid, vid)`` scan order), and a query's
:class:`Scope` (its window, its arcs, the interval arcs still open in it). See ``traversal`` for the
searches that use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tgms.engine.operators.context import OpContext
from tgms.engine.operators.edge_arrays import EdgeArrays
from tgms.engine.operators.sorting import stable_order

# -- adjacency --------------------------------------------------------------------------------------
#
# Times inside the search are carried with a *time id*: ``tid(τ) = 2·rank_of(τ) + [τ is some vt_s]``, where
# ``rank_of(τ)`` is the least rank with ``vt_s >= τ``. Every arrival is ``t_a`` or some ``vt_s``, tid is
# strictly increasing in τ over those, and ``tid >> 1`` is the first rank an arrival can still use.


@dataclass(frozen=True)
class Adjacency:
    """Arcs of one belief state and direction, grouped by tail node, time-ordered inside a group."""

    edges: EdgeArrays  # the believed edges (kept alive here even if the context cache evicts them)
    n_nodes: int
    vt_s: np.ndarray  # edges.vt_s (rank -> start time; sorted)
    key: np.ndarray  # sorted from*(n+1) + rank, all arcs
    to: np.ndarray  # int32 head nid, per arc
    a_vs: np.ndarray  # vt_s per arc
    a_tid: np.ndarray  # tid(vt_s) per arc
    rank: np.ndarray  # rank per arc
    ikey: np.ndarray  # the same for interval arcs only (vt_e > vt_s + 1)
    ito: np.ndarray
    ive: np.ndarray
    irank: np.ndarray

    @property
    def stride(self) -> int:
        return len(self.vt_s) + 1

    def tid(self, t: int) -> int:
        r = int(np.searchsorted(self.vt_s, t, "left"))
        return 2 * r + int(r < len(self.vt_s) and self.vt_s[r] == t)


def _build_adjacency(ctx: OpContext, as_of_tt: int | None, direction: str) -> Adjacency:
    e = ctx.edges(as_of_tt)
    n = e.n
    rank = np.arange(n, dtype=np.int64)
    src, dst = e.src.astype(np.int64), e.dst.astype(np.int64)
    if direction == "out":
        frm, to, rk = src, dst, rank
    elif direction == "in":
        frm, to, rk = dst, src, rank
    else:
        # interleaved (out, in) per rank, so the input is in rank order for the stable order below
        frm, to = np.stack([src, dst], 1).ravel(), np.stack([dst, src], 1).ravel()
        rk = np.repeat(rank, 2)
    # by (frm, rank): rk is ascending in the input, so a stable order by frm is the key order (a self-loop's
    # two orientations in "both" are identical arcs)
    order = stable_order(frm, max(len(ctx.uids()), 1))
    key = frm[order] * (n + 1) + rk[order]
    to, rk = to[order].astype(np.int32), rk[order]
    vt_s = np.ascontiguousarray(e.vt_s, dtype=np.int64)
    vt_e = np.ascontiguousarray(e.vt_e, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    if n:
        starts = np.flatnonzero(np.r_[True, vt_s[1:] != vt_s[:-1]])
        first = np.repeat(starts, np.diff(np.r_[starts, n]))
    inter = np.flatnonzero(vt_e[rk] > vt_s[rk] + 1)
    ends = (key[inter], to[inter], vt_e[rk[inter]], rk[inter])
    return Adjacency(e, len(ctx.uids()), vt_s, key, to, vt_s[rk], 2 * first[rk] + 1, rk, *ends)


def adjacency(ctx: OpContext, as_of_tt: int | None, direction: str) -> Adjacency:
    return ctx.cached(("adj", as_of_tt, direction), lambda: _build_adjacency(ctx, as_of_tt, direction))


@dataclass(frozen=True)
class Scope:
    """One query's view of an adjacency: the window, its arcs (the adjacency's own arrays, or a copy
    restricted to the arcs starting in the window) and the interval arcs still open in it."""

    g: Adjacency
    t_a: int
    t_b: int
    r_a: int  # first rank with vt_s >= t_a
    r_b: int  # first rank with vt_s >= t_b (arcs from here on start too late)
    key: np.ndarray  # main arcs, as in Adjacency
    to: np.ndarray
    a_vs: np.ndarray
    a_tid: np.ndarray
    rank: np.ndarray
    ikey: np.ndarray  # interval arcs with vt_e > t_a and vt_s < t_b, still sorted by key
    ioff: np.ndarray  # ikey block start by nid (n_nodes + 1)
    ito: np.ndarray
    ive: np.ndarray
    irank: np.ndarray
    keep: np.ndarray | None = None  # by rank: the edge passes the call's edge predicates (None: all do)

    @cached_property
    def ends_by_node(self) -> np.ndarray:
        """By nid, the end of its main arcs that start in the window (``key`` position of ``nid·stride +
        r_b``): the same for every state at the node, so a search's rounds index it instead of searching
        ``key`` again for each state (one search per node, once per scope)."""
        base = np.arange(self.g.n_nodes, dtype=np.int64) * self.g.stride
        return np.searchsorted(self.key, base + self.r_b, "left")


def scope(g: Adjacency, t_a: int, t_b: int, *, local: bool = False, keep: np.ndarray | None = None) -> Scope:
    """``local``: copy the window's arcs into a compact index (worth it when many states search it).
    ``keep`` (a bool per rank: the edges passing the call's predicates) implies a local copy without the
    other arcs; the searches see only what passes."""
    r_a, r_b = (int(x) for x in np.searchsorted(g.vt_s, [t_a, t_b], "left"))
    open_arcs = (g.ive > t_a) & (g.irank < r_b)
    if keep is not None:
        open_arcs &= keep[g.irank]
    live = np.flatnonzero(open_arcs)
    ikey = g.ikey[live]
    ioff = np.r_[0, np.cumsum(np.bincount(ikey // g.stride, minlength=g.n_nodes))]
    key, to, a_vs, a_tid, rank = g.key, g.to, g.a_vs, g.a_tid, g.rank
    if local or keep is not None:
        base = np.arange(g.n_nodes, dtype=np.int64) * g.stride
        idx, _ = _ranges(np.searchsorted(g.key, base + r_a), np.searchsorted(g.key, base + r_b))
        if keep is not None:
            idx = idx[keep[g.rank[idx]]]
        key, to, a_vs, a_tid, rank = key[idx], to[idx], a_vs[idx], a_tid[idx], rank[idx]
    ends = (g.ito[live], g.ive[live], g.irank[live])
    return Scope(g, t_a, t_b, r_a, r_b, key, to, a_vs, a_tid, rank, ikey, ioff, *ends, keep)


def _ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ``arange(lo[i], hi[i])`` and, per element, the index ``i`` of its range."""
    lens = np.maximum(hi - lo, 0)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(lo)), lens)
    idx = np.arange(total, dtype=np.int64) + np.repeat(lo - (np.cumsum(lens) - lens), lens)
    return idx, owner
