"""burst_detection (O9, ``docs/operators.md`` §10): buckets whose edge-event count stands out from the
trailing ``w`` buckets, by z-score (population std) or by ratio to the trailing median.

The series is :func:`engine.operators.metrics.event_counts` over the bucket grid; scores are exact
(``Fraction``), rounded to 9 decimals before they are compared with the (rounded) threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Annotated, Any, TypeGuard

import numpy as np
from pydantic import Field, model_validator

from tgms.engine.canonical import canon_float
from tgms.engine.operators.base import Model, OneOf, OpArgs, PagedOutput, UidArg, Window, invalid
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import DEFAULT_BUDGET_S, CostEstimate, StoreProfile
from tgms.engine.operators.metrics import METHODS, check_buckets, event_counts, exact, grid, n_buckets
from tgms.engine.operators.registry import operator
from tgms.engine.operators.traits import EventWindow, Traits, Vacancy
from tgms.engine.operators.units import Measures, Unit


class BurstParams(Model):
    w: Annotated[int, Field(ge=2, le=1000, description="trailing buckets")] = 7
    min_history: Annotated[int, Field(ge=2, le=1000, description="default min(3, w)")] | None = None
    threshold: Annotated[float, Field(description="> 0 after rounding to 9 decimals")] = 3.0

    @model_validator(mode="after")
    def _consistent(self) -> BurstParams:
        if self.min_history is not None and self.min_history > self.w:
            raise invalid(f"params.min_history must be <= params.w (got {self.min_history} > {self.w})")
        if not math.isfinite(self.threshold) or not canon_float(float(self.threshold)) > 0:
            raise invalid(f"params.threshold must be > 0 after rounding to 9 decimals (got {self.threshold})")
        return self

    @property
    def history(self) -> int:
        return min(3, self.w) if self.min_history is None else self.min_history


class BurstArgs(OpArgs):
    target: Annotated[str, UidArg(keywords=("global",)), Field(description='"global" or a uid')]
    window: Annotated[Window, EventWindow()]
    stride: Annotated[int, Field(ge=1)]
    method: Annotated[str, OneOf(METHODS)] = "zscore"
    params: BurstParams | None = None

    @model_validator(mode="after")
    def _check_buckets(self) -> BurstArgs:
        check_buckets(self.window.t_a, self.window.t_b, self.stride)
        return self


class BurstRow(Model):
    t_a: int
    t_b: int
    value: Annotated[int, Measures(Unit.COUNT)]  # the bucket's event count
    score: int | float
    baseline: int | float  # a mean or median of counts: a free value


class BurstOut(PagedOutput):
    rows: list[BurstRow]
    rows_total: int
    n_buckets: int
    n_scored: int


def _zscores(x: list[int], w: int, min_history: int) -> list[tuple[int | float, int | float] | None]:
    """(score, baseline) per bucket; z² = (n·x − S1)² / (n·S2 − S1²) exactly, from integer prefix sums."""
    p1, p2 = [0], [0]
    for v in x:
        p1.append(p1[-1] + v)
        p2.append(p2[-1] + v * v)
    out: list[tuple[int | float, int | float] | None] = []
    for i, xi in enumerate(x):
        lo = max(0, i - w)
        n = i - lo
        if n < min_history:
            out.append(None)
            continue
        s1, s2 = p1[i] - p1[lo], p2[i] - p2[lo]
        var_n2 = n * s2 - s1 * s1  # n² · population variance
        if var_n2 == 0:
            out.append(None)  # zero-variance history: not scored, never flagged
            continue
        d = n * xi - s1
        z = math.copysign(math.sqrt(float(Fraction(d * d, var_n2))), d) if d else 0.0
        out.append((canon_float(z), exact(Fraction(s1, n))))
    return out


def _median(sorted_hist: list[int]) -> Fraction:
    n = len(sorted_hist)
    if n % 2:
        return Fraction(sorted_hist[n // 2])
    return Fraction(sorted_hist[n // 2 - 1] + sorted_hist[n // 2], 2)


def _ratios(x: list[int], w: int, min_history: int) -> list[tuple[int | float, int | float] | None]:
    """(x / trailing median, median) per bucket; full-length histories sorted in one numpy call."""
    arr = np.array(x, np.int64)
    full: list[list[int]] = []
    if len(x) > w:
        full = np.sort(np.lib.stride_tricks.sliding_window_view(arr[:-1], w), axis=1).tolist()
    out: list[tuple[int | float, int | float] | None] = []
    for i, xi in enumerate(x):
        n = min(i, w)
        if n < min_history:
            out.append(None)
            continue
        med = _median(full[i - w] if i >= w else sorted(x[:i]))
        out.append(None if med == 0 else (exact(Fraction(xi) / med), exact(med)))
    return out


def _is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def too_few_buckets(args: Mapping[str, Any]) -> Vacancy | None:
    """burst's vacuous rule, on a plan's literal arguments (which need not be valid): a series of at
    most ``min_history`` buckets has no bucket with enough history to be scored, so nothing can be flagged.
    The defaults are :class:`BurstParams`' own (an absent or non-integer ``w`` / ``min_history`` counts as
    its default; an invalid value is the args rule's to report)."""
    w, stride = args.get("window"), args.get("stride")
    if not (isinstance(w, dict) and _is_int(stride) and stride > 0):
        return None
    if not all(_is_int(w.get(k)) for k in ("t_a", "t_b")) or w["t_b"] <= w["t_a"]:
        return None
    params = args.get("params")
    raw = params if isinstance(params, dict) else {}
    given = {k: raw[k] for k in ("w", "min_history") if _is_int(raw.get(k))}
    mh = BurstParams.model_construct(**given).history  # unvalidated: only the defaults are wanted
    n = n_buckets(w["t_a"], w["t_b"], stride)
    if n > mh:
        return None
    need = (w["t_b"] - w["t_a"]) // (mh + 1)
    return Vacancy(
        "stride",
        f"{n} bucket(s) of stride {stride}: with min_history {mh} no bucket can be scored",
        {"stride_at_most": max(need, 1)},
    )


