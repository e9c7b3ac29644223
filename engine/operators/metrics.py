"""Bucketed statistics (O8): graph_metric_timeseries (``docs/operators.md`` §9); the bucket grid and the
event-count series that burst_detection (``engine.operators.burst``) scores.

Fast path: every series is computed for all buckets at once in numpy from arrays derived once per belief
state (:class:`MetricIndex`, one context cache slot, each part built on first use):

- ``edge_event_count`` / the burst series: binary searches on the scan-sorted ``vt_s``;
- ``active_edge_count`` / ``node_count`` at a bucket start ``bs``: ``#(vt_s <= bs) − #(vt_e <= bs)`` over
  sorted starts and ends (node versions of one uid are disjoint, invariant 1, so a uid counts once);
- ``new_node_rate``: sorted per-uid first appearances;
- ``mean_out_degree``: distinct pairs (resp. endpoints) active in a bucket = a coverage count over bucket
  ranges grouped by pair (resp. uid), the groups pre-sorted so a query needs no sort;
- ``reciprocity``: per edge version the previous version of the same directed pair and the
  previous/next version of the reverse pair (scan positions), so "first of its pair in the bucket" and
  "reverse pair in the bucket" are comparisons against the bucket's scan range.

Arithmetic is exact: ``fractions.Fraction`` only on the final per-bucket numbers, integer sums for the
z-score. Integer nids inside; uids never appear in these payloads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Annotated, Any

import numpy as np
from pydantic import Field, model_validator

from tgms.engine.canonical import canon_float
from tgms.engine.errors import InvalidArgError
from tgms.engine.operators.base import (
    MAX_BUCKETS,
    MAX_LIST,
    Model,
    OneOf,
    OpArgs,
    PagedOutput,
    Window,
    dedupe,
)
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import DEFAULT_BUDGET_S, CostEstimate, StoreProfile
from tgms.engine.operators.edge_arrays import EdgeArrays
from tgms.engine.operators.in_force import in_force, peaks
from tgms.engine.operators.registry import operator
from tgms.engine.operators.traits import EventWindow, Traits, When
from tgms.engine.operators.units import Unit, UnitEnv, UnitResult, list_of, obj, scalar

METRICS = (
    "node_count",
    "active_edge_count",
    "mean_out_degree",
    "edge_event_count",
    "new_node_rate",
    "reciprocity",
    "peak_active_edge_count",
)
#: the metrics that count edge versions one by one, so ``rel_types`` can choose which
REL_METRICS = ("active_edge_count", "edge_event_count", "peak_active_edge_count")
#: the metrics computed from the events starting in each bucket (new nodes are first seen in an event):
#: over a window without events every bucket is zero, whatever the data
EVENT_METRICS = ("edge_event_count", "new_node_rate", "reciprocity")
METHODS = ("zscore", "ratio")
_I64_MAX = np.iinfo(np.int64).max


# -- buckets --------------------------------------------------------------------------------------------


def n_buckets(t_a: int, t_b: int, stride: int) -> int:
    return -(-(t_b - t_a) // stride)


def check_buckets(t_a: int, t_b: int, stride: int, field: str = "stride") -> None:
    """More than 2,000 buckets -> E_INVALID_ARG naming the least stride that fits (docs §1)."""
    n = n_buckets(t_a, t_b, stride)
    if n > MAX_BUCKETS:
        min_stride = -(-(t_b - t_a) // MAX_BUCKETS)
        raise InvalidArgError(
            f"{n} buckets exceed the limit of {MAX_BUCKETS}; use stride >= {min_stride}",
            field=field,
            n_buckets=n,
            max_buckets=MAX_BUCKETS,
            min_stride=min_stride,
        )


@dataclass(frozen=True)
class Grid:
    """Buckets ``[bs_i, be_i)`` of ``[t_a, t_b)``; the last may be shorter."""

    t_a: int
    t_b: int
    stride: int  # min(stride, t_b - t_a): the same buckets, and always an int64
    bs: np.ndarray
    be: np.ndarray

    @property
    def n(self) -> int:
        return len(self.bs)

    def ranges(self, vs: np.ndarray, ve: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First and last bucket overlapped by each interval ``[vs, ve)``; all must overlap the grid."""
        lo = (np.maximum(vs, self.t_a) - self.t_a) // self.stride
        hi = np.minimum((ve - 1 - self.t_a) // self.stride, self.n - 1)
        return lo, hi

    def rows(self, values: list[Any], key: str = "value") -> list[dict[str, Any]]:
        return [
            {"t_a": s, "t_b": e, key: v}
            for s, e, v in zip(self.bs.tolist(), self.be.tolist(), values, strict=True)
        ]


def grid(t_a: int, t_b: int, stride: int) -> Grid:
    n = n_buckets(t_a, t_b, stride)
    bs = [t_a + i * stride for i in range(n)]
    be = [*bs[1:], t_b]  # bs_i + stride = bs_{i+1} < t_b; the last bucket ends at t_b
    return Grid(t_a, t_b, min(stride, t_b - t_a), np.array(bs, np.int64), np.array(be, np.int64))


def _coverage_diff(
    gid: np.ndarray, lo: np.ndarray, hi: np.ndarray, n: int, carry: int
) -> tuple[np.ndarray, int]:
    """Difference array of :func:`coverage` for one run of rows, and the running max to carry on.

    Rows are sorted by ``(gid, lo)``. A row adds only what the earlier rows of its group do not cover yet:
    they all start at or before it, so their union from ``lo`` on is ``[lo, running max of hi]``. The
    running max runs over ``gid·(n+1) + hi``; taken relative to the row's own group it is negative when it
    comes from an earlier group (nothing covered yet)."""
    base = gid.astype(np.int64) * (n + 1)
    acc = np.maximum.accumulate(base + hi)
    np.maximum(acc, carry, out=acc)
    start = np.empty_like(lo)
    start[0] = max(int(lo[0]), carry - int(base[0]) + 1)
    np.maximum(lo[1:], acc[:-1] - base[1:] + 1, out=start[1:])
    end = np.maximum(hi + 1, start)  # a row adding nothing gets +1 and -1 in the same slot
    return np.bincount(start, minlength=n + 1) - np.bincount(end, minlength=n + 1), int(acc[-1])


_CHUNK = 1 << 20  # rows per pass: keeps the temporaries of a pass in cache


def coverage(gid: np.ndarray, vs: np.ndarray, ve: np.ndarray, g: Grid) -> np.ndarray:
    """Per bucket, the number of distinct groups with an interval ``[vs, ve)`` overlapping it; rows sorted
    by ``(gid, vs)``. Done in chunks that carry the running max."""
    diff = np.zeros(g.n + 1, np.int64)
    carry = -1
    for c in range(0, len(gid), _CHUNK):
        cs, ce, cg = vs[c : c + _CHUNK], ve[c : c + _CHUNK], gid[c : c + _CHUNK]
        m = (cs < g.t_b) & (ce > g.t_a)
        if not m.all():
            cs, ce, cg = cs[m], ce[m], cg[m]
        if len(cg):
            lo, hi = g.ranges(cs, ce)
            part, carry = _coverage_diff(cg, lo, hi, g.n, carry)
            diff += part
    return np.cumsum(diff[: g.n])


def exact(q: Fraction) -> int | float:
    return int(q) if q.denominator == 1 else canon_float(float(q))


def ratio(num: int, den: int) -> int | float:
    """``num / den`` exactly (0 when den is 0, the metric-series convention)."""
    if den == 0:
        return 0
    return num // den if num % den == 0 else canon_float(float(Fraction(num, den)))


# -- per-belief-state index -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Groups:
    """Intervals grouped by an integer id, sorted by (gid, vt_s)."""

    gid: np.ndarray
    vs: np.ndarray
    ve: np.ndarray


def _group_sort(group: np.ndarray, rank: np.ndarray, n_rank: int) -> tuple[np.ndarray, ...]:
    """Sort distinct (group >= 0, 0 <= rank < n_rank) pairs by group, then rank: (groups, ranks)."""
    g = group.astype(np.int64)
    n_groups = int(g.max()) + 1 if len(g) else 0
    if n_groups <= _I64_MAX // max(1, n_rank) - 1:
        comp = np.sort(g * n_rank + rank)  # one value sort of distinct keys: faster than a stable argsort
        groups = comp // n_rank
        return groups, comp - groups * n_rank
    order = np.lexsort((rank, g))
    return g[order], rank[order]


class MetricIndex:
    """Arrays derived from one belief state's edges and nodes, each built on first use."""

    def __init__(self, ctx: OpContext, as_of_tt: int | None) -> None:
        self.e: EdgeArrays = ctx.edges(as_of_tt)
        self._ctx = ctx
        self._as_of_tt = as_of_tt
        self.n_uids = len(ctx.uids())

    @cached_property
    def vt_e_sorted(self) -> np.ndarray:
        return np.sort(self.e.vt_e, kind="stable")  # nearly sorted already (events end at vt_s + 1)

    @cached_property
    def node_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted starts and ends of the per-uid union of believed node-version intervals."""
        t = self._ctx.nodes(self._as_of_tt)
        nid, vs, ve = (t[c].to_numpy().astype(np.int64) for c in ("nid", "vt_s", "vt_e"))
        order = np.lexsort((vs, nid))
        nid, vs, ve = nid[order], vs[order], ve[order]
        same = nid[1:] == nid[:-1]
        if np.any(same & (ve[:-1] > vs[1:])):  # overlapping versions of one uid (never, by invariant 1)
            merged: list[list[int]] = []
            for u, s, t in zip(nid.tolist(), vs.tolist(), ve.tolist(), strict=True):
                if merged and merged[-1][0] == u and s <= merged[-1][2]:
                    merged[-1][2] = max(merged[-1][2], t)
                else:
                    merged.append([u, s, t])
            vs, ve = (np.array([m[i] for m in merged], np.int64) for i in (1, 2))
        return np.sort(vs), np.sort(ve)

    @cached_property
    def first_seen(self) -> np.ndarray:
        """Sorted first appearance (least vt_s over node and edge versions) of every known uid."""
        first = np.full(self.n_uids, _I64_MAX, np.int64)
        np.minimum.at(first, self.e.src, self.e.vt_s)
        np.minimum.at(first, self.e.dst, self.e.vt_s)
        t = self._ctx.nodes(self._as_of_tt)
        np.minimum.at(first, t["nid"].to_numpy(), t["vt_s"].to_numpy())
        return np.sort(first[first < _I64_MAX])

    @cached_property
    def reciprocity_links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per edge version (scan order): scan position of the previous version of the same directed pair
        (loops: never a pair), of the previous and of the next version of the reverse pair (none: -1 for a
        previous one, int64 max for a next one and for loops)."""
        e, n = self.e, self.e.n
        none_prev = np.full(n, -1, np.int64)
        prev_same = np.full(n, _I64_MAX, np.int64)
        prev_rev, next_rev = none_prev.copy(), np.full(n, _I64_MAX, np.int64)
        nl = np.flatnonzero(e.src != e.dst)
        if len(nl) == 0:
            return prev_same, prev_rev, next_rev
        s, d = e.src[nl].astype(np.int64), e.dst[nl].astype(np.int64)
        ukey = np.minimum(s, d) * self.n_uids + np.maximum(s, d)  # the unordered pair
        uk, order = _group_sort(ukey, nl, n)
        up = e.src[order] > e.dst[order]  # direction inside the unordered pair
        m = len(order)
        pos = np.arange(m)
        head = np.ones(m, bool)
        head[1:] = uk[1:] != uk[:-1]
        g_start = np.maximum.accumulate(np.where(head, pos, 0))
        tail = np.ones(m, bool)
        tail[:-1] = head[1:]
        g_end = np.minimum.accumulate(np.where(tail, pos, m)[::-1])[::-1]  # last position of the group

        def before(mask: np.ndarray) -> np.ndarray:  # last position < p with mask, inside p's group
            last = np.maximum.accumulate(np.where(mask, pos, -1))
            out = np.full(m, -1, np.int64)
            out[1:] = last[:-1]
            out[out < g_start] = -1
            return out

        def after(mask: np.ndarray) -> np.ndarray:  # first position > p with mask, inside p's group
            nxt = np.minimum.accumulate(np.where(mask, pos, m)[::-1])[::-1]
            out = np.full(m, m, np.int64)
            out[:-1] = nxt[1:]
            out[out > g_end] = m
            return out

        b_up, b_down = before(up), before(~up)
        a_up, a_down = after(up), after(~up)
        order_x = np.append(order, _I64_MAX)  # position m (none) -> "never in a bucket"
        order_p = np.append(order, -1)  # position -1 (none) -> "before every bucket"
        prev_same[order] = order_p[np.where(up, b_up, b_down)]
        prev_rev[order] = order_p[np.where(up, b_down, b_up)]
        next_rev[order] = order_x[np.where(up, a_down, a_up)]
        return prev_same, prev_rev, next_rev

    @cached_property
    def pair_groups(self) -> Groups:
        """Non-loop edge versions grouped by directed pair, by vt_s inside a group."""
        e = self.e
        nl = np.flatnonzero(e.src != e.dst)
        key = e.src[nl].astype(np.int64) * self.n_uids + e.dst[nl]
        pk, idx = _group_sort(key, nl, e.n)
        gid = np.zeros(len(pk), np.int64)
        if len(pk):
            gid[1:] = np.cumsum(pk[1:] != pk[:-1])
        return Groups(gid, e.vt_s[idx], e.vt_e[idx])

    @cached_property
    def endpoint_groups(self) -> Groups:
        """Both endpoints of every non-loop edge version, grouped by uid, by vt_s inside a group."""
        e = self.e
        nl = np.flatnonzero(e.src != e.dst)
        ep = np.concatenate([e.src[nl], e.dst[nl]])
        g, idx = _group_sort(ep, np.concatenate([nl, nl]), e.n)
        return Groups(g, e.vt_s[idx], e.vt_e[idx])


def metric_index(ctx: OpContext, as_of_tt: int | None) -> MetricIndex:
    return ctx.cached(("metric_index", as_of_tt), lambda: MetricIndex(ctx, as_of_tt))


def event_counts(vt_s: np.ndarray, g: Grid) -> np.ndarray:
    """Versions with ``bs <= vt_s < be`` per bucket (``vt_s`` sorted)."""
    return np.searchsorted(vt_s, g.be, "left") - np.searchsorted(vt_s, g.bs, "left")


def _valid_at_starts(starts: np.ndarray, ends: np.ndarray, g: Grid) -> np.ndarray:
    return np.searchsorted(starts, g.bs, "right") - np.searchsorted(ends, g.bs, "right")


def _reciprocity(ix: MetricIndex, g: Grid) -> list[int | float]:
    vt_s = ix.e.vt_s
    first_pos = np.searchsorted(vt_s, g.bs, "left")  # the bucket's scan range [first_pos, end_pos)
    end_pos = np.searchsorted(vt_s, g.be, "left")
    r_a, r_b = int(first_pos[0]), int(end_pos[-1])
    counts = end_pos - first_pos
    bucket = np.repeat(np.arange(g.n), counts)
    lo, hi = np.repeat(first_pos, counts), np.repeat(end_pos, counts)
    prev_same, prev_rev, next_rev = (x[r_a:r_b] for x in ix.reciprocity_links)
    first = prev_same < lo  # first version of its directed pair in the bucket (loops never)
    mutual = first & ((prev_rev >= lo) | (next_rev < hi))
    pairs = np.bincount(bucket[first], minlength=g.n).tolist()
    recip = np.bincount(bucket[mutual], minlength=g.n).tolist()
    return [ratio(r, p) for r, p in zip(recip, pairs, strict=True)]


def metric_series(
    ctx: OpContext, as_of_tt: int | None, metric: str, g: Grid, rel_types: list[str] | None = None
) -> list[int | float]:
    ix = metric_index(ctx, as_of_tt)
    if metric in ("active_edge_count", "edge_event_count"):  # the peak has its own rows (graph_metric_...)
        f = in_force(ctx, ix.e, as_of_tt, rel_types, ix.vt_e_sorted)
        return (event_counts(f.starts, g) if metric == "edge_event_count" else f.at(g.bs)).tolist()
    if metric == "node_count":
        return _valid_at_starts(*ix.node_bounds, g).tolist()
    if metric == "new_node_rate":
        return event_counts(ix.first_seen, g).tolist()
    if metric == "mean_out_degree":
        p, v = ix.pair_groups, ix.endpoint_groups
        pairs, ends = coverage(p.gid, p.vs, p.ve, g).tolist(), coverage(v.gid, v.vs, v.ve, g).tolist()
        return [ratio(p, v) for p, v in zip(pairs, ends, strict=True)]
    return _reciprocity(ix, g)


# -- graph_metric_timeseries ----------------------------------------------------------------------------


class MetricArgs(OpArgs):
    metric: Annotated[str, OneOf(METRICS)]
    window: Annotated[Window, EventWindow(When("metric", EVENT_METRICS))]
    # no descriptions: the manual says what a bucket is and which metrics take rel_types, and the
    # planner's compact manual (models/manual.py) has no room to say it twice
    stride: Annotated[int, Field(ge=1)]
    rel_types: Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=MAX_LIST)] | None = None

    @model_validator(mode="after")
    def _check_buckets(self) -> MetricArgs:
        check_buckets(self.window.t_a, self.window.t_b, self.stride)
        if self.rel_types is not None and self.metric not in REL_METRICS:
            raise InvalidArgError(
                f"rel_types applies to the metrics {list(REL_METRICS)}, not {self.metric}",
                field="rel_types",
                metric=self.metric,
                allowed=list(REL_METRICS),
            )
        return self


