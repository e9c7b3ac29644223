"""The Allen-relation join behind ``co_active``: every pair (a, b) of two edge selections whose full valid
intervals stand in one of the 13 Allen relations, by (a, b) in scan order.

Each relation bounds b's start and/or end by a's (``_bounds``); with b sorted by start and by end, each a's
candidates are one run of either order (the shorter), checked against the other bounds. Joins bounded on
b's start only (before, meets) are never materialized: :class:`RunPairs` pages them on demand. A join past
``MAX_CANDIDATES`` candidate pairs stops with ``E_COST`` at run time (a deterministic count).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tgms.engine.errors import CostError
from tgms.engine.operators.edge_arrays import EdgeArrays

#: run-time stop (a deterministic count) for joins far beyond the estimate: ~2 s and ~1 GB at most; the
#: cost function refuses before running what its model puts at _REFUSE_FACTOR times that or more
MAX_CANDIDATES = 20_000_000


def _bounds(rel: str, s: np.ndarray, e: np.ndarray, gap: int | None = None) -> tuple[Any, Any, Any, Any]:
    """(bs_lo, bs_hi, be_lo, be_hi), inclusive, of the b that stand in ``rel`` to a = [s, e); None = open.
    ``gap`` (before/after only) bounds the idle time between the two: 0 < b.s - a.e <= gap (before),
    0 < a.s - b.e <= gap (after)."""
    table: dict[str, tuple[Any, Any, Any, Any]] = {
        "before": (e + 1, None if gap is None else e + gap, None, None),
        "after": (None, None, None if gap is None else s - gap, s - 1),
        "meets": (e, e, None, None),
        "met_by": (None, None, s, s),
        "overlaps": (s + 1, e - 1, e + 1, None),
        "overlapped_by": (None, s - 1, s + 1, e - 1),
        "starts": (s, s, e + 1, None),
        "started_by": (s, s, None, e - 1),
        "during": (None, s - 1, e + 1, None),
        "contains": (s + 1, None, None, e - 1),
        "finishes": (None, s - 1, e, e),
        "finished_by": (s + 1, None, e, e),
        "equals": (s, s, e, e),
    }
    return table[rel]


#: per relation (least |b| - |a|, greatest |b| - |a|, least length of either): a cheap pre-filter
_LENGTH_RULES: dict[str, tuple[int | None, int | None, int]] = {
    "during": (2, None, 1),
    "contains": (None, -2, 1),
    "starts": (1, None, 1),
    "finishes": (1, None, 1),
    "started_by": (None, -1, 1),
    "finished_by": (None, -1, 1),
    "equals": (0, 0, 1),
    "overlaps": (None, None, 2),
    "overlapped_by": (None, None, 2),
}


def _length_filter(rel: str, e: EdgeArrays, ia: np.ndarray, ib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rule = _LENGTH_RULES.get(rel)
    if rule is None or not len(ia) or not len(ib):
        return ia, ib
    dmin, dmax, least = rule
    la, lb = e.vt_e[ia] - e.vt_s[ia], e.vt_e[ib] - e.vt_s[ib]
    keep_a = la >= least
    if dmin is not None:
        keep_a &= la <= lb.max() - dmin
    if dmax is not None:
        keep_a &= la >= lb.min() - dmax
    ia, la = ia[keep_a], la[keep_a]
    if not len(ia):
        return ia, ib
    keep_b = lb >= least
    if dmin is not None:
        keep_b &= lb >= la.min() + dmin
    if dmax is not None:
        keep_b &= lb <= la.max() + dmax
    return ia, ib[keep_b]


def _runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ``arange(starts[i], ends[i])`` and the owner i of each element."""
    lens = np.maximum(ends - starts, 0)
    total = int(lens.sum())
    owner = np.repeat(np.arange(len(starts)), lens)
    if total == 0:
        return np.zeros(0, np.int64), owner
    offs = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) - np.repeat(offs - starts, lens), owner