def _burst_work(p: StoreProfile, a: BurstArgs, n: int) -> dict[str, float]:
    w = (a.params or BurstParams()).w
    scan = 0.0 if a.target == "global" else 0.05 * p.n_edges  # one endpoint mask over the scan
    per_bucket = 120.0 + (0.3 * min(w, n) if a.method == "ratio" else 0.0)
    return {"scan_row": scan, "bucket_row": per_bucket * n, "row_out": 0.25 * n}


def _burst_cost(p: StoreProfile, a: BurstArgs) -> CostEstimate:
    n = n_buckets(a.window.t_a, a.window.t_b, a.stride)
    est = CostEstimate(_burst_work(p, a, n))
    if est.seconds > DEFAULT_BUDGET_S:
        per = est.seconds / max(1, n)
        fit = max(1, int(DEFAULT_BUDGET_S / per))
        est.suggestions.append(f"use stride >= {-(-(a.window.t_b - a.window.t_a) // fit)}")
    return est


@operator(
    name="burst_detection",
    family="metrics",
    traits=Traits(vacuous=too_few_buckets),
    args=BurstArgs,
    output=BurstOut,
    cost=_burst_cost,
    manual=(
        "Flags buckets whose count of edge versions starting in them (target 'global', or those touching "
        "a uid) is high against the trailing params.w buckets (default 7): method zscore scores "
        "(x - mean) / population std, method ratio scores x / median. Buckets with fewer than "
        "params.min_history (default 3) trailing buckets, a zero-variance history (zscore) or a zero "
        "median (ratio) are not scored. Scores are rounded to 9 decimals and a bucket is flagged when "
        "score >= params.threshold (default 3). `rows` are the flagged buckets {t_a, t_b, value, score, "
        "baseline} by t_a; n_scored counts the scored buckets."
    ),
    example={
        "args": {
            "target": "global",
            "window": {"t_a": 1082000000000000, "t_b": 1083728000000000},
            "stride": 86400000000,
            "method": "zscore",
            "params": {"w": 7, "threshold": 3},
        },
        "outputs": ["rows", "n_scored"],
        "note": "history [1,3,1,3] then 10: mean 2, std 1, score 8 -> flagged",
    },
)
def burst_detection(ctx: OpContext, a: BurstArgs) -> dict[str, Any]:
    params = a.params or BurstParams()
    threshold = Fraction(str(canon_float(float(params.threshold))))
    e = ctx.edges(a.as_of_tt)
    vt_s = e.vt_s
    if a.target != "global":
        (nid,) = ctx.require_known([a.target], a.as_of_tt, "target")
        vt_s = vt_s[(e.src == nid) | (e.dst == nid)]
    g = grid(a.window.t_a, a.window.t_b, a.stride)
    series = event_counts(vt_s, g).tolist()
    score = _zscores if a.method == "zscore" else _ratios
    scored = score(series, params.w, params.history)
    rows = []
    for s, t, x, sc in zip(g.bs.tolist(), g.be.tolist(), series, scored, strict=True):
        if sc is not None and Fraction(str(sc[0])) >= threshold:
            rows.append({"t_a": s, "t_b": t, "value": x, "score": sc[0], "baseline": sc[1]})
    n_scored = sum(sc is not None for sc in scored)
    return {"rows": rows, "rows_total": len(rows), "n_buckets": g.n, "n_scored": n_scored}