class MetricRow(Model):
    t_a: int
    t_b: int
    value: int | float
    at: Annotated[
        int | None,
        Field(description="peak_active_edge_count only: the bucket's first instant with `value` in force"),
    ] = None


class MetricOut(PagedOutput):
    rows: list[MetricRow]
    rows_total: int
    n_buckets: int


#: build cost of the cached parts, in scan_row units (2e-7 s) per edge version
#: (pipeline/bench/metrics_bench.py)
_BUILD = {
    "edge_event_count": 0.0,
    "active_edge_count": 0.1,
    "peak_active_edge_count": 0.1,
    "node_count": 0.0,
    "new_node_rate": 0.1,
    "reciprocity": 3.0,
    "mean_out_degree": 4.0,
}
#: per-query cost in scan_row units per edge version touched (reciprocity: events in the window;
#: mean_out_degree: every version, three passes; others: binary searches only)
_QUERY = {"reciprocity": 0.1, "mean_out_degree": 0.5, "peak_active_edge_count": 0.2}


def _metric_work(
    p: StoreProfile, metric: str, t_a: int, t_b: int, n: int, rel_types: bool = False
) -> dict[str, float]:
    scanned = p.events_in(t_a, t_b) if metric in ("reciprocity", "peak_active_edge_count") else p.n_edges
    work = {
        # rel_types: one pass choosing the versions and a sort of their ends (then cached)
        "scan_row": (_BUILD[metric] + 0.5 * rel_types) * p.n_edges + _QUERY.get(metric, 0.0) * scanned,
        "bucket_row": 40.0 * n,
        "row_out": 0.25 * n,
    }
    if metric in ("node_count", "new_node_rate"):
        work["scan_row"] += 2.0 * p.n_nodes
    return work


