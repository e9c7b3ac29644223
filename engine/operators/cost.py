"""The cost guard: estimate an operator call's time *before* running it, refuse it past a budget.

An estimate is ``seconds = base + Σ coefficient × work`` where the work terms (rows scanned, states
expanded, buckets, candidate triples, ...) come from the operator's cost function and a
:class:`StoreProfile`. The profile is built from backend counts and one pass over the believed edges'
``vt_s`` that is cached per store state (so no call scans the store just to price itself). Coefficients
are measured by ``tgms bench calibrate`` (``pipeline/bench/calibrate.py``) and shipped as package data,
``engine/operators/cost_model.json`` (:data:`SHIPPED_COST_MODEL`, read into :data:`COEFFICIENTS`; the terms
are :data:`TERMS`); a machine of one's own gets its own with ``tgms bench calibrate --write FILE`` and
``TGMS_COST_MODEL=FILE`` (a JSON object of coefficients that replaces the shipped ones it names), with no
edit of installed files.

A refusal is ``E_COST`` with the estimate, the budget and concrete narrowing suggestions with computed
values (``"use stride >= 86400000000"``), never a silent degradation.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tgms.engine.errors import CostError, InvalidArgError

if TYPE_CHECKING:
    from tgms.engine.operators.context import OpContext

DEFAULT_BUDGET_S = float(os.environ.get("TGMS_COST_BUDGET_S", "10"))

#: the terms of an estimate: seconds per unit of what each names
TERMS: dict[str, str] = {
    "base": "one call (fixed overhead)",
    "scan_row": "one edge version scanned / filtered in numpy or DuckDB",
    "row_out": "one row materialized into the payload (uids, props, dicts)",
    "state": "one (node, arrival) state expanded in a traversal",
    "triple": "one candidate event triple examined by the motif kernel",
    "bucket_row": "one (bucket, version) pair touched by a metric series",
    "index_row": "one believed version sorted into a derived per-store index (adjacency)",
}
#: names a JSON file of calibrated coefficients (``tgms bench calibrate --write FILE``) that replace the
#: shipped ones: the cost model of the machine the engine runs on, without editing installed files
COST_MODEL_ENV = "TGMS_COST_MODEL"
#: the shipped cost model (package data), measured by `tgms bench calibrate` on a 2-core VM, DuckDB backend
SHIPPED_COST_MODEL = Path(__file__).with_name("cost_model.json")


def load_cost_model(path: str | Path, complete: bool = False) -> dict[str, float]:
    """The coefficients a cost-model file sets: a JSON object whose keys are coefficient names
    (:data:`TERMS`) and whose values are positive seconds; with ``complete``, every term. Anything else is
    ``E_INVALID_ARG`` naming the file and the entry."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as exc:
        raise InvalidArgError(f"{COST_MODEL_ENV}={path}: cannot read a JSON cost model ({exc})") from None
    if not isinstance(raw, dict) or not raw:
        raise InvalidArgError(f"{COST_MODEL_ENV}={path}: a cost model is a non-empty JSON object")
    out = {}
    for name, value in raw.items():
        if name not in TERMS:
            raise InvalidArgError(
                f"{COST_MODEL_ENV}={path}: unknown coefficient {name!r}", legal=sorted(TERMS)
            )
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or value <= 0:
            raise InvalidArgError(f"{COST_MODEL_ENV}={path}: {name} must be a positive number of seconds")
        out[name] = float(value)
    if complete and set(out) != set(TERMS):
        missing = sorted(set(TERMS) - set(out))
        raise InvalidArgError(f"{path}: the cost model lacks {missing}", legal=sorted(TERMS))
    return {name: out[name] for name in TERMS if name in out}


#: seconds per unit of work (:data:`TERMS`), as shipped
COEFFICIENTS: dict[str, float] = load_cost_model(SHIPPED_COST_MODEL, complete=True)


_LOADED: dict[str, dict[str, float]] = {}


def coefficients() -> dict[str, float]:
    """The coefficients in force: the shipped :data:`COEFFICIENTS`, with those of ``$TGMS_COST_MODEL``'s
    file over them (read once per path; a bad file fails the first estimate, as a structured error)."""
    path = os.environ.get(COST_MODEL_ENV)
    if not path:
        return COEFFICIENTS
    if path not in _LOADED:
        _LOADED[path] = {**COEFFICIENTS, **load_cost_model(path)}
    return _LOADED[path]


