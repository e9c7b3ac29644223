"""Evolution (O10–O11): neighborhood_evolution, co_active (``docs/operators.md`` §11–§12).

Fast path: the believed edges come from the context's ``(vt_s, eid, vid)``-sorted arrays.

- neighborhood_evolution: one endpoint mask over the versions starting before ``t2``; gained / lost by
  set differences over int nids; the degree series is a coverage count of bucket ranges grouped by
  neighbour (:func:`engine.operators.metrics.coverage`).
- co_active: an interval join per Allen relation. Every relation is a conjunction of a range on ``b.vt_s``
  and a range on ``b.vt_e`` given ``a``; B is held sorted both ways, so for each a the candidates are one
  contiguous run of whichever order is shorter (binary searches), expanded and filtered in numpy. A
  length rule per relation (``during``: ``|b| >= |a| + 2``, ...) first drops versions that cannot match.
  Rows come out in ``(a, b)`` scan order as position arrays (:class:`PairRows`): edge refs with uids
  are built only for the page the envelope reads.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, field_validator, model_validator

from tgms.engine.operators.allen import MAX_CANDIDATES, Pairs, allen_pairs
from tgms.engine.operators.base import (
    MAX_LIMIT,
    MAX_LIST,
    Model,
    OneOf,
    OpArgs,
    PagedOutput,
    Time,
    Uid,
    Window,
    dedupe,
    invalid,
)
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import DEFAULT_BUDGET_S, CostEstimate, StoreProfile
from tgms.engine.operators.edge_arrays import EdgeArrays
from tgms.engine.operators.lazy_rows import LazyRows
from tgms.engine.operators.metrics import check_buckets, coverage, grid, n_buckets
from tgms.engine.operators.registry import operator
from tgms.engine.operators.rows import EdgeRef
from tgms.engine.operators.traits import Period, Traits
from tgms.engine.timeutil import OPEN_END

ALLEN_RELATIONS = (
    "before",
    "after",
    "meets",
    "met_by",
    "overlaps",
    "overlapped_by",
    "starts",
    "started_by",
    "during",
    "contains",
    "finishes",
    "finished_by",
    "equals",
)

# -- neighborhood_evolution -----------------------------------------------------------------------------


class NeighborhoodArgs(OpArgs):
    uid: Uid
    t1: Time
    t2: Time
    stride: Annotated[int, Field(ge=1, description="default t2 - t1 (one bucket)")] | None = None

    @model_validator(mode="after")
    def _check(self) -> NeighborhoodArgs:
        if self.t1 >= self.t2:
            raise invalid(f"t1 must be < t2 (got t1={self.t1}, t2={self.t2})")
        check_buckets(self.t1, self.t2, self.bucket_stride)
        return self

    @property
    def bucket_stride(self) -> int:
        return self.t2 - self.t1 if self.stride is None else self.stride


class GainedRow(Model):
    uid: str
    first_seen: int


class LostRow(Model):
    uid: str
    last_seen: int


class DegreeRow(Model):
    t_a: int
    t_b: int
    degree: int


class NeighborhoodOut(PagedOutput):
    neighbors_gained: list[GainedRow]
    neighbors_gained_total: int
    neighbors_gained_truncated: bool
    neighbors_lost: list[LostRow]
    neighbors_lost_total: int
    neighbors_lost_truncated: bool
    degree_series: list[DegreeRow]
    degree_series_total: int
    degree_series_truncated: bool


def _neighborhood_cost(p: StoreProfile, a: NeighborhoodArgs) -> CostEstimate:
    n = n_buckets(a.t1, a.t2, a.bucket_stride)
    touched = float(min(p.n_edges, p.max_degree))  # the busiest uid's versions: an upper bound
    work = {
        "scan_row": 0.05 * p.n_edges + touched,
        "bucket_row": 30.0 * n,
        "row_out": min(p.n_nodes, touched) / 4 + n / 4,
    }
    est = CostEstimate(work)
    if est.seconds > DEFAULT_BUDGET_S:
        est.suggestions = ["use a shorter [t1, t2)", "use a larger stride"]
    return est


def _first_by_group(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) and the value of each key's first occurrence."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    head = np.ones(len(k), bool)
    head[1:] = k[1:] != k[:-1]
    return k[head], values[order][head]


@operator(
    name="neighborhood_evolution",
    family="evolution",
    traits=Traits(period=Period("t1", "t2")),
    args=NeighborhoodArgs,
    output=NeighborhoodOut,
    cost=_neighborhood_cost,
    manual=(
        "Compares the contacts of `uid` before t1 with those during [t1, t2): a contact is a uid joined to "
        "it by an edge version in either direction (self-loops ignored) whose valid interval overlaps the "
        "period. `neighbors_gained` {uid, first_seen} are contacts during but not before (first_seen = "
        "least vt_s of those edges overlapping [t1, t2)); `neighbors_lost` {uid, last_seen} are contacts "
        "before but not during (last_seen = greatest vt_s before t1); both by uid. `degree_series` "
        "{t_a, t_b, degree} counts distinct contacts per bucket of [t1, t2) (stride, default one bucket)."
    ),
    example={
        "args": {"uid": "n9", "t1": 1083000000000000, "t2": 1083604800000000, "stride": 86400000000},
        "outputs": ["neighbors_gained", "degree_series"],
        "note": "an edge valid across t1 keeps its neighbour: neither gained nor lost",
    },
)
def neighborhood_evolution(ctx: OpContext, a: NeighborhoodArgs) -> dict[str, Any]:
    (nid,) = ctx.require_known([a.uid], a.as_of_tt, "uid")
    e = ctx.edges(a.as_of_tt)
    r2 = int(np.searchsorted(e.vt_s, a.t2, "left"))  # both periods need vt_s < t2
    src, dst = e.src[:r2], e.dst[:r2]
    inc = np.flatnonzero((src == nid) ^ (dst == nid))  # xor: self-loops ignored
    nb = np.where(src[inc] == nid, dst[inc], src[inc]).astype(np.int64)
    vs, ve = e.vt_s[inc], e.vt_e[inc]  # vs ascending
    before_m = vs < a.t1  # overlaps [0, t1) (every vt_e > vt_s >= 0)
    during_m = ve > a.t1  # overlaps [t1, t2)
    during_nb, first_seen = _first_by_group(nb[during_m], vs[during_m])
    rev = np.flatnonzero(before_m)[::-1]
    before_nb, last_seen = _first_by_group(nb[rev], vs[rev])
    uids = ctx.uids()
    gained_m = ~np.isin(during_nb, before_nb)
    lost_m = ~np.isin(before_nb, during_nb)
    gained = sorted(
        (
            {"uid": uids[u], "first_seen": t}
            for u, t in zip(during_nb[gained_m].tolist(), first_seen[gained_m].tolist(), strict=True)
        ),
        key=lambda r: r["uid"],
    )
    lost = sorted(
        (
            {"uid": uids[u], "last_seen": t}
            for u, t in zip(before_nb[lost_m].tolist(), last_seen[lost_m].tolist(), strict=True)
        ),
        key=lambda r: r["uid"],
    )
    g = grid(a.t1, a.t2, a.bucket_stride)
    d_nb, d_vs, d_ve = nb[during_m], vs[during_m], ve[during_m]
    order = np.argsort(d_nb, kind="stable")  # by (neighbour, vt_s)
    series = g.rows(coverage(d_nb[order], d_vs[order], d_ve[order], g).tolist(), "degree")
    return {
        "neighbors_gained": gained,
        "neighbors_gained_total": len(gained),
        "neighbors_lost": lost,
        "neighbors_lost_total": len(lost),
        "degree_series": series,
        "degree_series_total": len(series),
    }


# -- co_active ------------------------------------------------------------------------------------------


def _uid_list(v: str | list[str] | None) -> list[str] | None:
    if v is None:
        return None
    out = [v] if isinstance(v, str) else v
    if len(out) > MAX_LIST:
        raise invalid(f"a uid list holds at most {MAX_LIST} entries (got {len(out)})")
    return dedupe(out)


class EdgeSpec(Model):
    """An edge selection; every key optional, all AND-ed; {} selects every believed edge version."""

    src: Uid | list[Uid] | None = Field(None, description="uid or list: src in it")
    dst: Uid | list[Uid] | None = Field(None, description="uid or list: dst in it")
    uid: Uid | list[Uid] | None = Field(None, description="uid or list: either endpoint in it")
    rel_types: Annotated[list[str], Field(max_length=MAX_LIST)] | None = None
    window: Window | None = Field(
        None, description="valid interval overlaps it (selects; the join uses the full interval)"
    )

    @field_validator("src", "dst", "uid")
    @classmethod
    def _uids(cls, v: str | list[str] | None) -> list[str] | None:
        return _uid_list(v)


GAP_RELATIONS = ("before", "after")


class CoActiveArgs(OpArgs):
    a_spec: EdgeSpec
    b_spec: EdgeSpec
    allen_relation: Annotated[str, OneOf(ALLEN_RELATIONS)]
    gap: Annotated[
        Annotated[int, Field(ge=1, lt=OPEN_END)] | None,
        Field(description="before/after only: 0 < b.vt_s - a.vt_e <= gap (after: a, b swapped)"),
    ] = None

    @model_validator(mode="after")
    def _gap_relation(self) -> CoActiveArgs:
        if self.gap is not None and self.allen_relation not in GAP_RELATIONS:
            raise invalid(f"gap applies to before/after only (allen_relation is {self.allen_relation!r})")
        return self


class CoActiveRow(Model):
    a: EdgeRef
    b: EdgeRef


class CoActiveOut(PagedOutput):
    rows: list[CoActiveRow]
    rows_total: int


def select(ctx: OpContext, as_of_tt: int | None, spec: EdgeSpec, name: str) -> np.ndarray:
    """Scan positions (ascending) of the believed edge versions matching ``spec``."""
    e = ctx.edges(as_of_tt)
    n_uids = len(ctx.uids())

    def lut(uids: list[str], field: str) -> np.ndarray:
        m = np.zeros(n_uids, bool)
        m[ctx.require_known(uids, as_of_tt, f"{name}.{field}")] = True
        return m

    luts = [
        (f, lut([v] if isinstance(v, str) else v, f))  # the validator has made each a list already
        for f, v in (("src", spec.src), ("dst", spec.dst), ("uid", spec.uid))
        if v is not None
    ]
    idx = e.overlapping(spec.window.t_a, spec.window.t_b) if spec.window is not None else np.arange(e.n)
    for field, m in luts:
        if field == "src":
            idx = idx[m[e.src[idx]]]
        elif field == "dst":
            idx = idx[m[e.dst[idx]]]
        else:
            idx = idx[m[e.src[idx]] | m[e.dst[idx]]]
    if spec.rel_types is not None and len(idx):
        rel = e.col_at("rel_type", idx)
        keep = pc.is_in(rel, value_set=pa.array(dedupe(spec.rel_types), pa.string()))
        idx = idx[np.asarray(keep.to_numpy(zero_copy_only=False), bool)]
    return idx


_REF_COLS = ("vid", "eid", "src", "dst", "rel_type", "vt_s", "vt_e")


class PairRows(LazyRows):
    """The rows ``{a, b}`` of a join as scan-position arrays; a row (its two edge refs, with uids) is built
    only when read. The payload is the full list, but the envelope reads just the page it returns."""

    def __init__(self, ctx: OpContext, e: EdgeArrays, pairs: Pairs) -> None:
        super().__init__(np.arange(len(pairs)))
        self._ctx, self._e, self._pairs = ctx, e, pairs

    def _build(self, idx: np.ndarray) -> list[dict[str, Any]]:
        pa_, pb_ = self._pairs.at(idx)
        both = np.sort(np.concatenate([pa_, pb_]))
        keep = np.ones(len(both), bool)
        keep[1:] = both[1:] != both[:-1]
        pos = both[keep]
        refs = self._e.rows(pos, _REF_COLS).to_pylist()
        uids = self._ctx.uids()
        for r in refs:
            r["src"], r["dst"] = uids[r["src"]], uids[r["dst"]]
        by_pos = dict(zip(pos.tolist(), refs, strict=True))
        return [
            {"a": dict(by_pos[x]), "b": dict(by_pos[y])}
            for x, y in zip(pa_.tolist(), pb_.tolist(), strict=True)
        ]


# -- co_active cost: selection sizes from the profile, rows per relation family ---------------------------

#: modelling guesses (synthetic data: 5% interval versions; of the versions starting before a window,
#: 0.8-2.6% still overlap it; a nested pair's outer interval holds ~5% of the span). Underestimates are
#: caught by the run-time stops below, so these aim at the typical case, not an upper bound.
_LONG_SHARE = 0.05
_STRADDLE_SHARE = 0.015
_SPAN_SHARE = 0.05
_EQUALITY = ("meets", "met_by", "starts", "started_by", "finishes", "finished_by", "equals")
_REFUSE_FACTOR = 10
#: work in scan_row units (2e-7 s): per selected version, per candidate pair, per row (pairs are arrays;
#: only the page read is built into dicts)
_PER_SELECTED, _PER_CANDIDATE, _PER_ROW = 0.1, 0.3, 1.0


def _selection_size(p: StoreProfile, spec: EdgeSpec) -> tuple[float, float]:
    """Expected (selected versions, of which intervals): the store times each key's selectivity (keys
    taken as independent); a uid contributes the geometric mean of the average and the largest degree."""
    n = float(p.n_edges)
    if n == 0 or (spec.rel_types is not None and not spec.rel_types):
        return 0.0, 0.0
    share, long_share = 1.0, _LONG_SHARE
    if spec.window is not None:
        inside = p.events_in(spec.window.t_a, spec.window.t_b)
        straddle = _STRADDLE_SHARE * p.events_in(0, spec.window.t_a)
        share = (inside + straddle) / n
        long_share = (_LONG_SHARE * inside + straddle) / max(1.0, inside + straddle)
    degree = math.sqrt(2 * n / max(1, p.n_nodes) * max(1, p.max_degree))
    for lst in (spec.src, spec.dst, spec.uid):
        if lst is not None:
            share *= min(1.0, len(lst) * degree / n)
    return n * share, n * share * long_share


def _equal_time_share(p: StoreProfile) -> float:
    """Expected share of versions whose vt_s equals a random version's vt_s (a sample of 256)."""
    v = p.vt_sorted
    if len(v) == 0:
        return 0.0
    probe = v[np.linspace(0, len(v) - 1, min(256, len(v))).astype(np.int64)]
    same = np.searchsorted(v, probe, "right") - np.searchsorted(v, probe, "left")
    return float(same.mean()) / len(v)


