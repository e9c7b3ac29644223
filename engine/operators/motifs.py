"""δ-temporal motifs (O6–O7): count_temporal_motifs, find_temporal_motif_instances.

Fast path: the call's events (believed edge versions with ``t_a <= vt_s < t_b``, both endpoints in
``node_filter``) are a slice of the context's ``(vt_s, eid, vid)``-sorted edge arrays, so their positions
already are the contract's total order. Counting runs the numpy kernels of
:mod:`engine.operators.motif_kernels` (closed forms for ping-pong and out-stars, vectorized wedges with
range counts for the triangles and 3-paths); it never enumerates instances. ``find`` returns a lazy row
sequence of length ``count``: the envelope slices the page it needs and only the instances of that page are
enumerated (work: the wedges up to the page's last row). The selection's group indexes and computed counts
are cached per belief state, window and node filter, so paging and the five motifs of one window share
them. Semantics: ``docs/operators.md`` §7–§8.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, overload

import numpy as np
from pydantic import Field

from tgms.engine.operators.base import Model, OneOf, OpArgs, PagedOutput, UidList, Window, dedupe
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import DEFAULT_BUDGET_S, CostEstimate, StoreProfile, memory_factor, recheck
from tgms.engine.operators.event_fields import EdgeWhere, edge_keep, edge_where_work, where_key
from tgms.engine.operators.motif_kernels import (
    MOTIF_NAMES,
    MotifEvents,
    count_motifs,
    enumerate_instances,
    motif_events,
)
from tgms.engine.operators.registry import operator
from tgms.engine.operators.rows import Step
from tgms.engine.operators.traits import EventWindow, NonEmpty, Traits

#: variables per motif (their order is the order of ``nodes`` in an instance row)
N_VARS = {
    "M_triangle_cyclic": 3,
    "M_triangle_acyclic_1": 3,
    "M_2node_pingpong": 2,
    "M_star_out_3": 4,
    "M_path_3": 4,
}
_ROW_CHUNK = 10_000

# -- arguments and outputs ------------------------------------------------------------------------------


class MotifArgs(OpArgs):
    motif: Annotated[str, OneOf(MOTIF_NAMES)]
    delta: Annotated[int, Field(ge=0, description="µs; an instance spans t3 - t1 <= delta")]
    window: Annotated[Window, EventWindow()]
    node_filter: Annotated[UidList, NonEmpty()] | None = None
    where: EdgeWhere


class CountMotifsArgs(MotifArgs):
    pass


class FindMotifsArgs(MotifArgs):
    pass


class CountMotifsOut(Model):
    count: int
    n_events_in_window: int


class MotifInstance(Model):
    edges: list[Step]
    nodes: list[str]


class FindMotifsOut(PagedOutput):
    rows: list[MotifInstance]
    rows_total: int


# -- the call's events ----------------------------------------------------------------------------------


@dataclass
class Selection:
    """The events of one (belief state, window, node filter): kernel input plus the map back to rows."""

    events: MotifEvents  # self-loops dropped; built at δ = 0 (``with_delta`` per call)
    rows: np.ndarray  # position -> row of the context's EdgeArrays
    n_events: int  # events after node_filter and where, self-loops included
    counts: dict[tuple[str, int], int] = field(default_factory=dict)

    def at(self, delta: int) -> MotifEvents:
        return self.events.with_delta(delta)

    def count(self, motif: str, delta: int, ev: MotifEvents | None = None) -> int:
        if (motif, delta) not in self.counts:
            for name, c in count_motifs(ev if ev is not None else self.at(delta), motif).items():
                self.counts[(name, delta)] = c
        return self.counts[(motif, delta)]


def selection(ctx: OpContext, a: MotifArgs) -> Selection:
    e = ctx.edges(a.as_of_tt)
    lo = int(np.searchsorted(e.vt_s, a.window.t_a, "left"))
    hi = int(np.searchsorted(e.vt_s, a.window.t_b, "left"))
    allowed: np.ndarray | None = None
    key: tuple[int, ...] | None = None
    if a.node_filter is not None:
        nids = ctx.require_known(dedupe(a.node_filter), a.as_of_tt, "node_filter")
        key = tuple(sorted(nids))
        allowed = np.zeros(len(ctx.uids()), dtype=bool)
        allowed[nids] = True
    passing = edge_keep(ctx, a.as_of_tt, a.where)

    def build() -> Selection:
        src, dst = e.src[lo:hi], e.dst[lo:hi]
        idx = np.arange(lo, hi, dtype=np.int64)
        if allowed is not None:
            keep = allowed[src] & allowed[dst]
            idx, src, dst = idx[keep], src[keep], dst[keep]
        if passing is not None:
            keep = passing[idx]
            idx, src, dst = idx[keep], src[keep], dst[keep]
        n_events = len(idx)
        loop_free = src != dst
        idx = idx[loop_free]
        ev = motif_events(src[loop_free], dst[loop_free], e.vt_s[idx], 0, len(ctx.uids()))
        return Selection(ev, idx, n_events)

    return ctx.cached(("motif_selection", a.as_of_tt, lo, hi, key, where_key(a.where)), build)


# -- instance rows --------------------------------------------------------------------------------------


class InstanceRows(Sequence[dict[str, Any]]):
    """All instances of one call, in contract order, materialized on access: ``rows[a:b]`` enumerates the
    instances of rank ``a .. b-1`` only. ``len`` is the count (computed by the counting kernel)."""

    def __init__(self, ctx: OpContext, a: MotifArgs, sel: Selection, ev: MotifEvents, total: int) -> None:
        self._ctx, self._a, self._sel, self._ev, self._total = ctx, a, sel, ev, total

    def __len__(self) -> int:
        return self._total

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._total)
            want = range(start, stop, step)
            if step == 1 or not want:
                return self._rows(start, stop)
            lo = min(want[0], want[-1])
            cover = self._rows(lo, max(want[0], want[-1]) + 1)
            return [cover[x - lo] for x in want]
        j = i + self._total if i < 0 else i
        if not 0 <= j < self._total:
            raise IndexError("instance index out of range")
        return self._rows(j, j + 1)[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, self._total, _ROW_CHUNK):
            yield from self._rows(start, min(start + _ROW_CHUNK, self._total))

    def _rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        if stop <= start:
            return []
        pos = enumerate_instances(self._ev, self._a.motif, start, stop)
        return instance_rows(self._ctx, self._a, self._sel, pos)


def instance_rows(ctx: OpContext, a: MotifArgs, sel: Selection, pos: np.ndarray) -> list[dict[str, Any]]:
    """Payload rows of instances given as an ``(m, 3)`` array of event positions."""
    if len(pos) == 0:
        return []
    e = ctx.edges(a.as_of_tt)
    r = sel.rows[pos]  # (m, 3) rows of the edge arrays
    flat = r.reshape(-1)
    uids = ctx.uids()
    vid, eid, t = e.vid[flat].tolist(), e.eid[flat].tolist(), e.vt_s[flat].tolist()
    src, dst = e.src[flat].tolist(), e.dst[flat].tolist()
    rel = e.col_at("rel_type", flat).to_pylist()
    steps = [
        {
            "vid": vid[x],
            "eid": eid[x],
            "src": uids[src[x]],
            "dst": uids[dst[x]],
            "rel_type": rel[x],
            "t": t[x],
        }
        for x in range(len(flat))
    ]
    n_vars = N_VARS[a.motif]
    out = []
    for m in range(len(pos)):
        e1, e2, e3 = steps[3 * m], steps[3 * m + 1], steps[3 * m + 2]
        nodes = [e1["src"], e1["dst"], e2["dst"], e3["dst"]][:n_vars]
        out.append({"edges": [e1, e2, e3], "nodes": nodes})
    return out


# -- cost -----------------------------------------------------------------------------------------------
#
# Work model (pipeline/bench/motifs_bench.py prints estimate next to measured time): building a
# selection's indexes and the closed forms cost a few scan_row units per selected event; a wedge (2-path
# u→v, v→w inside δ) costs a few "triple" units, growing with the selection (binary searches leave the
# caches): x1 at 10^4 events, x5 at 10^6. Expected wedges = events × (events per δ-window, sampled from
# the profile) × Σ_v share_in(v)·share_out(v); the last factor is estimated as 1.5·sqrt(max_share / n_nodes)
# (max_share = max_degree / (2 n_edges)), at least 1/k with a node filter of k uids. Measured: CollegeMsg
# 0.007 at δ = 1 day (estimate 0.0039; conversations make it 0.025 at δ = 1 h), synthetic 0.004 (0.0086).

_WEDGE_TRIPLES = {"M_triangle_cyclic": 2.0, "M_triangle_acyclic_1": 1.6, "M_path_3": 4.0}
_EVENT_SCANS = {"M_2node_pingpong": 1.5, "M_star_out_3": 3.0}
#: second-event candidates of find relative to count's wedges (out-out wedges for acyclic_1 / star)
_FIND_TRIPLES = {
    "M_triangle_cyclic": 2.0,
    "M_triangle_acyclic_1": 3.0,
    "M_2node_pingpong": 1.0,
    "M_star_out_3": 4.0,
    "M_path_3": 4.0,
}
_SAMPLE = 256


def _cache_factor(n: float) -> float:
    return min(5.0, 1.0 + n / 250_000.0) * memory_factor(n)


def _selected(p: StoreProfile, a: MotifArgs, t_b: int, k: int | None) -> tuple[float, float]:
    """(events in the window, estimated events left by a node filter of k uids).

    The profile has no per-node degrees, so the share of events with both endpoints among k uids is the
    geometric mean of a hub-heavy bound (each filter node carries at most max_degree / n_edges of the
    events, the second endpoint at most twice that) and uniform mixing ((k / n_nodes)²). Measured on the
    synthetic 10^6 store (1,000 nodes): 100 uids keep 76k events (estimate 100k), 10 uids 371 (estimate
    8k)."""
    m = float(p.events_in(a.window.t_a, t_b))
    if k is None:
        return m, m
    touch = min(1.0, k * p.max_degree / max(p.n_edges, 1))
    uniform = min(1.0, k / max(p.n_nodes, 1)) ** 2
    return m, m * math.sqrt(touch * min(1.0, 2.0 * touch) * uniform)


def _per_window(p: StoreProfile, t_a: int, t_b: int, delta: int) -> float:
    """Mean number of later events within δ of an event of the window (sampled)."""
    lo = int(np.searchsorted(p.vt_sorted, t_a, "left"))
    hi = int(np.searchsorted(p.vt_sorted, t_b, "left"))
    if hi - lo < 2:
        return 0.0
    idx = np.unique(np.linspace(lo, hi - 1, min(_SAMPLE, hi - lo)).astype(np.int64))
    ends = np.minimum(p.vt_sorted[idx] + min(delta, 1 << 62), t_b - 1)
    later = np.minimum(np.searchsorted(p.vt_sorted, ends, "right"), hi) - idx - 1
    return float(np.maximum(later, 0).mean())


def motif_work(
    p: StoreProfile, a: MotifArgs, *, delta: int, t_b: int, k: int | None, find: bool, offset: int = 0
) -> dict[str, float]:
    m, sel = _selected(p, a, t_b, k)
    work = {"scan_row": 2.2 * sel}
    if k is not None:
        # the node_filter selection (a mask over the window's events) is cached per (window, filter):
        # priced as an index build on every call, so a cold call is not admitted at 1/100 of its time
        work["index_row"] = float(m) * memory_factor(m)
    if sel < 3:
        return edge_where_work(p, a.where, work)
    scale = sel / m if m else 0.0
    share = 1.5 * math.sqrt(p.max_degree / (2.0 * max(p.n_edges, 1)) / max(p.n_nodes, 1))
    if k is not None:
        share = max(share, 1.0 / max(k, 1))
    wedges = sel * _per_window(p, a.window.t_a, t_b, delta) * scale * min(1.0, share)
    if a.motif in _EVENT_SCANS:
        work["scan_row"] += _EVENT_SCANS[a.motif] * sel * min(2.0, 1.0 + sel / 1e6)
    else:
        work["triple"] = _WEDGE_TRIPLES[a.motif] * wedges * _cache_factor(sel)
    if find:
        part = 1.0 if offset > 0 else 0.02  # a first page scans a prefix of the first events
        work["triple"] = work.get("triple", 0.0) + part * _FIND_TRIPLES[a.motif] * wedges * _cache_factor(sel)
        work["row_out"] = 3.0 * a.limit
    return edge_where_work(p, a.where, work)


def _offset(cursor: str | None) -> int:
    head = (cursor or "").partition(".")[0]
    return int(head) if head.isdigit() else 0


def _seconds(work: dict[str, float]) -> float:
    return CostEstimate(work).seconds


def _largest(lo: int, hi: int, fits: Any) -> int | None:
    """The largest x in [lo, hi] with fits(x) (fits is monotone decreasing), or None."""
    if not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def motif_cost(p: StoreProfile, a: MotifArgs, find: bool) -> CostEstimate:
    k = len(set(a.node_filter)) if a.node_filter is not None else None
    off = _offset(a.cursor) if find else 0
    t_a, t_b = a.window.t_a, a.window.t_b

    def secs(delta: int = a.delta, end: int = t_b, kk: int | None = k) -> float:
        return _seconds(motif_work(p, a, delta=delta, t_b=end, k=kk, find=find, offset=off))

    work = motif_work(p, a, delta=a.delta, t_b=t_b, k=k, find=find, offset=off)
    suggestions: list[str] = []
    budget = DEFAULT_BUDGET_S
    if _seconds(work) > budget:
        d = _largest(0, a.delta, lambda x: secs(delta=x) <= budget)
        if d is not None and d < a.delta and a.motif not in _EVENT_SCANS:
            suggestions.append(f"use delta <= {d}")
        lo_i = int(np.searchsorted(p.vt_sorted, t_a, "right"))
        hi_i = int(np.searchsorted(p.vt_sorted, t_b, "left"))
        if lo_i < hi_i:
            last = _largest(lo_i, hi_i - 1, lambda x: secs(end=int(p.vt_sorted[x])) <= budget)
            if last is not None:
                width = int(p.vt_sorted[last]) - t_a
                suggestions.append(f"use a window of at most {width} µs (t_b <= {t_a + width})")
        kmax = _largest(1, max(1, p.n_nodes), lambda x: secs(kk=x) <= budget)
        if kmax is not None and (k is None or kmax < k):
            suggestions.append(f"add a node_filter of at most {kmax} uids")
        if find and off > 0:
            suggestions.append("read the first pages only, or use count_temporal_motifs for the total")
    return CostEstimate(work, suggestions or ["narrow the window or add a node_filter"])


def _count_cost(p: StoreProfile, a: CountMotifsArgs) -> CostEstimate:
    return motif_cost(p, a, find=False)


def _find_cost(p: StoreProfile, a: FindMotifsArgs) -> CostEstimate:
    return motif_cost(p, a, find=True)


# -- operators ------------------------------------------------------------------------------------------

_MOTIF_TEXT = (
    "Events are the believed edge versions with t_a <= vt_s < t_b (with node_filter: both endpoints in "
    "it; with where: passing every edge predicate), totally ordered by (vt_s, eid, vid); an instance is "
    "three events e1 < e2 < e3 with t3 - t1 <= delta whose endpoints bind the motif's variables to "
    "pairwise-distinct nodes: M_triangle_cyclic u→v, v→w, w→u; M_triangle_acyclic_1 u→v, u→w, v→w; "
    "M_2node_pingpong u→v, v→u, u→v; M_star_out_3 u→a, u→b, u→c; M_path_3 u→v, v→w, w→x (self-loops "
    "never match)."
)


def exact_estimate(ctx: OpContext, a: MotifArgs, sel: Selection, ev: MotifEvents) -> CostEstimate | None:
    """The call's cost from its exact wedge count (wedge motifs whose count is not cached yet), else None.

    The estimate before the call models the wedges from store statistics and underestimated skewed
    selections 5-25x at 10^7; the selection and its wedge spans are part of the kernel's work anyway."""
    if a.motif not in _WEDGE_TRIPLES or (a.motif, a.delta) in sel.counts:
        return None
    n = float(ev.n)
    work = {
        "scan_row": 2.2 * sel.n_events,  # the selection
        # the group indexes by source and by pair, and the wedge spans (two searches per event)
        "index_row": 3.0 * n * memory_factor(n),
        "triple": _WEDGE_TRIPLES[a.motif] * ev.n_wedges() * _cache_factor(n),
    }
    return CostEstimate(work, ["use a smaller delta", "narrow the window", "add a node_filter"])