def memory_factor(n: float) -> float:
    """How much more a per-row index build or a random-access kernel step costs on n rows than the
    coefficients (fitted mostly on <= 10^6 rows, where the arrays fit the caches far better) say: 1 up to
    10^6, then 1 + log10(n / 10^6). Measured at 10^7: the adjacency build 3e-7 s per row and the motif group
    indexes 3.9e-7 s per row against the fitted 1.3e-7; the acyclic-triangle kernel 600 ns per wedge."""
    return 1.0 if n <= 1e6 else 1.0 + math.log10(n / 1e6)


@dataclass(frozen=True)
class StoreProfile:
    """Cheap statistics of the believed edges at one belief state."""

    n_edges: int
    n_nodes: int
    vt_min: int | None
    vt_max: int | None
    vt_sorted: np.ndarray  # sorted vt_s of believed edges (for window-size estimates)
    max_degree: int

    def events_in(self, t_a: int, t_b: int) -> int:
        """Believed edge versions with ``t_a <= vt_s < t_b`` (exact, by binary search)."""
        return int(
            np.searchsorted(self.vt_sorted, t_b, "left") - np.searchsorted(self.vt_sorted, t_a, "left")
        )


def profile(ctx: OpContext, as_of_tt: int | None = None) -> StoreProfile:
    def build() -> StoreProfile:
        # from the context's edge statistics: the edge arrays when loaded, else aggregate queries
        vt = ctx.edge_start_times(as_of_tt)
        deg = ctx.degrees(as_of_tt)
        n = len(vt)
        return StoreProfile(
            n_edges=n,
            n_nodes=len(ctx.uids()),
            vt_min=int(vt[0]) if n else None,
            vt_max=int(vt[-1]) if n else None,
            vt_sorted=vt,
            max_degree=int(deg.max()) if n else 0,
        )

    return ctx.cached(("profile", as_of_tt), build)


@dataclass
class CostEstimate:
    work: dict[str, float]
    suggestions: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        c = coefficients()
        return c["base"] + sum(c[k] * v for k, v in self.work.items())

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 6), "work": {k: int(v) for k, v in self.work.items()}}


#: units of ``scan_row`` per JSON value a call or a read walks: validating, canonicalizing and digesting a
#: value costs ~40 times scanning an edge version (measured: 26,016 list_events rows ~0.6 s and 10^6 ints
#: ~0.5 s through compute's envelope; an executor's full read of 10^6 list_events rows of 15 values ~20 s,
#: priced 22.6 s)
VALUE_UNITS = 40


def json_width(element: Any) -> int:
    """The JSON values one list element holds (an object's fields, one level of nesting counted): what
    validating, canonicalizing and digesting it walks. A list is priced by its first element."""
    if isinstance(element, dict):
        return 1 + len(element) + sum(len(v) for v in element.values() if isinstance(v, (dict, list)))
    return 1 + len(element) if isinstance(element, list) else 1


def values_estimate(items: int, first: Any, suggestions: list[str]) -> CostEstimate:
    """The price of walking ``items`` list elements shaped like ``first`` (:data:`VALUE_UNITS` a value)."""
    return CostEstimate({"scan_row": VALUE_UNITS * items * json_width(first), "row_out": items}, suggestions)


def check_budget(op: str, est: CostEstimate, budget_s: float | None) -> None:
    budget = DEFAULT_BUDGET_S if budget_s is None else budget_s
    if est.seconds > budget:
        raise CostError(
            f"{op}: estimated {est.seconds:.2f} s exceeds the budget of {budget:.2f} s",
            op=op,
            estimate=est.to_dict(),
            budget_s=budget,
            suggestions=est.suggestions or ["narrow the window or the seeds"],
        )


def recheck(op: str, est: CostEstimate, what: str, budget_s: float | None) -> None:
    """The guard's second look, from inside a call that now knows its exact work (e.g. the wedge count of
    a motif selection): ``E_COST`` if that estimate exceeds the call's budget. Unguarded calls (the
    budget is None) pass. The estimate before the call is a model of the store's statistics and can be
    off by 10x on skewed selections; this bounds what an admitted call may cost."""
    if budget_s is not None and est.seconds > budget_s:
        raise CostError(
            f"{op}: {what}: estimated {est.seconds:.2f} s exceeds the budget of {budget_s:.2f} s",
            op=op,
            stage="run",
            estimate=est.to_dict(),
            budget_s=budget_s,
            suggestions=est.suggestions or ["narrow the window or the seeds"],
        )