def _co_active_rows(
    p: StoreProfile, rel: str, a: tuple[float, float], b: tuple[float, float], gap: int | None = None
) -> float:
    (n_a, long_a), (n_b, long_b) = a, b
    if rel in ("before", "after"):  # intervals straddling the selections rarely precede anything
        pairs = (n_a - long_a) * (n_b - long_b) / 2
        if gap is not None and p.vt_min is not None and p.vt_max is not None:
            # a gap keeps the b within gap of each a: about that share of the span (twice: either side)
            pairs *= min(1.0, 2 * gap / max(1, p.vt_max - p.vt_min))
        return pairs
    if rel in _EQUALITY:
        return n_a * n_b * _equal_time_share(p)
    if rel == "during":  # b must be an interval holding a
        return n_a * long_b * _SPAN_SHARE
    if rel == "contains":
        return long_a * n_b * _SPAN_SHARE
    return long_a * long_b * _SPAN_SHARE  # overlaps, overlapped_by: both are intervals


def _co_active_work(
    p: StoreProfile, rel: str, a: tuple[float, float], b: tuple[float, float], gap: int | None = None
) -> dict[str, float]:
    rows = _co_active_rows(p, rel, a, b, gap)
    candidates = 2 * rows
    searches = 2 * a[0] * (1 + math.log2(1 + b[0]))  # binary-search steps, two per a
    if candidates <= _REFUSE_FACTOR * MAX_CANDIDATES:
        # the guesses are rough (uid degrees, rel-type shares): below a clear excess price the join as the
        # run-time stop bounds it, so a query that would run is not refused on a guess
        rows, candidates = min(rows, MAX_CANDIDATES), min(candidates, MAX_CANDIDATES)
    scan = 0.05 * (p.n_edges + searches) + _PER_SELECTED * (a[0] + b[0]) + _PER_CANDIDATE * candidates
    return {"scan_row": scan + _PER_ROW * rows, "row_out": 2 * min(rows, MAX_LIMIT)}