def _in_bounds(v: np.ndarray, owner: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    keep = np.ones(len(v), bool)
    if lo is not None:
        keep &= v >= lo[owner]
    if hi is not None:
        keep &= v <= hi[owner]
    return keep


class ArrayPairs:
    """Join pairs held as two scan-position arrays."""

    def __init__(self, pos_a: np.ndarray, pos_b: np.ndarray) -> None:
        self._a, self._b = pos_a, pos_b

    def __len__(self) -> int:
        return len(self._a)

    def at(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._a[idx], self._b[idx]


class RunPairs:
    """Join pairs (ia[i], ib[j]) for j in [first[i], last[i]) except a self pair, by (i, j), never
    materialized: a page is located by binary search on the running counts. Used when every b of a run
    qualifies (relations bounded on b's start only: before, meets), where a join can hold 10^6+ pairs of
    which a call reads one page."""

    def __init__(
        self, ia: np.ndarray, ib: np.ndarray, first: np.ndarray, last: np.ndarray, self_j: np.ndarray
    ) -> None:
        self._ia, self._ib, self._first, self._self_j = ia, ib, first, self_j
        self._cnt = np.maximum(last - first, 0) - (self_j >= 0)
        self._cum = np.cumsum(self._cnt)

    def __len__(self) -> int:
        return int(self._cum[-1]) if len(self._cum) else 0

    def at(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx = np.asarray(idx, dtype=np.int64)
        i = np.searchsorted(self._cum, idx, "right")
        j = self._first[i] + idx - (self._cum[i] - self._cnt[i])
        sj = self._self_j[i]
        j = j + ((sj >= 0) & (j >= sj))
        return self._ia[i], self._ib[j]


Pairs = ArrayPairs | RunPairs


def allen_join(
    e: EdgeArrays, rel: str, ia: np.ndarray, ib: np.ndarray, gap: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Scan positions (pa, pb) of every a in ia, b in ib, pa != pb, allen(a, b) = rel (within ``gap`` for
    before/after); by (pa, pb)."""
    pairs = allen_pairs(e, rel, ia, ib, gap)
    return pairs.at(np.arange(len(pairs), dtype=np.int64))


def allen_pairs(e: EdgeArrays, rel: str, ia: np.ndarray, ib: np.ndarray, gap: int | None = None) -> Pairs:
    """The pairs of :func:`allen_join`, lazily where the relation allows it."""
    ia, ib = _length_filter(rel, e, ia, ib)
    if not len(ia) or not len(ib):
        return ArrayPairs(np.zeros(0, np.int64), np.zeros(0, np.int64))
    a_s, a_e = e.vt_s[ia], e.vt_e[ia]
    b_s, b_e = e.vt_s[ib], e.vt_e[ib]  # b_s ascending (scan order)
    by_end = np.argsort(b_e, kind="stable")
    b_e_sorted = b_e[by_end]
    s_lo, s_hi, e_lo, e_hi = _bounds(rel, a_s, a_e, gap)
    nb = len(ib)

    def run(sorted_vals: np.ndarray, lo: Any, hi: Any) -> tuple[np.ndarray, np.ndarray]:
        first = np.zeros(len(ia), np.int64) if lo is None else np.searchsorted(sorted_vals, lo, "left")
        last = np.full(len(ia), nb, np.int64) if hi is None else np.searchsorted(sorted_vals, hi, "right")
        return first, np.maximum(last, first)

    fs, ls = run(b_s, s_lo, s_hi)
    fe, le = run(b_e_sorted, e_lo, e_hi)
    use_s = (ls - fs) <= (le - fe)
    n_cand = int(np.where(use_s, ls - fs, le - fe).sum())
    if e_lo is None and e_hi is None and bool(use_s.all()):
        # every candidate of a start run qualifies: count the runs, build pages on demand
        _, ca, cb = np.intersect1d(ia, ib, assume_unique=True, return_indices=True)
        self_j = np.full(len(ia), -1, np.int64)
        inside = (cb >= fs[ca]) & (cb < ls[ca])
        self_j[ca[inside]] = cb[inside]
        return RunPairs(ia, ib, fs, ls, self_j)
    if n_cand > MAX_CANDIDATES:
        raise stopped("candidate pairs", n_cand, MAX_CANDIDATES)
    # Candidates from a run over b_s meet the start bounds by construction (and those over b_e the end
    # bounds), so each part checks only the other bounds, and self pairs (a = b) are dropped by locating
    # the few common positions: no per-candidate gathers of ia/ib (a "before" join of 6*10^5 pairs went
    # from 17 ms to a few).
    s_first, s_last = np.where(use_s, fs, 0), np.where(use_s, ls, 0)
    e_first, e_last = np.where(use_s, 0, fe), np.where(use_s, 0, le)
    ps, own_s = _runs(s_first, s_last)
    pe, own_e = _runs(e_first, e_last)
    pe_b = by_end[pe]
    keep_s = _in_bounds(b_e[ps], own_s, e_lo, e_hi)
    keep_e = _in_bounds(b_s[pe_b], own_e, s_lo, s_hi)
    _, ca, cb = np.intersect1d(ia, ib, assume_unique=True, return_indices=True)
    if len(ca):
        inv_end = np.empty(nb, np.int64)
        inv_end[by_end] = np.arange(nb)
        for first, last, at, keep in (
            (s_first, s_last, cb, keep_s),
            (e_first, e_last, inv_end[cb], keep_e),
        ):
            lens = np.maximum(last - first, 0)
            offs = np.cumsum(lens) - lens
            hit = (at >= first[ca]) & (at < last[ca])
            keep[(offs[ca] + at - first[ca])[hit]] = False
    cand_a = np.concatenate([own_s[keep_s], own_e[keep_e]])
    cand_b = np.concatenate([ps[keep_s], pe_b[keep_e]])
    if len(pe):
        order = np.lexsort((cand_b, cand_a))
        cand_a, cand_b = cand_a[order], cand_b[order]
    return ArrayPairs(ia[cand_a], ib[cand_b])


def stopped(what: str, n: int, limit: int) -> CostError:
    return CostError(
        f"co_active: {n:,} {what} exceed the run-time limit of {limit:,}; narrow the selections",
        op="co_active",
        limit=limit,
        found=n,
        suggestions=["add a window to a_spec or b_spec", "restrict a_spec.src or b_spec.src to fewer uids"],
    )