def _events(ctx: OpContext, op: str, a: MotifArgs, budget_s: float | None) -> tuple[Selection, MotifEvents]:
    """The call's selection and its events at ``delta``; refuses before the kernel when the exact-work
    estimate exceeds the call's budget."""
    sel = selection(ctx, a)
    ev = sel.at(a.delta)
    if budget_s is not None:
        est = exact_estimate(ctx, a, sel, ev)
        if est is not None:
            recheck(op, est, f"{ev.n_wedges():,} wedges at delta {a.delta}", budget_s)
    return sel, ev


@operator(
    name="count_temporal_motifs",
    family="motifs",
    budgeted=True,  # re-prices the exact wedge count before the kernel
    traits=Traits(pattern_counts=("count",)),
    args=CountMotifsArgs,
    output=CountMotifsOut,
    cost=_count_cost,
    manual=(
        "Counts the δ-temporal motif instances (Paranjape et al.) of `motif` inside `window`: `count`, and "
        "`n_events_in_window` (events after node_filter and where, self-loops included). "
        + _MOTIF_TEXT
        + " Example: events a→b at 1, b→c at 2, c→a at 3 and a→b at 9 give M_triangle_cyclic count 1 with "
        "delta 2 (the triple spans 3 - 1 = 2) and 0 with delta 1."
    ),
    example={
        "args": {
            "motif": "M_triangle_cyclic",
            "delta": 86400000000,
            "window": {"t_a": 1082000000000000, "t_b": 1090000000000000},
        },
        "outputs": ["count", "n_events_in_window"],
        "note": "a→b@1, b→c@2, c→a@3, a→b@9 with delta 2: count 1 (n_events_in_window 4)",
    },
)
def count_temporal_motifs(
    ctx: OpContext, a: CountMotifsArgs, budget_s: float | None = None
) -> dict[str, Any]:
    sel, ev = _events(ctx, "count_temporal_motifs", a, budget_s)
    return {"count": sel.count(a.motif, a.delta, ev), "n_events_in_window": sel.n_events}


