"""Arrival sets for walks with a wait limit (``longest_temporal_path``'s ``delta_max_wait``, §18).

``A_r(u)``, the set of arrival times at u from which r more hops are possible (each within δ of the
previous one), is kept as sorted disjoint intervals per node (:class:`Spans`). ``A_r`` follows from
``A_{r-1}``: an arc u→v ``[s, e)`` with ``s ∈ A_{r-1}(v)`` adds the arrivals ``[s − δ, s − 1]`` at u (taken
at s), and an interval arc adds ``(A_{r-1}(v) − 1) ∩ [s, min(e, t_b) − 2]`` (entered after it started, at
α + 1; δ ≥ 1).

The rounds are **incremental** (:func:`arrival_rounds`). The sets shrink (``A_r ⊆ A_{r-1}``: an arrival
from which r hops are possible allows r − 1), and ``A_r(u)`` depends only on the sets of u's heads in
``A_{r-1}``. So a round re-checks only the arcs whose head's set changed in the round before, recomputes
the sets of the tails those arcs touch, and keeps every other node's intervals as they were. A change is
also located in time (:func:`_changed`: a range per node holding every time that left the set): an arc
taken at s is re-checked only if s is in its head's range, an interval arc's tail recomputed only if the
range meets the arc's window. Most later changes are one time unit at an interval's end (a walk along
open arcs, one unit a hop), so this skips most of the arcs at a changed node. On a busy
window the sets settle after a few rounds (long chains circle through the same arcs), and the later
rounds cost what changed, not the window's size: the 1-hour wait at 10^6 edge versions went from 20 full
rounds over ~10^5 arcs to a few full ones and small corrections (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tgms.engine.operators.adjacency import _ranges

#: the largest node·width product for which a (node, time) pair packs into one int64 key
PACK_LIMIT = 2**62

Pack = tuple[int, int] | None  # (base, width): every time of the call in [base, base + width), or None
Rows = tuple[np.ndarray, np.ndarray, np.ndarray]  # node, lo, hi


def order(node: np.ndarray, lo: np.ndarray, pack: Pack) -> np.ndarray:
    """A permutation sorting ``(node, lo)`` pairs (ties in any order): one integer sort when the times
    pack."""
    if pack is None:
        return np.lexsort((lo, node))
    base, w = pack
    # an unstable sort (several times faster than a stable one on int64): rows tied on (node, lo) may
    # come in any order, since every use merges them into one interval
    return np.argsort(node * w + (lo - base))


def merge_at(node: np.ndarray, lo: np.ndarray, qnode: np.ndarray, qlo: np.ndarray, pack: Pack) -> np.ndarray:
    """Where ``np.insert`` puts the (node, lo)-sorted pairs ``q`` into the (node, lo)-sorted pairs so the
    result stays sorted."""
    if pack is None:
        both = order(np.concatenate([node, qnode]), np.concatenate([lo, qlo]), None)
        rank = np.empty(len(both), np.int64)
        rank[both] = np.arange(len(both))
        return rank[len(node) :] - np.arange(len(qnode))
    base, w = pack
    return np.searchsorted(node * w + (lo - base), qnode * w + (qlo - base), "right")


def _insert(rows: Rows, more: Rows, pack: Pack) -> Rows:
    """Two (node, lo)-sorted row sets as one, sorted: the second's places found once, every column filled
    by one scatter (``np.insert`` would sort the places again for each column)."""
    if not len(more[0]):
        return rows
    if not len(rows[0]):
        return more
    at = merge_at(rows[0], rows[1], more[0], more[1], pack) + np.arange(len(more[0]))
    mine = np.ones(len(rows[0]) + len(more[0]), bool)
    mine[at] = False
    out = []
    for a, b in zip(rows, more, strict=True):
        col = np.empty(len(mine), a.dtype)
        col[at], col[mine] = b, a
        out.append(col)
    return out[0], out[1], out[2]


class Spans:
    """A set of arrival times per node: disjoint intervals ``[lo, hi]`` sorted by ``(node, lo)``, looked up
    by binary search on a node-major key. The key is ``node·W + (t − base)`` when every time of the call
    fits in ``[base, base + W)`` and ``n·W`` fits int64 (``pack``); otherwise ``node·R + (rank of lo)``
    (``R`` = distinct lows + 1), slower but never overflowing."""

    def __init__(self, node: np.ndarray, lo: np.ndarray, hi: np.ndarray, pack: Pack) -> None:
        self.node, self.lo, self.hi, self.pack = node, lo, hi, pack
        if pack is None:
            self.u = np.unique(lo)
            self.r = len(self.u) + 1
            self.key = node * self.r + np.searchsorted(self.u, lo, "right")
        else:  # a set's times are within the pack's range: no clip (that is for queries)
            self.key = node * pack[1] + (lo - pack[0])

    def _packed(self, node: np.ndarray, t: np.ndarray) -> np.ndarray:
        assert self.pack is not None
        base, w = self.pack
        return node * w + (np.clip(t, base, base + w - 1) - base)

    @classmethod
    def union(cls, node: np.ndarray, lo: np.ndarray, hi: np.ndarray, pack: Pack) -> Spans:
        """The union of intervals sorted by (node, lo) (overlapping), merged where they overlap or touch."""
        if not len(node):
            return cls(node, lo, hi, pack)
        if pack is None:
            uh = np.unique(hi)  # running max of hi within a node (keys are node-major: it never crosses)
            top = np.maximum.accumulate(node * len(uh) + np.searchsorted(uh, hi))
            prev_hi = uh[top[:-1] % len(uh)]
        else:
            base, w = pack
            prev_hi = np.maximum.accumulate(node * w + (hi - base))[:-1] % w + base
        start = np.r_[True, (node[1:] != node[:-1]) | (lo[1:] > prev_hi + 1)]
        at = np.flatnonzero(start)
        return cls(node[at], lo[at], np.maximum.reduceat(hi, at), pack)

    def _last_at_or_before(self, node: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Index of the interval of greatest ``(node, lo) <= (node, t)`` (-1: none); maybe another node's."""
        q = self._packed(node, t) if self.pack else node * self.r + np.searchsorted(self.u, t, "right")
        return np.searchsorted(self.key, q, "right") - 1

    def contains(self, node: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Whether ``t`` is in the set of ``node`` (fastest with the queries in (node, t) order)."""
        if not len(self.node) or not len(node):
            return np.zeros(len(node), dtype=bool)
        j = self._last_at_or_before(node, t)
        jj = np.maximum(j, 0)
        return (j >= 0) & (self.node[jj] == node) & (self.lo[jj] <= t) & (self.hi[jj] >= t)

    def overlapping(self, node: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (query i, interval j) with interval j of ``node[i]`` meeting ``[x[i], y[i]]``."""
        if not len(self.node) or not len(node):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        j = self._last_at_or_before(node, x)
        jj = np.maximum(j, 0)
        first = np.where((j >= 0) & (self.node[jj] == node) & (self.hi[jj] >= x), j, j + 1)
        last = self._last_at_or_before(node, y)
        last = np.where((last >= 0) & (self.node[np.maximum(last, 0)] == node), last, -1)
        idx, own = _ranges(first, last + 1)
        return own, idx


class _Starts:
    """The first hops, and whether one can still make r hops (``tau0 ∈ A_{r-1}(v)``). A round asks only
    whether *some* first hop can, so one witness is kept and re-checked when its head's set changed; the
    others are checked (and the dead dropped) only when the witness fails."""

    def __init__(self, v: np.ndarray, t: np.ndarray) -> None:
        self.v, self.t = v, t
        self.idx = np.arange(len(v))  # the first hops not yet found unable (a superset of those able)
        self.witness = -1  # a position in idx of one that can, or -1: none known

    def any_in(self, contains: Callable[[np.ndarray, np.ndarray], np.ndarray], changed: np.ndarray) -> bool:
        """Whether some first hop's (head, time) is in the set ``contains`` tests."""
        w = self.witness
        if w >= 0:
            i = self.idx[w : w + 1]
            if not changed[self.v[i[0]]] or contains(self.v[i], self.t[i])[0]:
                return True
        alive = contains(self.v[self.idx], self.t[self.idx])
        if not alive.any():
            return False  # idx kept: the caller reads it as the hops able to make one hop fewer
        self.idx = self.idx[alive]
        self.witness = 0
        return True


@dataclass
class Arcs:
    """The window's arcs as the rounds read them: tail, head, start, end (each in (head, vt_s) order, the
    fast lookup order)."""

    u: np.ndarray
    v: np.ndarray
    s: np.ndarray
    end: np.ndarray


#: "every time": the changed range of a node whose interval count changed
_ALL = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)


