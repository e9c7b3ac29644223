"""The verifier's check groups, its data-free mode, the default task uids, and refs in literal arguments.

- every ablation group switched off (``VerifierConfig.without``) removes exactly its own violations;
- without a store context the data checks (temporal, vacuous, cost, grounding against the question) are
  skipped, and the contract and units checks still run;
- when ``task_uids`` is None the task input is the known uids mentioned in the plan's question;
- a ``$ref`` anywhere in the args is left out of literal argument checking (no false arg_* violations).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.engine.plan._plans import W, check, one, only, plan, reach, ref, resolve_c, step
from tgms.engine.operators.context import OpContext
from tgms.engine.plan.verifier import CHECKS, VerifierConfig, verify

TASK = frozenset({"a"})
VT = {"$ref": "s1.rows[0].vt_s"}  # a time read from entity_history
#: the code each step of MANY breaks, by check group
GROUP_OF = {
    "unknown_op": "structure",
    "output_field": "output_contracts",
    "arg_value": "args",
    "temporal_extent": "temporal",
    "vacuous_arg": "vacuous",
    "grounding": "grounding",
    "cost": "cost",
    "unit": "units",
}
MANY = plan(
    reach(src="c"),  # grounding (c is not in the task) + cost
    step("s2", "compute", ("s1",), fn="count", input=ref("s1.nodes")),  # output_field (not priced)
    step("s3", "snapshot_subgraph", seeds=["a"], t_valid=5000),  # temporal_extent + cost
    step("s4", "count_temporal_motifs", motif="M_triangle_cyclic", delta=100,
         window={"t_a": 1100, "t_b": 1800}),  # vacuous_arg + cost
    reach("s5", limit=0),  # arg_value (not priced)
    step("s6", "no_such_op"),  # unknown_op
    step("s7", "compute", ("s1",), fn="sum", field="earliest_arrival", input=ref("s1.rows")),  # unit
)  # fmt: skip
FULL = Counter(
    {"grounding": 1, "cost": 3, "output_field": 1, "temporal_extent": 1, "vacuous_arg": 1, "arg_value": 1,
     "unknown_op": 1, "unit": 1}
)  # fmt: skip


def codes(raw: dict[str, Any], ctx: OpContext | None, config: VerifierConfig) -> Counter[str]:
    return Counter(v.code for v in verify(raw, ctx, config).violations)


def test_every_group_is_violated_once_in_the_reference_plan(plan_ctx: OpContext) -> None:
    got = codes(MANY, plan_ctx, VerifierConfig(task_uids=TASK, budget_s=1e-9))
    assert got == FULL
    assert set(GROUP_OF.values()) == set(CHECKS)


@pytest.mark.parametrize("group", CHECKS)
def test_switching_a_group_off_removes_only_its_violations(plan_ctx: OpContext, group: str) -> None:
    config = VerifierConfig.without(group, task_uids=TASK, budget_s=1e-9)
    report = verify(MANY, plan_ctx, config)
    expected = Counter({c: n for c, n in FULL.items() if GROUP_OF[c] != group})
    assert Counter(v.code for v in report.violations) == expected
    assert report.checks == {c: c != group for c in CHECKS}


def test_without_several_groups(plan_ctx: OpContext) -> None:
    config = VerifierConfig.without("grounding", "cost", "output_contracts", task_uids=TASK, budget_s=1e-9)
    assert codes(MANY, plan_ctx, config) == Counter(
        {"temporal_extent": 1, "vacuous_arg": 1, "arg_value": 1, "unknown_op": 1, "unit": 1}
    )
    assert (
        codes(MANY, plan_ctx, VerifierConfig(checks=frozenset(), task_uids=TASK, budget_s=1e-9)) == Counter()
    )


def test_without_structure_drops_parse_violations(plan_ctx: OpContext) -> None:
    raw = plan(reach(deps=("s9",)), reach("s1"))  # unknown_dependency, duplicate_id
    assert [v.code for v in verify(raw, plan_ctx, VerifierConfig(task_uids=TASK)).violations] == [
        "duplicate_id",
        "unknown_dependency",
    ]
    assert verify(raw, plan_ctx, VerifierConfig.without("structure", task_uids=TASK)).violations == []


def test_without_output_contracts_drops_answer_rules(plan_ctx: OpContext) -> None:
    raw = plan(reach(), answer={"kind": "count", "from": "s1.count"})
    assert one(raw, plan_ctx, "answer_field", VerifierConfig(task_uids=TASK)).field == "answer_spec.from"
    assert verify(raw, plan_ctx, VerifierConfig.without("output_contracts", task_uids=TASK)).violations == []


def test_without_args_but_with_cost_reports_no_arg_violation(plan_ctx: OpContext) -> None:
    raw = plan(reach(bogus=1), reach("s2", src=7))
    assert codes(raw, plan_ctx, VerifierConfig(task_uids=TASK)) == Counter({"arg_name": 1, "arg_type": 1})
    report = verify(raw, plan_ctx, VerifierConfig.without("args", task_uids=TASK, budget_s=1e-9))
    assert report.violations == [] and report.estimates_s == {}  # invalid steps are not priced


def test_without_rejects_an_unknown_group() -> None:
    with pytest.raises(ValueError, match="unknown verifier checks"):
        VerifierConfig.without("grounding", "typo")


# -- without a store context ------------------------------------------------------------------------------


def test_without_ctx_the_data_checks_are_skipped() -> None:
    report = verify(MANY, None, VerifierConfig(budget_s=1e-9))
    assert Counter(v.code for v in report.violations) == Counter(
        {"output_field": 1, "arg_value": 1, "unknown_op": 1, "unit": 1}  # units need no data
    )
    assert report.estimates_s == {} and report.task_uids == []


def test_without_ctx_explicit_task_uids_are_still_grounded() -> None:
    report = verify(MANY, None, VerifierConfig(task_uids=TASK, budget_s=1e-9))
    assert Counter(v.code for v in report.violations) == Counter(
        {"output_field": 1, "arg_value": 1, "unknown_op": 1, "grounding": 1, "unit": 1}
    )
    assert report.task_uids == ["a"]


def test_without_ctx_lesson_1_is_still_caught() -> None:
    raw = plan(resolve_c(), reach("s2", ("s1",), src=ref("s1.rows[0].uid")),
               step("s3", "compute", ("s2",), fn="diff", a=ref("s2.count"), b=1))  # fmt: skip
    v = only(verify(raw), "output_field")
    assert (v.step, v.field) == ("s3", "args.a") and "rows_total" in v.legal


# -- the default task uids: the question --------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    ["Whom can c reach?", "Start at c.", "From c, who is reachable", "Compare (c) and b: who?", "c"],
)
def test_uids_in_the_question_are_the_task_input(plan_ctx: OpContext, question: str) -> None:
    report = verify(plan(reach(src="c"), q=question), plan_ctx)
    assert report.violations == []
    assert "c" in report.task_uids


def test_question_words_that_are_not_uids_do_not_count(plan_ctx: OpContext) -> None:
    report = verify(plan(reach(src="c"), q="Whom can node C reach from a?"), plan_ctx)
    assert report.task_uids == ["a"]  # "C" is not the uid "c"; "can", "node" are no uids
    v = only(report, "grounding")
    assert (v.step, v.field, v.legal) == ("s1", "args.src", ["a"])


def test_explicit_task_uids_override_the_question(plan_ctx: OpContext) -> None:
    raw = plan(reach(src="c"), q="Whom can c reach?")
    assert one(raw, plan_ctx, "grounding", VerifierConfig(task_uids=frozenset({"a"}))).field == "args.src"


# -- refs in literal argument checking ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "consumer",
    [
        pytest.param(reach("s2", ("s1",), window={"t_a": VT, "t_b": 1500}), id="window-t_a"),
        pytest.param(reach("s2", ("s1",), window={"t_a": 1000, "t_b": VT}), id="window-t_b"),
        pytest.param(reach("s2", ("s1",), window=ref("s1.rows[0]")), id="window-whole"),
        pytest.param(step("s2", "compute", ("s1",), fn="diff", a=ref("s1.rows_total"), b=1), id="compute-a"),
        pytest.param(step("s2", "compute", ("s1",), fn="count", input=ref("s1.rows")), id="compute-input"),
        pytest.param(step("s2", "snapshot_subgraph", ("s1",), seeds=[ref("s1.rows[0].uid"), "a"],
                          t_valid=1500), id="seeds-element"),
        pytest.param(step("s2", "co_active", ("s1",), a_spec={"uid": ref("s1.rows[0].uid")},
                          b_spec={"uid": "a"}, allen_relation="during"), id="co_active-spec"),
        pytest.param(step("s2", "neighborhood_evolution", ("s1",), uid="a", t1=VT,
                          t2=1500), id="neighborhood-t1"),
        pytest.param(step("s2", "graph_metric_timeseries", ("s1",), metric="node_count", window=W,
                          stride=ref("s1.rows_total")), id="stride"),
        pytest.param(step("s2", "burst_detection", ("s1",), target=ref("s1.rows[0].uid"), window=W,
                          stride=100), id="burst-target"),
    ],
)  # fmt: skip
def test_refs_do_not_cause_false_arg_violations(plan_ctx: OpContext, consumer: dict[str, Any]) -> None:
    producer = step("s1", "entity_history", uid="a")
    assert check(plan(producer, consumer), plan_ctx, VerifierConfig(task_uids=TASK)).violations == []


def test_literal_args_next_to_a_ref_are_still_checked(plan_ctx: OpContext) -> None:
    raw = plan(
        step("s1", "entity_history", uid="a"),
        reach("s2", ("s1",), window={"t_a": ref("s1.rows[0].vt_s"), "t_b": 1500}, limit=0),
    )
    v = one(raw, plan_ctx, "arg_value", VerifierConfig(task_uids=TASK))
    assert (v.step, v.field) == ("s2", "args.limit")