@operator(
    name="find_temporal_motif_instances",
    family="motifs",
    budgeted=True,
    args=FindMotifsArgs,
    output=FindMotifsOut,
    cost=_find_cost,
    manual=(
        "Lists the δ-temporal motif instances of `motif` inside `window` as `rows` {edges: [three steps "
        "{vid, eid, src, dst, rel_type, t = vt_s}], nodes: the bound variables in the motif's order}, "
        "ordered by (t1, eid1, vid1, t2, eid2, vid2, t3, eid3, vid3); rows_total equals the count of "
        "count_temporal_motifs. "
        + _MOTIF_TEXT
        + " Example: a→b at 1, b→a at 2, a→b at 3 with delta 2 give one M_2node_pingpong row, nodes [a, b]."
    ),
    example={
        "args": {
            "motif": "M_2node_pingpong",
            "delta": 3600000000,
            "window": {"t_a": 1082000000000000, "t_b": 1083000000000000},
            "limit": 20,
        },
        "outputs": ["rows", "rows_total"],
        "note": "a→b@1, b→a@2, a→b@3 with delta 2: one row, nodes [a, b]",
    },
)
def find_temporal_motif_instances(
    ctx: OpContext, a: FindMotifsArgs, budget_s: float | None = None
) -> dict[str, Any]:
    sel, ev = _events(ctx, "find_temporal_motif_instances", a, budget_s)
    total = sel.count(a.motif, a.delta, ev)
    return {"rows": InstanceRows(ctx, a, sel, ev, total), "rows_total": total}