def _changed(old: Spans, new: Rows, nodes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of the nodes flagged in ``nodes``, those whose intervals differ between ``old`` and ``new`` (which
    holds rows of flagged nodes only), and per node a time range ``[first, last]`` holding every time
    whose membership changed. A node keeping its number of intervals changes only where its rows differ
    (a time in one set and not the other is in row k of one and not in row k of the other); one whose
    number changed gets every time. A round's change is mostly one time unit at an interval's end (a walk
    along open arcs), so most arcs at a changed node cannot be affected: the range says which can."""
    in_old = nodes[old.node]
    onode, olo, ohi = old.node[in_old], old.lo[in_old], old.hi[in_old]
    nnode, nlo, nhi = new
    counts_old = np.bincount(onode, minlength=n)
    counts_new = np.bincount(nnode, minlength=n)
    diff = nodes & (counts_old != counts_new)
    same = nodes & ~diff  # as many intervals before and after: compare them in order
    mo, mn = same[onode], same[nnode]
    rows_differ = (olo[mo] != nlo[mn]) | (ohi[mo] != nhi[mn])
    first, last = np.full(n, _ALL[1]), np.full(n, _ALL[0])
    first[diff], last[diff] = _ALL
    at = onode[mo][rows_differ]
    a1, a2 = olo[mo][rows_differ], nlo[mn][rows_differ]
    b1, b2 = ohi[mo][rows_differ], nhi[mn][rows_differ]
    # [a1, b1] and [a2, b2] differ in (min b, max b] when a1 = a2, in [min a, max a) when b1 = b2
    if len(at):  # the rows are in node order: one segment per node (reduceat, not the slower ufunc.at)
        seg = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
        lo = np.where(a1 == a2, np.minimum(b1, b2) + 1, np.minimum(a1, a2))
        hi = np.where(b1 == b2, np.maximum(a1, a2) - 1, np.maximum(b1, b2))
        first[at[seg]] = np.minimum.reduceat(lo, seg)
        last[at[seg]] = np.maximum.reduceat(hi, seg)
    diff[at] = True
    return diff, first, last


def arrival_rounds(
    arcs: Arcs, first_v: np.ndarray, tau0: np.ndarray, n: int, window: tuple[int, int],
    delta: int, max_hops: int, top: int, pack: Pack, tail_order: np.ndarray | None = None,
) -> tuple[list[Spans], bool, np.ndarray]:  # fmt: skip
    """``[A_0, A_1, ..., A_L]`` for the longest L ≤ ``max_hops`` some first hop (``first_v``, at ``tau0``)
    can start; whether more hops were possible (capped); and the indices of the first hops that may start
    L hops (a superset of those that can: the path's first hop is among them). ``A_0`` is every arrival
    at every head; sets are cut at ``top``. ``tail_order``: the arcs' indices in (tail, vt_s) order, when
    the caller has it (saves a sort)."""
    t_a, t_b = window
    v = arcs.v  # in head order already (the caller's order): the distinct heads without np.unique's sort
    heads = v[np.r_[True, v[1:] != v[:-1]]] if len(v) and bool((v[1:] >= v[:-1]).all()) else np.unique(v)
    spans = [Spans(heads, np.full(len(heads), t_a), np.full(len(heads), top), pack)]  # A_0: any arrival
    is_head = np.zeros(n, bool)
    is_head[heads] = True
    # arcs taken at their start s from an earlier arrival (s > t_a): the arrivals [s − δ, s − 1]
    at = np.flatnonzero(arcs.s > t_a)
    hu, hv, hs = arcs.u[at], arcs.v[at], arcs.s[at]
    hlo = np.maximum(hs - delta, t_a)
    # (tail, lo) order, the order a round merges their intervals in (kept by a gather, never sorted again);
    # lo = max(s − δ, t_a) grows with s, so (tail, vt_s) order is (tail, lo) order
    if tail_order is None:
        by_tail = order(hu, hlo, pack)
    else:
        mask = arcs.s > t_a
        by_tail = (np.cumsum(mask) - 1)[tail_order[mask[tail_order]]]
    # interval arcs, entered after they started, at α + 1 in [s + 1, e − 1]
    iv_at = np.flatnonzero(arcs.end > arcs.s + 1)
    iu, iv = arcs.u[iv_at], arcs.v[iv_at]
    ix, iy = arcs.s[iv_at] + 1, np.minimum(arcs.end[iv_at], t_b) - 1
    live_h, live_i = np.ones(len(hu), bool), np.ones(len(iu), bool)
    ptr = np.searchsorted(hu[by_tail], np.arange(n + 1))  # each tail's arcs: by_tail[ptr[u]:ptr[u + 1]]
    starts = _Starts(first_v, tau0)
    changed = np.ones(n, bool)  # the nodes whose set changed in the last round (A_0: all, in effect)
    first, last = np.full(n, _ALL[0]), np.full(n, _ALL[1])  # where in time (a superset of the change)
    for r in range(1, max_hops + 2):
        rest = spans[-1]
        before = starts.idx
        # A_0 is [t_a, top] at every head: tested by comparisons, not by searches
        member = rest.contains if r > 1 else lambda v, t: is_head[v] & (t >= t_a) & (t <= top)
        if not starts.any_in(member, changed):  # no first hop can make r hops
            return spans, False, before
        if r > max_hops:
            return spans, True, before
        if delta < 1 or not len(rest.node):  # a hop after the first is at least 1 later
            empty = np.zeros(0, np.int64)
            spans.append(Spans(empty, empty, empty, pack))
            changed = np.ones(n, bool)
            first, last = np.full(n, _ALL[0]), np.full(n, _ALL[1])
            continue
        # arcs taken at their start whose head's set changed around their start: still usable?
        if r == 1:  # every arc's head has A_0 = [t_a, top], and s > t_a
            gone = np.flatnonzero(hs > top)
        else:
            check = np.flatnonzero(live_h & changed[hv])
            check = check[(hs[check] >= first[hv[check]]) & (hs[check] <= last[hv[check]])]
            gone = check[~rest.contains(hv[check], hs[check])]
        live_h[gone] = False
        # the tails to recompute: of arcs lost, and of interval arcs whose head's set changed inside
        # their window [x, y] (their rows read the set there only)
        dirty = np.ones(n, bool) if r == 1 else np.zeros(n, bool)
        dirty[hu[gone]] = True
        hit = np.flatnonzero(live_i & changed[iv])
        hit = hit[(ix[hit] <= last[iv[hit]]) & (iy[hit] >= first[iv[hit]])]
        dirty[iu[hit]] = True
        if 2 * int(live_h.sum()) < len(live_h):  # half are gone for good: keep the arrays small
            renum = np.cumsum(live_h) - 1
            by_tail = renum[by_tail[live_h[by_tail]]]
            hu, hv, hs, hlo = hu[live_h], hv[live_h], hs[live_h], hlo[live_h]
            live_h = np.ones(len(hu), bool)
            ptr = np.searchsorted(hu[by_tail], np.arange(n + 1))
        if r == 1:
            o = by_tail
        else:  # the dirty tails' arcs, by their ranges in by_tail (not a pass over every arc)
            tails = np.flatnonzero(dirty)
            o = by_tail[_ranges(ptr[tails], ptr[tails + 1])[0]]
        o = o[live_h[o]]
        rows = (hu[o], hlo[o], hs[o] - 1)
        sel = np.flatnonzero(live_i & dirty[iu])
        own, j = rest.overlapping(iv[sel], ix[sel], iy[sel])
        lo = np.maximum(np.maximum(rest.lo[j], ix[sel][own]) - 1, t_a)
        hi = np.minimum(rest.hi[j], iy[sel][own]) - 1
        keep = lo <= hi
        live_i[sel] = False
        live_i[sel[own[keep]]] = True
        if keep.any():
            inode, ilo, ihi = iu[sel][own[keep]], lo[keep], hi[keep]
            io = order(inode, ilo, pack)
            rows = _insert(rows, (inode[io], ilo[io], ihi[io]), pack)
        fresh = Spans.union(*rows, pack)
        new = (fresh.node, fresh.lo, np.minimum(fresh.hi, top))
        changed, first, last = _changed(rest, new, dirty, n)
        kept = ~dirty[rest.node]
        spans.append(Spans(*_insert((rest.node[kept], rest.lo[kept], rest.hi[kept]), new, pack), pack))
    raise AssertionError("unreachable: the loop returns at r = max_hops + 1")