def _scaled(x: tuple[float, float], f: float) -> tuple[float, float]:
    return x[0] * f, x[1] * f


def _co_active_suggestions(
    p: StoreProfile, a: CoActiveArgs, sel_a: tuple[float, float], sel_b: tuple[float, float]
) -> list[str]:
    lo_f, hi_f = 0.0, 1.0  # the largest common scale of both selections that fits the budget
    for _ in range(40):
        mid = (lo_f + hi_f) / 2
        work = _co_active_work(p, a.allen_relation, _scaled(sel_a, mid), _scaled(sel_b, mid), a.gap)
        lo_f, hi_f = (mid, hi_f) if CostEstimate(work).seconds <= DEFAULT_BUDGET_S else (lo_f, mid)
    k_a, k_b = max(1, int(sel_a[0] * lo_f)), max(1, int(sel_b[0] * lo_f))
    sugg = [
        f"narrow the selections to about {k_a:,} (a_spec) x {k_b:,} (b_spec) edge versions "
        f"(now ~{int(sel_a[0]):,} x {int(sel_b[0]):,})"
    ]
    if len(p.vt_sorted):
        k = min(len(p.vt_sorted) - 1, max(k_a, k_b))
        t0, t1 = int(p.vt_sorted[0]), int(p.vt_sorted[k]) + 1
        sugg.append(
            f"add a window holding ~{k:,} versions to a_spec or b_spec, e.g. {{t_a: {t0}, t_b: {t1}}}"
        )
    for side, spec in (("a_spec", a.a_spec), ("b_spec", a.b_spec)):
        if spec.src is None and spec.uid is None:
            sugg.append(f"restrict {side}.src (or {side}.uid) to a few uids")
    return sugg


