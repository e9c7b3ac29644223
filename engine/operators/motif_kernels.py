"""Counting and enumeration kernels of δ-temporal motifs over integer arrays (numpy only).

Input: the events of one call (window and node filter applied, self-loops dropped — no pattern edge joins a
variable to itself), as *positions* ``0..n-1`` in the total order ``(vt_s, eid, vid)``, with int64 ``s``,
``d`` (nids) and non-decreasing ``t``. ``hi[p]`` is the last position with ``t <= t[p] + δ``, so a triple of
positions ``p1 < p2 < p3`` is inside δ iff ``p3 <= hi[p1]``.

Every lookup is a binary search in a *group index*: the positions of the events of one group (a source
node, an ordered pair, an unordered pair) sorted by ``(group, position)`` as the int64 key
``group * n + position``. "Members of group g at positions in (a, b]" is the difference of two
``searchsorted`` calls. Counting never enumerates instances:

- ``M_2node_pingpong``: per unordered pair, events labelled by direction; for each first event i (label x)
  the pairs (j, k) in ``(i, R_i]`` with labels (not x, x) follow from prefix counts ``C_x`` and the prefix
  sums ``Q = Σ_{j ≤ ·, label ≠ x} C_x[j]``: ``(C_¬x[R] − C_¬x[i])·C_x[R] − (Q[R] − Q[i])``.
- ``M_star_out_3``: per source u, inclusion–exclusion over the three equalities of the leaves:
  ``good = T − E_12 − E_13 − E_23 + 2·E_123``, with T = Σ C(n_i, 2) (n_i = u's events in ``(i, R_i]``).
  E_12, E_13, E_123 are per first event i over the pair (u, d_i) with prefix sums of group ranks; E_23
  (the last two equal) is anchored on the *last* event k: the first events allowed by k form a suffix of
  u's events starting at L_k, so it is Σ over earlier same-pair j of ``rank(j) − L_k``.
- the triangles and ``M_path_3``: every 2-path ``u→v`` then ``v→w`` inside δ (a *wedge*, enumerated in
  vectorized chunks) closes by a range count over the third event's pair (cyclic: (w, u) after the wedge;
  acyclic_1 with the wedge as its 1st and 3rd event: (u, w) between them) or over w's out-events minus the
  pairs (w, v) and (w, u) (path). Work is O(n log n + wedges · log n).

Enumeration (find) walks first events in order: for each first event its second-event candidates (a group
range, filtered), for each such wedge the number of third events (group range counts minus excluded
pairs); only the wedges that hold the requested rank range are expanded to third events. So a page costs
the wedges up to its last row, not the whole result.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from tgms.engine.operators.sorting import stable_order

MOTIF_NAMES = ("M_triangle_cyclic", "M_triangle_acyclic_1", "M_2node_pingpong", "M_star_out_3", "M_path_3")
#: δ is clipped here so that ``t ± δ`` stays inside int64 for every time < 2**62
_DELTA_CAP = 1 << 62
_WEDGE_CHUNK = 1 << 20  # wedges per vectorized chunk (~100 MB of temporaries)
_I64 = np.int64


_SORT_QUERIES_MIN = 4096  # query batches at least this large are sorted before a binary search ...
_SORT_KEYS_MIN = 1 << 19  # ... into at least this many keys (4 MB: smaller arrays stay in cache)


def search(sorted_arr: np.ndarray, x: np.ndarray, side: str = "left") -> np.ndarray:
    """``np.searchsorted(sorted_arr, x, side)``, sorting large unsorted query batches first: NumPy's search
    walks sorted queries almost sequentially, random ones miss the cache at every level (10^6 random
    queries into 10^7 keys: 1.7 s; sorted first, argsort included: 0.24 s). Into a cache-sized array
    random queries are cheaper than the sort (CollegeMsg M_path_3: 107 ms unsorted, 177 ms sorted)."""
    x = np.asarray(x)
    if (
        x.ndim != 1
        or len(x) < _SORT_QUERIES_MIN
        or len(sorted_arr) < _SORT_KEYS_MIN
        or bool(np.all(x[1:] >= x[:-1]))
    ):
        return np.searchsorted(sorted_arr, x, side)  # type: ignore[call-overload]
    order = np.argsort(x)
    out = np.empty(len(x), dtype=np.intp)
    out[order] = np.searchsorted(sorted_arr, x[order], side)  # type: ignore[call-overload]
    return out


def dense(code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One stable sort of ``code``: (order, distinct codes ascending, dense id per element, ids in order)."""
    order = stable_order(code, int(code.max()) + 1) if len(code) else np.zeros(0, _I64)
    sc = code[order]
    new = np.ones(len(sc), dtype=bool)
    new[1:] = sc[1:] != sc[:-1]
    sorted_id = np.cumsum(new, dtype=_I64) - 1
    gid = np.empty(len(code), dtype=_I64)
    gid[order] = sorted_id
    return order, sc[new], gid, sorted_id


