"""A new operator is one module: two toy operators, declared here and registered only for these tests,
flow through the generated schemas and manual, every plan-verifier rule (grounding, temporal, vacuous,
cost, answer kinds), the executor with truncation taint, the mechanical reporter and the claim verifier —
with no edit anywhere else. What the checks need to know is in the declarations below: argument markers
(``Uid``, ``EventWindow``, ``TimePoint``, ``NonEmpty``, ``Operand``) and ``Traits``.

- ``toy_contacts``: the events touching ``uid`` in ``window`` (``rows`` = counterpart uid and time) and
  their ``count``, a pattern count the reporter turns into a re-executed ``temporal_pattern`` claim; its
  own vacuous rule: ``min_gap`` at least the window's length leaves no two events to pair;
- ``toy_tally``: the number of elements of ``input``, a list-reducing call (refused over a cut page).

The store (``plan_ctx``): uids a..e, events in [1000, 1051) and [1900, 2000), none in [1100, 1800).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import numpy as np
import pytest
from pydantic import Field

from tests.engine.plan._plans import TASK, W, check, one, plan, ref, step
from tgms.engine.claims.reporter import mechanical_answer
from tgms.engine.claims.verifier import verify_claims
from tgms.engine.errors import TGMSError
from tgms.engine.execute.executor import execute
from tgms.engine.operators.base import Model, OpArgs, PagedOutput, Time, Uid, UidList, Window
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import CostEstimate, StoreProfile
from tgms.engine.operators.envelope import call
from tgms.engine.operators.registry import REGISTRY, operator, registered
from tgms.engine.operators.schemas import operator_schemas, planner_manual, tool_definitions
from tgms.engine.operators.traits import ALWAYS, EventWindow, NonEmpty, Operand, TimePoint, Traits, Vacancy
from tgms.engine.plan.model import build_plan
from tgms.engine.plan.verifier import VerifierConfig

EMPTY = {"t_a": 1100, "t_b": 1800}

# -- the toy operators -----------------------------------------------------------------------------------


class ContactsArgs(OpArgs):
    uid: Uid
    window: Annotated[Window, EventWindow()]
    at: Annotated[Time, TimePoint(), Field(description="unused; a snapshot time")] | None = None
    among: Annotated[UidList, NonEmpty()] | None = None
    min_gap: Annotated[int, Field(ge=0)] = 0
    weight: Annotated[int, Field(ge=1, description="work multiplier (drives the cost estimate)")] = 1


class Contact(Model):
    uid: str
    t: int


class ContactsOut(PagedOutput):
    rows: list[Contact]
    rows_total: int
    count: int


def _no_pair(args: Any) -> Vacancy | None:
    w, gap = args.get("window"), args.get("min_gap")
    if not (isinstance(w, dict) and isinstance(gap, int) and all(isinstance(w.get(k), int) for k in W)):
        return None
    width = w["t_b"] - w["t_a"]
    return (
        Vacancy("min_gap", f"min_gap {gap} leaves no two events in the window", width)
        if gap >= width
        else None
    )


def contacts(ctx: OpContext, a: ContactsArgs) -> dict[str, Any]:
    (nid,) = ctx.require_known([a.uid], a.as_of_tt, "uid")
    e, uids = ctx.edges(a.as_of_tt), ctx.uids()
    pos = np.flatnonzero(
        ((e.src == nid) | (e.dst == nid)) & (e.vt_s >= a.window.t_a) & (e.vt_s < a.window.t_b)
    )
    other = np.where(e.src[pos] == nid, e.dst[pos], e.src[pos])
    rows = [{"uid": uids[o], "t": int(t)} for o, t in zip(other.tolist(), e.vt_s[pos].tolist(), strict=True)]
    if a.among is not None:
        rows = [r for r in rows if r["uid"] in a.among]
    return {"rows": rows, "rows_total": len(rows), "count": len(rows)}


class TallyArgs(OpArgs):
    input: Annotated[list[Any], Operand()]


class TallyOut(PagedOutput):
    value: int
    rows: list[Any]
    rows_total: int


def tally(ctx: OpContext, a: TallyArgs) -> dict[str, Any]:
    del ctx
    return {"value": len(a.input), "rows": [], "rows_total": 0}


def _cost(p: StoreProfile, a: Any) -> CostEstimate:
    return CostEstimate({"scan_row": p.n_edges * getattr(a, "weight", 1)}, ["lower the weight"])


@pytest.fixture(autouse=True)
def toys() -> Iterator[None]:
    with registered():
        operator(
            name="toy_contacts",
            family="toy",
            args=ContactsArgs,
            output=ContactsOut,
            cost=_cost,
            manual="Lists the events touching uid in window. Rows are {uid, t} of the counterpart.",
            example={"args": {"uid": "a", "window": W}, "outputs": ["count"]},
            traits=Traits(pattern_counts=("count",), vacuous=_no_pair),
        )(contacts)
        operator(
            name="toy_tally",
            family="toy",
            args=TallyArgs,
            output=TallyOut,
            cost=_cost,
            manual="Counts the elements of input.",
            example={"args": {"input": [1, 2]}, "outputs": ["value"]},
            edge_arrays=False,
            # a whole input read from an empty step is empty; one term of a literal list is not
            traits=Traits(reduces=ALWAYS, keeps_empty=lambda args, loc: len(loc) < 2),
        )(tally)
        yield
    assert "toy_contacts" not in REGISTRY and "toy_tally" not in REGISTRY


def touch(sid: str = "s1", **args: Any) -> dict[str, Any]:
    return step(sid, "toy_contacts", **({"uid": "a", "window": dict(W)} | args))


# -- registry, schemas, manual --------------------------------------------------------------------------


def test_schemas_and_manual_are_generated_for_it() -> None:
    assert [t["name"] for t in tool_definitions()][-2:] == ["toy_contacts", "toy_tally"]
    schema = operator_schemas()["toy_contacts"]
    assert schema["declared_outputs"] == ["truncated", "cursor", "rows", "rows_total", "count"]
    assert {"uid", "window", "at", "among", "min_gap", "weight"} <= set(schema["args"]["properties"])
    manual = planner_manual()
    assert "### toy_contacts (toy)" in manual and f"{len(REGISTRY)} operators." in manual  # the toys counted


def test_a_name_is_registered_once() -> None:
    with pytest.raises(RuntimeError, match="registered twice"):
        operator(name="toy_tally", family="toy", args=TallyArgs, output=TallyOut, cost=_cost, manual="x.",
                 example={"args": {}})(tally)  # fmt: skip


def test_it_runs_through_the_envelope(plan_ctx: OpContext) -> None:
    env = call(plan_ctx, "toy_contacts", {"uid": "a", "window": W, "limit": 2})
    assert env["payload"]["count"] == 6 and env["payload"]["truncated"] is True
    assert [r["uid"] for r in env["payload"]["rows"]] == ["b", "c"]
    with pytest.raises(TGMSError) as exc:
        call(plan_ctx, "toy_contacts", {"uid": "a", "window": W, "weight": 10**9})
    assert exc.value.code == "E_COST"


# -- the plan verifier ------------------------------------------------------------------------------------


def test_a_valid_plan(plan_ctx: OpContext) -> None:
    tally_rows = step("s2", "toy_tally", ("s1",), input=ref("s1.rows"))
    raw = plan(touch(), tally_rows, answer={"kind": "count", "from": "s2.value"})
    assert check(raw, plan_ctx).violations == []


@pytest.mark.parametrize(
    ("s", "code", "field"),
    [
        (touch(uid="c"), "grounding", "args.uid"),
        (step("s1", "toy_tally", input=["x", "c"]), "grounding", "args.input[1]"),  # an untyped operand
        (touch(window={"t_a": 5000, "t_b": 6000}), "temporal_extent", "args.window"),
        (touch(at=10**6), "temporal_extent", "args.at"),
        (touch(window=EMPTY), "vacuous_arg", "args.window"),
        (touch(among=[]), "vacuous_arg", "args.among"),
        (touch(min_gap=1000), "vacuous_arg", "args.min_gap"),
        (touch(weight=10**8), "cost", "args"),  # ~32 s: over the step budget, not the plan's
        (touch(bogus=1), "arg_name", "args.bogus"),
    ],
)
def test_every_rule_applies(plan_ctx: OpContext, s: dict[str, Any], code: str, field: str) -> None:
    v = one(plan(s), plan_ctx, code)
    assert (v.step, v.field) == ("s1", field)


def test_answer_kinds_follow_its_output_schema(plan_ctx: OpContext) -> None:
    assert check(plan(touch(), answer={"kind": "entity_set", "from": "s1.rows"}), plan_ctx).valid
    v = one(plan(touch(), answer={"kind": "entity_set", "from": "s1.count"}), plan_ctx, "answer_kind")
    assert v.step == "s1"


def test_its_keeps_empty_rule_decides_what_reaches_the_answer(plan_ctx: OpContext) -> None:
    terms = step("t", "toy_tally", ("s1", "s2"), input=[ref("s1.count"), ref("s2.count")])
    raw = plan(touch(), touch("s2", window=EMPTY), terms, answer={"kind": "count", "from": "t.value"})
    assert check(raw, plan_ctx).violations == []  # an empty term is a legitimate zero
    whole = step("t", "toy_tally", ("s2",), input=ref("s2.rows"))
    raw = plan(touch("s2", window=EMPTY), whole, answer={"kind": "count", "from": "t.value"})
    assert [(v.code, v.step) for v in check(raw, plan_ctx).violations] == [("vacuous_arg", "s2")]


# -- executor, taint, reporter, claim verifier -----------------------------------------------------------


def test_a_reducing_call_over_a_cut_page_is_refused(plan_ctx: OpContext) -> None:
    def tallied(limit: int) -> Any:
        raw = plan(touch(limit=limit), step("s2", "toy_tally", ("s1",), input=ref("s1.rows")),
                   answer={"kind": "count", "from": "s2.value"})  # fmt: skip
        return execute(build_plan(raw), plan_ctx)

    cut = tallied(2)
    assert cut.record("s1").truncated  # type: ignore[union-attr]
    s2 = cut.record("s2")
    assert s2 is not None and s2.status == "refused"
    assert s2.error is not None and s2.error["details"]["reason"] == "truncated_input"
    whole = tallied(100)
    assert whole.answer() == {"kind": "count", "from": "s2.value", "value": 6, "truncated": False}


def test_its_pattern_count_is_claimed_and_reexecuted(plan_ctx: OpContext) -> None:
    trace = execute(build_plan(plan(touch(), answer={"kind": "count", "from": "s1.count"})), plan_ctx)
    answer = mechanical_answer(trace)
    assert [c["type"] for c in answer["claims"]] == ["count", "temporal_pattern"]
    assert answer["claims"][1]["assertion"]["op"] == "toy_contacts"
    verdicts = verify_claims(answer, trace, plan_ctx)
    assert [v.verdict for v in verdicts] == ["supported", "supported"]
    assert "re-executed toy_contacts" in verdicts[1].reason


def test_the_verifier_config_budget_applies(plan_ctx: OpContext) -> None:
    tight = VerifierConfig(task_uids=TASK.task_uids, budget_s=1e-9)
    assert one(plan(touch()), plan_ctx, "cost", tight).step == "s1"