def _co_active_cost(p: StoreProfile, a: CoActiveArgs) -> CostEstimate:
    sel_a, sel_b = _selection_size(p, a.a_spec), _selection_size(p, a.b_spec)
    est = CostEstimate(_co_active_work(p, a.allen_relation, sel_a, sel_b, a.gap))
    if est.seconds > DEFAULT_BUDGET_S:
        est.suggestions = _co_active_suggestions(p, a, sel_a, sel_b)
    return est


@operator(
    name="co_active",
    family="evolution",
    args=CoActiveArgs,
    output=CoActiveOut,
    cost=_co_active_cost,
    manual=(
        "Joins two edge selections by an Allen interval relation: `rows` {a, b} (edge refs) for every a "
        "selected by a_spec and b selected by b_spec (different versions) whose full valid intervals stand "
        "in allen_relation (before, after, meets, met_by, overlaps, overlapped_by, starts, started_by, "
        "during, contains, finishes, finished_by, equals). A selection {src?, dst?, uid?, rel_types?, "
        "window?} ANDs its keys; its window only selects versions overlapping it. Rows are ordered by a "
        "then b, each by (vt_s, eid, vid). With before/after, `gap` (µs) keeps only pairs at most gap "
        "apart: 0 < b.vt_s − a.vt_e <= gap (before), 0 < a.vt_s − b.vt_e <= gap (after)."
    ),
    example={
        "args": {
            "a_spec": {"src": "n9"},
            "b_spec": {"uid": "n9", "window": {"t_a": 1083000000000000, "t_b": 1083086400000000}},
            "allen_relation": "during",
        },
        "outputs": ["rows", "rows_total"],
        "note": "[0,10) meets [10,20); [5,15) overlaps [10,20); an instant [3,4) is during [0,10)",
    },
)
def co_active(ctx: OpContext, a: CoActiveArgs) -> dict[str, Any]:
    ia = select(ctx, a.as_of_tt, a.a_spec, "a_spec")
    ib = select(ctx, a.as_of_tt, a.b_spec, "b_spec")
    e = ctx.edges(a.as_of_tt)
    rows = PairRows(ctx, e, allen_pairs(e, a.allen_relation, ia, ib, a.gap))
    return {"rows": rows, "rows_total": len(rows)}
