"""Mutation classes that need another execution: a control run or a variant plan.

- wrong belief state: a probe's ``before`` answer replaced by what the same plan says with every
  ``as_of_tt`` removed (the current belief) — caught because the cited trace pins the old belief;
- truncated-page count: the count of a page (``compute count`` over a list cut by a small ``limit``)
  claimed as the answer — caught only through truncation taint (the compute is refused), so its "without
  mechanism" run executes and verifies with taint off;
- value from a shifted window: the plan re-run with its windows moved by their own length;
- refused citation: the right total quoted from the refused page count.

Runs are cached on the pool (``item.cache``) so sampling with replacement does not re-execute.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from tgms.engine.api import Ref, TGMSError, Trace, VerifyConfig, typed_value
from tgms.pipeline.mutations.base import Mutant, mutant, mutation_class
from tgms.pipeline.mutations.pool import PoolItem, run_plan

PAGE_STEP = "page_count"
MAX_PAGE = 50  # the largest page a truncated-page variant cuts to


def _plan(item: PoolItem) -> dict[str, Any]:
    """The item's oracle plan (the pool keeps only tasks that have one)."""
    assert item.task.oracle_plan is not None
    return item.task.oracle_plan


def _strip(x: Any, key: str) -> Any:
    if isinstance(x, dict):
        return {k: _strip(v, key) for k, v in x.items() if k != key}
    if isinstance(x, list):
        return [_strip(v, key) for v in x]
    return x


def shift(x: Any) -> Any:
    """Every ``{t_a, t_b}`` window moved later by its own length."""
    if isinstance(x, dict):
        if isinstance(x.get("t_a"), int) and isinstance(x.get("t_b"), int):
            n = x["t_b"] - x["t_a"]
            return {**x, "t_a": x["t_a"] + n, "t_b": x["t_b"] + n}
        return {k: shift(v) for k, v in x.items()}
    if isinstance(x, list):
        return [shift(v) for v in x]
    return x


def _answer_of(item: PoolItem, key: str, plan: dict[str, Any]) -> Any:
    """The typed answer value of ``plan`` (cached under ``key``), or None when it has none."""
    if key not in item.cache:
        value = None
        try:
            got = run_plan(plan, item.ctx).answer()
            if got is not None and "value" in got:
                value = typed_value(got["kind"], got["value"])
        except (TGMSError, ValueError):
            value = None
        item.cache[key] = value
    return item.cache[key]


def is_answer_claim(item: PoolItem) -> bool:
    c = item.claim
    spec = _plan(item).get("answer_spec") or {}
    return c["type"] in ("count", "value") and c.get("from") == spec.get("from")


def _with_value(item: PoolItem, value: Any) -> Mutant | None:
    c = item.claim
    if value is None or value == c["value"] or (c["type"] == "count" and not isinstance(value, int)):
        return None
    return mutant(item, {**c, "value": value})


def _probe_before(item: PoolItem) -> bool:
    return item.task.probe_half == "before" and item.claim["type"] in ("count", "value")


@mutation_class("wrong belief state", row=6, applies_to="probe `before` answer claims", applies=_probe_before)
def wrong_belief(item: PoolItem, rng: random.Random) -> Mutant | None:
    if item.task.probe_half != "before" or not is_answer_claim(item):
        return None
    plan = _strip(copy.deepcopy(_plan(item)), "as_of_tt")
    return _with_value(item, _answer_of(item, f"belief:{item.task_id}", plan))


def _windowed_answer(item: PoolItem) -> bool:
    return is_answer_claim(item) and shift(_plan(item)) != _plan(item)


@mutation_class(
    "value from a shifted window",
    row=11,
    applies_to="answer claims of windowed plans",
    applies=_windowed_answer,
)
def shifted_window(item: PoolItem, rng: random.Random) -> Mutant | None:
    if not is_answer_claim(item):
        return None
    plan = shift(copy.deepcopy(_plan(item)))
    if plan == _plan(item):
        return None
    return _with_value(item, _answer_of(item, f"shift:{item.task_id}", plan))


def paged_list(item: PoolItem) -> tuple[str, str, int] | None:
    """``(step, list, total)`` when the claim is a count ``from`` a non-compute step's ``L_total``."""
    c = item.claim
    src = c.get("from")
    if c["type"] != "count" or src is None:
        return None
    ref = Ref.parse(src)
    rec = item.trace.record(ref.step)
    if rec is None or rec.op == "compute" or ref.path or not ref.field.endswith("_total"):
        return None
    if not isinstance(c["value"], int) or c["value"] < 2:
        return None
    return ref.step, ref.field[: -len("_total")], c["value"]


def page_plan(raw: dict[str, Any], step: str, lst: str, limit: int) -> dict[str, Any]:
    """The plan with ``step`` cut to ``limit`` rows and a ``compute count`` over the page as the answer."""
    plan = copy.deepcopy(raw)
    for s in plan["steps"]:
        if s["id"] == step:
            s["args"]["limit"] = limit
    plan["steps"].append(
        {"id": PAGE_STEP, "op": "compute", "args": {"fn": "count", "input": {"$ref": f"{step}.{lst}"}},
         "depends_on": [step]}
    )  # fmt: skip
    plan["answer_spec"] = {"kind": "count", "from": f"{PAGE_STEP}.value"}
    return plan


def _page_traces(item: PoolItem, step: str, lst: str, limit: int) -> tuple[Trace, Trace] | None:
    key = f"page:{item.task_id}:{limit}"
    if key not in item.cache:
        plan = page_plan(_plan(item), step, lst, limit)
        try:
            item.cache[key] = (run_plan(plan, item.ctx), run_plan(plan, item.ctx, taint=False))
        except TGMSError:
            item.cache[key] = None
    return item.cache[key]


def _page_case(item: PoolItem, rng: random.Random) -> tuple[int, int, Trace, Trace] | None:
    found = paged_list(item)
    if found is None or any(s["id"] == PAGE_STEP for s in _plan(item)["steps"]):
        return None
    step, lst, total = found
    limit = rng.randint(1, min(total - 1, MAX_PAGE))
    traces = _page_traces(item, step, lst, limit)
    if traces is None:
        return None
    tainted, plain = traces
    got = plain.answer()
    if got is None or got.get("value") != limit:  # the page did not come out at the limit
        return None
    return limit, total, tainted, plain


def _page_claim(item: PoolItem, value: int) -> dict[str, Any]:
    c = item.claim
    return {
        "id": c["id"],
        "type": "count",
        "value": value,
        "evidence": [PAGE_STEP],
        "from": f"{PAGE_STEP}.value",
    }


def _paged(item: PoolItem) -> bool:
    return paged_list(item) is not None


@mutation_class(
    "truncated-page count",
    row=7,
    applies_to="count claims from a list's L_total",
    applies=_paged,
    has_without=True,
)
def truncated_page(item: PoolItem, rng: random.Random) -> Mutant | None:
    case = _page_case(item, rng)
    if case is None:
        return None
    limit, _, tainted, plain = case
    return mutant(item, _page_claim(item, limit), trace=tainted, without=(plain, VerifyConfig(taint=False)))


@mutation_class(
    "right count, refused step cited",
    row=13,
    applies_to="count claims from a list's L_total",
    applies=_paged,
)
def refused_citation(item: PoolItem, rng: random.Random) -> Mutant | None:
    """The right total, but cited from the page count the taint refused."""
    case = _page_case(item, rng)
    if case is None:
        return None
    _, total, tainted, _ = case
    rec = tainted.record(PAGE_STEP)
    if rec is None or rec.ok:
        return None
    return mutant(item, _page_claim(item, total), trace=tainted)