def _metric_cost(p: StoreProfile, a: MetricArgs) -> CostEstimate:
    t_a, t_b = a.window.t_a, a.window.t_b
    n = n_buckets(t_a, t_b, a.stride)
    est = CostEstimate(_metric_work(p, a.metric, t_a, t_b, n, a.rel_types is not None))
    if est.seconds <= DEFAULT_BUDGET_S:
        return est
    # the cost is mostly the one-off index of the belief state (~ store size): a narrower window hardly helps
    cheap = [m for m in METRICS if CostEstimate(_metric_work(p, m, t_a, t_b, n)).seconds <= DEFAULT_BUDGET_S]
    est.suggestions.append(f"use metric {' or '.join(repr(m) for m in cheap)} (cheaper on this store)")
    return est


def metric_units(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    """A bucket's value is a count, except the two ratio metrics."""
    del env
    metric = args.get("metric")
    unit = Unit.RATIO if metric in ("mean_out_degree", "reciprocity") else Unit.COUNT
    if metric not in METRICS:
        unit = Unit.VALUE
    row = obj(t_a=scalar(Unit.TIME), t_b=scalar(Unit.TIME), value=scalar(unit), at=scalar(Unit.TIME))
    return UnitResult(obj(rows=list_of(row), rows_total=scalar(Unit.COUNT), n_buckets=scalar(Unit.COUNT)))


@operator(
    name="graph_metric_timeseries",
    family="metrics",
    traits=Traits(
        units=metric_units,
        units_doc="rows[*].value is a count, except mean_out_degree and reciprocity (ratios)",
    ),
    args=MetricArgs,
    output=MetricOut,
    cost=_metric_cost,
    manual=(
        "Returns one value per bucket [t_a + i*stride, ...) of the window. At most 2,000 buckets (the last "
        "may be shorter) come as `rows` {t_a, t_b, value}, every bucket included: node_count and "
        "active_edge_count are the uids with a node version and the edge versions valid at the bucket "
        "start; edge_event_count counts edge versions starting in the bucket; new_node_rate counts uids "
        "whose first appearance (node or edge) falls in it; mean_out_degree is distinct directed pairs "
        "(no self-loops) of edge versions overlapping the bucket divided by the uids they connect; "
        "reciprocity is the share of distinct directed pairs starting in the bucket whose reverse also "
        "starts in it; peak_active_edge_count is the most edge versions valid at one instant of the bucket, "
        "with `at` the first instant with that many (a row's `at` is given by this metric only). "
        "`rel_types` counts only edge versions of those types (active_edge_count, edge_event_count, "
        "peak_active_edge_count). Ratios are exact, 0 when the denominator is 0."
    ),
    example={
        "args": {
            "metric": "edge_event_count",
            "window": {"t_a": 1082000000000000, "t_b": 1082604800000000},
            "stride": 86400000000,
        },
        "outputs": ["rows", "n_buckets"],
        "note": "a week in day buckets: 7 rows; a burst shows as a large value",
    },
)
def graph_metric_timeseries(ctx: OpContext, a: MetricArgs) -> dict[str, Any]:
    g = grid(a.window.t_a, a.window.t_b, a.stride)
    rel_types = dedupe(a.rel_types) if a.rel_types is not None else None
    if a.metric == "peak_active_edge_count":
        ix = metric_index(ctx, a.as_of_tt)
        value, at = peaks(in_force(ctx, ix.e, a.as_of_tt, rel_types, ix.vt_e_sorted), g.bs, g.be)
        rows = g.rows(value.tolist())
        for row, t in zip(rows, at.tolist(), strict=True):
            row["at"] = t
    else:
        rows = g.rows(metric_series(ctx, a.as_of_tt, a.metric, g, rel_types))
    return {"rows": rows, "rows_total": len(rows), "n_buckets": g.n}


# -- burst_detection ------------------------------------------------------------------------------------
