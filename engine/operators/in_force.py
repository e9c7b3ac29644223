"""Edge versions in force at instants: the arrays graph_metric_timeseries' edge metrics read for a choice of
relationship types, and the peak per bucket (``peak_active_edge_count``, ``docs/operators.md`` §9).

A version is in force at ``t`` when ``vt_s <= t < vt_e``. Over a bucket ``[bs, be)`` the count changes only
where a version starts (up) or ends (down), so its largest value is reached at ``bs`` or at a start inside
``(bs, be)``: the peak is the larger of the count at ``bs`` and the counts at those starts, each
``#(vt_s <= t) − #(vt_e <= t)`` by binary search on sorted starts and ends. ``at`` is the first such
instant with the peak (``bs`` when the count there already is the peak, a zero peak included).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tgms.engine.operators.context import OpContext
from tgms.engine.operators.edge_arrays import EdgeArrays
from tgms.engine.operators.event_fields import rel_codes


@dataclass(frozen=True)
class InForce:
    """Sorted starts and sorted ends of the believed edge versions of the chosen types."""

    starts: np.ndarray
    ends: np.ndarray

    def at(self, t: np.ndarray) -> np.ndarray:
        """How many are in force at each instant of ``t``."""
        return np.searchsorted(self.starts, t, "right") - np.searchsorted(self.ends, t, "right")


def in_force(
    ctx: OpContext, e: EdgeArrays, as_of_tt: int | None, rel_types: list[str] | None, ends_sorted: np.ndarray
) -> InForce:
    """The versions of ``rel_types`` (every type: None); ``ends_sorted`` is every version's sorted ends
    (the metric index's, shared). The starts come sorted: ``vt_s`` is the scan order's first key."""
    if rel_types is None:
        return InForce(e.vt_s, ends_sorted)
    wanted = tuple(sorted(set(rel_types)))

    def build() -> InForce:
        codes, names = rel_codes(ctx, e, as_of_tt)
        known = np.array([i for i, name in enumerate(names) if name in wanted], dtype=np.int64)
        keep = np.isin(codes, known)
        return InForce(e.vt_s[keep], np.sort(e.vt_e[keep], kind="stable"))

    return ctx.cached(("in_force", as_of_tt, wanted), build)


def peaks(f: InForce, bs: np.ndarray, be: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per bucket ``[bs_i, be_i)`` (consecutive, ascending), the most versions in force at one instant of
    it and the first instant with that many."""
    value = f.at(bs)
    at = bs.copy()
    lo = np.searchsorted(f.starts, bs, "right")  # the starts inside (bs, be), per bucket
    hi = np.searchsorted(f.starts, be, "left")
    if not int((hi - lo).sum()):
        return value, at
    inside = f.starts[int(lo[0]) : int(hi[-1])]
    # equal starts give one instant: the count after all of them (the last in sorted order)
    last = np.r_[inside[1:] != inside[:-1], True]
    t = inside[last]
    count = f.at(t)
    bucket = np.searchsorted(be, t, "right")  # t < be of its own bucket, >= be of the one before
    seg = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])  # t ascending: buckets in runs
    top = np.full(len(bs), -1, np.int64)
    top[bucket[seg]] = np.maximum.reduceat(count, seg)
    higher = top > value
    value = np.where(higher, top, value)
    first = np.flatnonzero(count == value[bucket])  # ascending t: the first of a bucket comes first
    b, k = np.unique(bucket[first], return_index=True)
    use = higher[b]
    at[b[use]] = t[first[k[use]]]
    return value, at