class Groups:
    """Positions of each group's events sorted by ``(group, position)``; ``order`` maps back."""

    def __init__(
        self, gid: np.ndarray, n: int, order: np.ndarray | None = None, sorted_gid: np.ndarray | None = None
    ) -> None:
        self.n = n
        if order is None:
            order = stable_order(gid, int(gid.max()) + 1) if len(gid) else np.zeros(0, _I64)
        self.order = order
        sg = gid[self.order] if sorted_gid is None else sorted_gid
        self.keys = sg.astype(_I64) * n + self.order
        self.rank = np.empty(n, dtype=_I64)  # index of each position in the sorted order
        self.rank[self.order] = np.arange(n, dtype=_I64)

    def upto(self, g: np.ndarray | int, p: np.ndarray | int) -> np.ndarray:
        """Sorted index just past the members of group g at positions <= p (groups < g included)."""
        q = np.asarray(g, dtype=_I64) * self.n + p
        return search(self.keys, q, "right") if q.ndim else np.searchsorted(self.keys, q, "right")

    def upto_own(self, gid: np.ndarray, p: np.ndarray) -> np.ndarray:
        """``upto(gid, p)`` for one query per position, where ``gid`` is each position's own group and ``p``
        is non-decreasing in position: in group order those queries are already sorted, so the search
        walks ``keys`` once instead of sorting 10^7 queries first."""
        res = np.empty(self.n, dtype=_I64)
        o = self.order
        res[o] = np.searchsorted(self.keys, gid[o].astype(_I64) * self.n + p[o], "right")
        return res

    def count(self, g: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Members of group g at positions in ``(a, b]`` (0 where ``b <= a``)."""
        return np.maximum(self.upto(g, b) - self.upto(g, a), 0)


class Pairs(Groups):
    """Groups by ordered pair ``(s, d)``; :meth:`lookup` maps node pairs to group ids (absent: empty)."""

    def __init__(self, s: np.ndarray, d: np.ndarray, n_nodes: int) -> None:
        self.n_nodes = n_nodes
        order, self.codes, self.pid, sorted_pid = dense(s * n_nodes + d)
        super().__init__(self.pid, len(s), order, sorted_pid)

    def lookup(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        code = x * self.n_nodes + y
        idx = search(self.codes, code)
        hit = np.zeros(len(code), dtype=bool)
        inside = idx < len(self.codes)
        hit[inside] = self.codes[idx[inside]] == code[inside]
        return np.where(hit, idx, len(self.codes))  # the sentinel group has no members


class PairFilter:
    """A one-hash bitmap of the ordered pairs that have events: ``maybe`` is never false for a present pair
    and rarely true for an absent one (table ≥ 64 slots per pair: ≤ 1.6 % false positives)."""

    def __init__(self, codes: np.ndarray, n_nodes: int) -> None:
        self.n_nodes = n_nodes
        bits = int(np.clip(np.ceil(np.log2(max(64 * len(codes), 1))), 10, 27))
        self.shift = np.uint64(64 - bits)
        self.table = np.zeros(1 << bits, dtype=bool)
        self.table[self._slot(codes)] = True

    def _slot(self, code: np.ndarray) -> np.ndarray:
        return ((code.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> self.shift).astype(np.intp)

    def maybe(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self.table[self._slot(x * self.n_nodes + y)]


@dataclass
class _Indexes:
    """The δ-independent group indexes of one set of events, built on first use, shared across δ."""

    out: Groups | None = None
    pairs: Pairs | None = None
    unordered: tuple[Groups, np.ndarray] | None = None  # (groups, group id by position)
    screen: PairFilter | None = None


@dataclass
class MotifEvents:
    """One call's events (see the module docstring) with lazily built group indexes."""

    s: np.ndarray
    d: np.ndarray
    t: np.ndarray
    delta: int
    n_nodes: int
    ix: _Indexes = field(default_factory=_Indexes)

    def __post_init__(self) -> None:
        self.n = len(self.t)
        self.pos = np.arange(self.n, dtype=_I64)
        dl = min(self.delta, _DELTA_CAP)
        self.hi = np.searchsorted(self.t, self.t + dl, "right").astype(_I64) - 1
        self._spans: tuple[np.ndarray, np.ndarray] | None = None

    def wedge_spans(self) -> tuple[np.ndarray, np.ndarray]:
        """(first sorted index, count) of the second events of every first event's in→out wedges (one
        pass of two searches; cached on this δ-specific view, so pricing the wedges then enumerating them
        searches once)."""
        if self._spans is None:
            out = self.out
            a = out.upto(self.d, self.pos)
            self._spans = (a, np.maximum(out.upto(self.d, self.hi) - a, 0))
        return self._spans

    def n_wedges(self) -> int:
        return int(self.wedge_spans()[1].sum(dtype=_I64))

    def with_delta(self, delta: int) -> MotifEvents:
        """The same events under another δ, sharing the (δ-independent) group indexes."""
        return MotifEvents(self.s, self.d, self.t, delta, self.n_nodes, self.ix)

    @property
    def out(self) -> Groups:
        """Groups by source node."""
        if self.ix.out is None:
            self.ix.out = Groups(self.s, self.n)
        return self.ix.out

    @property
    def pairs(self) -> Pairs:
        if self.ix.pairs is None:
            self.ix.pairs = Pairs(self.s, self.d, self.n_nodes)
        return self.ix.pairs

    @property
    def unordered(self) -> tuple[Groups, np.ndarray]:
        """Groups by unordered pair {s, d}, and the group of each position."""
        if self.ix.unordered is None:
            lo, hi = np.minimum(self.s, self.d), np.maximum(self.s, self.d)
            order, _, gid, sorted_gid = dense(lo * self.n_nodes + hi)
            self.ix.unordered = (Groups(gid, self.n, order, sorted_gid), gid)
        return self.ix.unordered

    @property
    def pair_filter(self) -> PairFilter:
        if self.ix.screen is None:
            self.ix.screen = PairFilter(self.pairs.codes, self.n_nodes)
        return self.ix.screen


def motif_events(src: np.ndarray, dst: np.ndarray, t: np.ndarray, delta: int, n_nodes: int) -> MotifEvents:
    return MotifEvents(
        src.astype(_I64, copy=False), dst.astype(_I64, copy=False), t.astype(_I64, copy=False), delta, n_nodes
    )


def _total(x: np.ndarray) -> int:
    """Exact sum of non-negative int64 terms (refuses a silent int64 overflow)."""
    total = int(x.sum(dtype=_I64)) if len(x) else 0
    if len(x) and float(x.sum(dtype=np.float64)) > 9.0e18:
        raise OverflowError("motif count exceeds int64")
    return total


# -- counting: closed forms -----------------------------------------------------------------------------


def count_pingpong(ev: MotifEvents) -> int:
    if ev.n < 3:
        return 0
    g, gid = ev.unordered
    lab = (ev.s < ev.d)[g.order].astype(_I64)  # direction label, in group order
    c1 = np.cumsum(lab)
    c0 = np.cumsum(1 - lab)
    q10 = np.cumsum((1 - lab) * c1)  # Σ over label-0 events of C1
    q01 = np.cumsum(lab * c0)
    q = np.arange(ev.n)
    r = g.upto(gid[g.order], ev.hi[g.order]) - 1  # last member of the group inside δ of q
    first1 = (c0[r] - c0[q]) * c1[r] - (q10[r] - q10[q])
    first0 = (c1[r] - c1[q]) * c0[r] - (q01[r] - q01[q])
    return _total(np.where(lab == 1, first1, first0))


def count_star(ev: MotifEvents) -> int:
    if ev.n < 3:
        return 0
    out, pairs = ev.out, ev.pairs
    uq = out.rank  # rank of each position in source order
    r = out.upto_own(ev.s, ev.hi) - 1  # last of u's events inside δ of the first event (a rank)
    ni = r - uq
    total = ni * (ni - 1) // 2
    u_of_z = uq[pairs.order]  # source rank of each pair-ordered event
    sux = np.concatenate([[0], np.cumsum(u_of_z)])
    z = pairs.rank
    zz = pairs.upto_own(pairs.pid, ev.hi) - 1  # last same-pair event inside δ
    c = zz - z
    sum_u = sux[zz + 1] - sux[z + 1]
    e12 = c * r - sum_u  # 2nd leaf = 1st leaf: Σ_j (R − rank j)
    e13 = sum_u - c * (uq + 1)  # 3rd = 1st: Σ_k (rank k − rank i − 1)
    e123 = c * (c - 1) // 2
    # 2nd = 3rd, anchored on the last event k: first events are u's events at positions >= lo_k
    lo = np.searchsorted(ev.t, ev.t - min(ev.delta, _DELTA_CAP), "left").astype(_I64)
    lq = out.upto_own(ev.s, lo - 1)  # rank of u's first event at a position >= lo_k
    y = pairs.upto_own(pairs.pid, lo - 1)  # first same-pair event at a position >= lo_k
    e23 = (sux[z] - sux[y]) - (z - y) * lq
    good = total - e12 - e13 - e23 + 2 * e123
    return _total(good)


# -- counting: wedges -----------------------------------------------------------------------------------


def wedges(
    ev: MotifEvents,
    groups: Groups,
    gid: np.ndarray,
    first: np.ndarray | None = None,
    chunk: int | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(i, j) position pairs: for each first event i (all, or ``first``, ascending) every member j of its
    group (``gid``, one per first event) at a position in ``(i, hi[i]]``, in (i, j) order, in chunks of
    about ``chunk`` pairs."""
    chunk = chunk or _WEDGE_CHUNK
    ii = ev.pos if first is None else first
    if first is None and groups is ev.out and gid is ev.d:
        a, length = ev.wedge_spans()
    else:
        a = groups.upto(gid, ii)
        length = np.maximum(groups.upto(gid, ev.hi[ii]) - a, 0)
    cum = np.concatenate([[0], np.cumsum(length)])
    start = 0
    while start < len(ii):
        stop = int(np.searchsorted(cum, cum[start] + chunk, "right")) - 1
        stop = max(stop, start + 1)
        ln = length[start:stop]
        w = int(cum[stop] - cum[start])
        if w:
            rep_i = np.repeat(ii[start:stop], ln)
            base = np.repeat(a[start:stop] - (cum[start:stop] - cum[start]), ln)
            yield rep_i, groups.order[base + np.arange(w, dtype=_I64)]
        start = stop


def count_wedge_motif(ev: MotifEvents, motif: str) -> dict[str, int]:
    """``M_triangle_cyclic``, ``M_triangle_acyclic_1``, ``M_path_3`` over in→out wedges u→v, v→w.

    A closing pair must exist, so wedges are first screened with :class:`PairFilter` (no false negatives)
    and only the survivors are looked up exactly (u = w needs no test: there is no pair (u, u)).
    ``M_path_3`` = Σ over wedges with u ≠ w of w's out-events in ``(j, hi_i]`` minus those to v (the pair
    reversing j) minus those to u (the cyclic triangles, returned too); the ``upto(·, j)`` halves of the
    first two terms depend on j only and are summed per second event. Returns {motif: count, ...}."""
    if ev.n < 3:
        return {motif: 0} | ({"M_triangle_cyclic": 0} if motif == "M_path_3" else {})
    out, pairs, screen = ev.out, ev.pairs, ev.pair_filter
    path = motif == "M_path_3"
    raw = cyc = 0
    per_j = np.zeros(ev.n, dtype=_I64)  # path: wedges (u ≠ w) by second event
    rev = pairs.lookup(ev.d, ev.s) if path else per_j  # path: pair (w, v) reversing each event
    for i, j in wedges(ev, out, ev.d):
        u, w = ev.s[i], ev.d[j]
        if motif == "M_triangle_acyclic_1":  # the wedge is events 1 and 3; event 2 is u→w between them
            hit = screen.maybe(u, w)
            cyc += _total(pairs.count(pairs.lookup(u[hit], w[hit]), i[hit], j[hit] - 1))
            continue
        hit = screen.maybe(w, u)  # cyclic (also the last term of path): w→u after j, inside δ of i
        cyc += _total(pairs.count(pairs.lookup(w[hit], u[hit]), j[hit], ev.hi[i[hit]]))
        if path:
            keep = u != w
            i, j, w = i[keep], j[keep], w[keep]
            h = ev.hi[i]
            raw += _total(out.upto(w, h)) - _total(pairs.upto(rev[j], h))
            per_j += np.bincount(j, minlength=ev.n)
    if not path:
        return {motif: cyc}
    raw -= int(np.dot(per_j, out.upto(ev.d, ev.pos) - pairs.upto(rev, ev.pos)))
    return {"M_path_3": raw - cyc, "M_triangle_cyclic": cyc}


def count_motifs(ev: MotifEvents, motif: str) -> dict[str, int]:
    """The count of ``motif``, and of any other motif the same pass computed."""
    if motif == "M_2node_pingpong":
        return {motif: count_pingpong(ev)}
    if motif == "M_star_out_3":
        return {motif: count_star(ev)}
    return count_wedge_motif(ev, motif)


def count_motif(ev: MotifEvents, motif: str) -> int:
    return count_motifs(ev, motif)[motif]


# -- enumeration ----------------------------------------------------------------------------------------


def _second(ev: MotifEvents, motif: str, first: np.ndarray) -> tuple[Groups, np.ndarray]:
    """The group index holding the second-event candidates of each first event (u→v), and their group."""
    if motif in ("M_triangle_cyclic", "M_path_3"):
        return ev.out, ev.d[first]  # j = v→w
    if motif in ("M_triangle_acyclic_1", "M_star_out_3"):
        return ev.out, ev.s[first]  # j = u→w
    return ev.pairs, ev.pairs.lookup(ev.d[first], ev.s[first])  # pingpong: j = v→u


_Third = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]


def _third(ev: MotifEvents, motif: str, i: np.ndarray, j: np.ndarray) -> _Third:
    """Wedges that can match and, per wedge, the third event's group index, group id and excluded pairs:
    (i, j, groups-is-out, gid, excl_a, excl_b) with excl = pair group ids whose events are not allowed."""
    u, v, w = ev.s[i], ev.d[i], ev.d[j]
    pairs = ev.pairs
    if motif == "M_triangle_cyclic":
        keep = u != w
        gid = pairs.lookup(w[keep], u[keep])
    elif motif == "M_triangle_acyclic_1":
        keep = w != v
        gid = pairs.lookup(v[keep], w[keep])
    elif motif == "M_2node_pingpong":
        keep = np.ones(len(i), dtype=bool)
        gid = pairs.lookup(u, v)
    elif motif == "M_star_out_3":
        keep = w != v
        gid = u[keep]
        return i[keep], j[keep], gid, pairs.lookup(u[keep], v[keep]), pairs.lookup(u[keep], w[keep])
    else:  # M_path_3
        keep = u != w
        gid = w[keep]
        return i[keep], j[keep], gid, pairs.lookup(w[keep], v[keep]), pairs.lookup(w[keep], u[keep])
    return i[keep], j[keep], gid, None, None


def _third_counts(ev: MotifEvents, t: _Third) -> np.ndarray:
    i, j, gid, xa, xb = t
    h = ev.hi[i]
    if xa is None or xb is None:  # both or neither (_third)
        return ev.pairs.count(gid, j, h)
    return ev.out.count(gid, j, h) - ev.pairs.count(xa, j, h) - ev.pairs.count(xb, j, h)


def enumerate_instances(ev: MotifEvents, motif: str, start: int, stop: int) -> np.ndarray:
    """Instances of rank ``start .. stop-1`` in contract order, as an ``(m, 3)`` array of positions."""
    out_rows: list[np.ndarray] = []
    if ev.n < 3 or stop <= start:
        return np.zeros((0, 3), dtype=_I64)
    seen = 0  # instances before the current chunk
    chunk = 1 << 15
    first = 0
    while first < ev.n and seen < stop:
        # a block of first events whose wedges number about ``chunk``; blocks grow as the scan goes on
        block = ev.pos[first : min(ev.n, first + max(64, chunk // 8))]
        first += len(block)
        chunk = min(chunk * 2, _WEDGE_CHUNK)
        groups, gid = _second(ev, motif, block)
        for i, j in wedges(ev, groups, gid, first=block):
            t = _third(ev, motif, i, j)
            cnt = _third_counts(ev, t)
            cum = np.cumsum(cnt)
            n_here = int(cum[-1]) if len(cum) else 0
            if seen + n_here <= start:
                seen += n_here
                continue
            # wedges holding ranks [start, stop): from the one containing `start` to the one containing stop-1
            w0 = int(np.searchsorted(cum, start - seen, "right"))
            w1 = int(np.searchsorted(cum, stop - 1 - seen, "right")) + 1
            w1 = min(w1, len(cum))
            sel = slice(w0, w1)
            rows = _expand(ev, _cut(t, sel))
            base = seen + (int(cum[w0 - 1]) if w0 > 0 else 0)
            lo_r, hi_r = max(start - base, 0), min(stop - base, len(rows))
            out_rows.append(rows[lo_r:hi_r])
            seen += n_here
            if seen >= stop:
                break
    return np.concatenate(out_rows) if out_rows else np.zeros((0, 3), dtype=_I64)


def _cut(t: _Third, sel: slice) -> _Third:
    i, j, gid, xa, xb = t
    return i[sel], j[sel], gid[sel], None if xa is None else xa[sel], None if xb is None else xb[sel]


def _expand(ev: MotifEvents, t: _Third) -> np.ndarray:
    """Every (i, j, k) of the given wedges, in order."""
    i, j, gid, xa, xb = t
    groups: Groups = ev.pairs if xa is None else ev.out
    a = groups.upto(gid, j)
    ln = np.maximum(groups.upto(gid, ev.hi[i]) - a, 0)
    total = int(ln.sum())
    cum = np.concatenate([[0], np.cumsum(ln)])
    k = groups.order[np.repeat(a - cum[:-1], ln) + np.arange(total, dtype=_I64)]
    ri, rj = np.repeat(i, ln), np.repeat(j, ln)
    if xa is not None:
        assert xb is not None
        pk = ev.pairs.pid[k]
        ok = (pk != np.repeat(xa, ln)) & (pk != np.repeat(xb, ln))
        ri, rj, k = ri[ok], rj[ok], k[ok]
    return np.stack([ri, rj, k], axis=1)
