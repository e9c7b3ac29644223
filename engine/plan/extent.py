"""The plan verifier's data checks: where a step's literal times and windows fall against the dataset's
valid-time extent (``temporal_extent``), and which literal arguments make a step's result empty whatever
the data (``vacuous_arg``). What counts as a time point, an event window, a selecting list or a period is
declared by the operator (:mod:`engine.operators.traits`), never listed here by operator name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import profile
from tgms.engine.operators.registry import OperatorSpec
from tgms.engine.operators.traits import EventWindow, NonEmpty, TimePoint, TimePredicates, literals_at, marked
from tgms.engine.plan.model import Step, Violation
from tgms.engine.plan.premise import selected_period
from tgms.engine.plan.refs import is_ref
from tgms.engine.timeutil import OPEN_END

# -- the dataset's valid-time extent ----------------------------------------------------------------------


@dataclass(frozen=True)
class Extent:
    lo: int | None  # least vt_s
    last_start: int | None  # greatest vt_s
    hi: int | None  # exclusive end of anything valid; None: something is valid forever

    def to_dict(self) -> dict[str, Any]:
        return {"vt_min": self.lo, "vt_max": self.last_start, "valid_until": self.hi}


def dataset_extent(ctx: OpContext, as_of_tt: int | None) -> Extent:
    def build() -> Extent:
        p = profile(ctx, as_of_tt)
        if p.vt_min is None:
            return Extent(None, None, 0)
        vt_e = ctx.edges(as_of_tt).vt_e
        if bool((vt_e >= OPEN_END).any()):
            return Extent(p.vt_min, p.vt_max, None)
        return Extent(p.vt_min, p.vt_max, int(vt_e.max()))

    return ctx.cached(("plan_extent", as_of_tt), build)


# -- the findings of one step -----------------------------------------------------------------------------


def data_findings(
    ctx: OpContext, s: Step, spec: OperatorSpec, as_of: int | None, *, temporal: bool, vacuous: bool
) -> list[Violation]:
    """The step's ``temporal_extent`` (when ``temporal``) and ``vacuous_arg`` (when ``vacuous``) findings;
    the vacuous ones are not yet filtered by whether they reach the answer (:mod:`engine.plan.vacuity`)."""
    found: list[Violation] = []

    def add(code: str, message: str, fld: str, legal: Any = None) -> None:
        found.append(Violation(code, f"step {s.id}: {message}", s.id, fld, legal))

    ext = dataset_extent(ctx, as_of)
    if ext.lo is None:
        if vacuous and spec.edge_arrays:
            add("vacuous_arg", f"nothing is believed at as_of_tt={as_of}", "args.as_of_tt")
        return found
    prof = profile(ctx, as_of)
    hi = ext.hi if ext.hi is not None else OPEN_END
    legal = ext.to_dict()
    events = _event_windows(spec, s.args)
    for where, w in _windows(s.args):
        if temporal and (w["t_b"] <= ext.lo or w["t_a"] >= hi):
            add(
                "temporal_extent",
                f"{where} [{w['t_a']}, {w['t_b']}) lies outside the dataset's valid-time extent "
                f"[{ext.lo}, {hi})",
                f"args.{where}",
                legal,
            )
        elif vacuous and where in events and prof.events_in(w["t_a"], w["t_b"]) == 0:
            add(
                "vacuous_arg",
                f"{where} [{w['t_a']}, {w['t_b']}) contains no events, so the answer is empty whatever "
                "the data",
                f"args.{where}",
                _nearest_events(prof.vt_sorted, w["t_a"], w["t_b"]),
            )
    for where, (a, b) in _predicate_periods(spec, s.args):
        if a >= b:
            if vacuous:
                add(
                    "vacuous_arg",
                    f"{where}: its predicates on the event time admit no time at all",
                    f"args.{where}",
                )
        elif temporal and (b <= ext.lo or a >= hi):
            add(
                "temporal_extent",
                f"{where} selects events in [{a}, {b}), which lies outside the dataset's valid-time extent "
                f"[{ext.lo}, {hi}) (the same refusal as a window there)",
                f"args.{where}",
                legal,
            )
        elif vacuous and prof.events_in(a, b) == 0:
            add(
                "vacuous_arg",
                f"{where} selects events in [{a}, {b}), which contains no events, so the answer is empty "
                "whatever the data",
                f"args.{where}",
                _nearest_events(prof.vt_sorted, a, b),
            )
    for name, t in _time_points(spec, s.args):
        if temporal and not ext.lo <= t < hi:
            add(
                "temporal_extent",
                f"{name}={t} lies outside the dataset's valid-time extent [{ext.lo}, {hi})",
                f"args.{name}",
                legal,
            )
    period = spec.traits.period
    t1, t2 = (s.args.get(period.start), s.args.get(period.end)) if period else (None, None)
    if period and _int(t1) and _int(t2) and t1 < t2 and temporal and (t2 <= ext.lo or t1 >= hi):
        add(
            "temporal_extent",
            f"the period [{period.start}, {period.end}) = [{t1}, {t2}) lies outside the dataset's "
            f"valid-time extent [{ext.lo}, {hi})",
            f"args.{period.start}",
            legal,
        )
    if not vacuous:
        return found
    for path, _ in marked(spec.args, NonEmpty):
        for where, value in literals_at(s.args, path):
            if value == []:
                add(
                    "vacuous_arg",
                    f"args.{where} is an empty list, which selects nothing",
                    f"args.{where}",
                )
    own = spec.traits.vacuous(s.args) if spec.traits.vacuous is not None else None
    if own is not None:
        add("vacuous_arg", own.message, f"args.{own.field}", own.legal)
    return found


# -- helpers ---------------------------------------------------------------------------------------------


def _windows(args: dict[str, Any]) -> list[tuple[str, dict[str, int]]]:
    """Literal windows ``{t_a, t_b}`` (ints, t_a < t_b) anywhere in the args, with their location."""
    out: list[tuple[str, dict[str, int]]] = []

    def walk(v: Any, where: str) -> None:
        if isinstance(v, dict) and not is_ref(v):
            ta, tb = v.get("t_a"), v.get("t_b")
            if where.endswith("window") and all(
                isinstance(x, int) and not isinstance(x, bool) for x in (ta, tb)
            ):
                if ta < tb:  # type: ignore[operator]
                    out.append((where, {"t_a": ta, "t_b": tb}))  # type: ignore[dict-item]
                return
            for k, x in v.items():
                walk(x, f"{where}.{k}" if where else k)

    walk(args, "")
    return out


def _int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _time_points(spec: OperatorSpec, args: dict[str, Any]) -> list[tuple[str, int]]:
    """Literal time *points* (a snapshot time): the arguments marked :class:`TimePoint`."""
    return [
        (where, t)
        for path, _ in marked(spec.args, TimePoint)
        for where, t in literals_at(args, path)
        if _int(t)
    ]


def _predicate_periods(spec: OperatorSpec, args: dict[str, Any]) -> list[tuple[str, tuple[int, int]]]:
    """The period each literal list of event predicates selects (:mod:`engine.plan.premise`)."""
    out = []
    for path, _ in marked(spec.args, TimePredicates):
        for where, preds in literals_at(args, path):
            period = selected_period(preds)
            if period is not None:
                out.append((where, period))
    return out


def _event_windows(spec: OperatorSpec, args: dict[str, Any]) -> set[str]:
    """Where this call's windows select events by vt_s (an eventless one gives a trivially empty result)."""
    return {
        where
        for path, mark in marked(spec.args, EventWindow)
        if mark.when.holds(args)
        for where, _ in literals_at(args, path)
    }


def _nearest_events(vt: np.ndarray, t_a: int, t_b: int) -> dict[str, Any]:
    i = int(np.searchsorted(vt, t_a, "left"))
    return {
        "previous_event": int(vt[i - 1]) if i > 0 else None,
        "next_event": int(vt[i]) if i < len(vt) else None,
        "window_length": t_b - t_a,
    }
