"""The static plan verifier (engine/plan/verifier.py): one test per rule code.

Each test's plan violates exactly one rule, so the whole list of codes is asserted, with the step and the
field the violation names. The store (``plan_ctx``, see conftest) has the valid-time extent [1000, 2000),
no events in [1100, 1800), and uids a..e; ``TASK`` makes a and b the task input.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.plan._plans import W, check, motifs, one, only, plan, reach, ref, resolve_c, step
from tests.engine.plan.conftest import EXTENT
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.registry import REGISTRY
from tgms.engine.plan.verifier import VerifierConfig

# -- a valid plan --------------------------------------------------------------------------------------


def test_valid_multi_step_plan(plan_ctx: OpContext) -> None:
    raw = plan(
        resolve_c(),
        reach("s2", ("s1",), src=ref("s1.rows[0].uid")),
        step("s3", "compute", ("s2",), fn="count", input=ref("s2.rows")),
        step("s4", "compute", ("s2", "s3"), fn="diff", a=ref("s2.rows_total"), b=ref("s3.value")),
        answer={"kind": "count", "from": "s3.value"},
        q="Whom can Node C reach?",
    )
    report = check(raw, plan_ctx, None)
    assert report.violations == [] and report.valid
    assert report.checks == dict.fromkeys(report.checks, True)
    assert set(report.estimates_s) == {"s1"}  # steps with refs are priced at run time
    assert report.to_dict()["valid"] is True


# -- structure and output contracts -----------------------------------------------------------------------


def test_structural_violations_pass_through(plan_ctx: OpContext) -> None:
    v = one(plan(reach(deps=("s9",))), plan_ctx, "unknown_dependency")
    assert v.step == "s1"


def test_unknown_op(plan_ctx: OpContext) -> None:
    v = one(plan(step("s1", "temporal_reachabilty", src="a", window=W)), plan_ctx, "unknown_op")
    assert (v.step, v.field) == ("s1", "op")
    assert v.legal == sorted(REGISTRY) and "temporal_reachability" in v.legal


def test_output_field(plan_ctx: OpContext) -> None:
    raw = plan(reach(), step("s2", "compute", ("s1",), fn="count", input=ref("s1.nodes")))
    v = one(raw, plan_ctx, "output_field")
    assert (v.step, v.field) == ("s2", "args.input")
    assert v.legal == list(REGISTRY["temporal_reachability"].declared_outputs)


def test_output_field_inside_a_row(plan_ctx: OpContext) -> None:
    raw = plan(reach(), step("s2", "compute", ("s1",), fn="count", input=ref("s1.rows[*].name")))
    v = one(raw, plan_ctx, "output_field")
    assert (v.step, v.field, v.legal) == ("s2", "args.input", ["earliest_arrival", "hops", "src", "uid"])


def test_lesson_1_count_where_the_operator_emits_rows_total(plan_ctx: OpContext) -> None:
    """The paper's Lesson 1: s2 emits ``rows_total``, s3 asks for ``s2.count``."""
    raw = plan(
        resolve_c(),
        reach("s2", ("s1",), src=ref("s1.rows[0].uid")),
        step("s3", "compute", ("s2",), fn="diff", a=ref("s2.count"), b=1),
        answer={"kind": "value", "from": "s3.value"},
    )
    v = one(raw, plan_ctx, "output_field")
    assert (v.step, v.field) == ("s3", "args.a")
    assert "rows_total" in v.legal
    assert "count" in v.message


@pytest.mark.parametrize(
    ("consumer", "field"),
    [
        (step("s2", "entity_history", ("s1",), uid=ref("s1.rows[*].uid")), "args.uid"),  # a list for a uid
        (step("s2", "compute", ("s1",), fn="count", input=ref("s1.rows_total")), "args.input"),  # the reverse
    ],
)
def test_ref_type(plan_ctx: OpContext, consumer: dict[str, Any], field: str) -> None:
    v = one(plan(reach(), consumer), plan_ctx, "ref_type")
    assert (v.step, v.field) == ("s2", field)


def test_ref_type_accepts_compatible_refs(plan_ctx: OpContext) -> None:
    raw = plan(
        reach(),
        step("s2", "compute", ("s1",), fn="count", input=ref("s1.rows[*].earliest_arrival")),
        step("s3", "burst_detection", ("s1",), target="global", window=W, stride=100,
             params={"threshold": ref("s1.rows_total")}),  # integer into a number
    )  # fmt: skip
    assert check(raw, plan_ctx).violations == []


def test_answer_field(plan_ctx: OpContext) -> None:
    v = one(plan(reach(), answer={"kind": "count", "from": "s1.count"}), plan_ctx, "answer_field")
    assert (v.step, v.field) == ("s1", "answer_spec.from")
    assert "rows_total" in v.legal


def test_answer_field_nested(plan_ctx: OpContext) -> None:
    raw = plan(
        step("s1", "temporal_paths", src="a", dst="b", window=W),
        answer={"kind": "entity", "from": "s1.rows[0].edges[0].source"},
    )
    v = one(raw, plan_ctx, "answer_field")
    assert v.legal == ["dst", "eid", "rel_type", "src", "t", "vid"]


@pytest.mark.parametrize(("kind", "source"), [("count", "s1.rows"), ("boolean", "s1.rows_total")])
def test_answer_kind(plan_ctx: OpContext, kind: str, source: str) -> None:
    v = one(plan(reach(), answer={"kind": kind, "from": source}), plan_ctx, "answer_kind")
    assert (v.step, v.field) == ("s1", "answer_spec.kind")


# -- literal arguments ---------------------------------------------------------------------------------------


def test_arg_name(plan_ctx: OpContext) -> None:
    v = one(plan(reach(bogus=1)), plan_ctx, "arg_name")
    assert (v.step, v.field) == ("s1", "args.bogus")
    assert v.legal == sorted(REGISTRY["temporal_reachability"].args.model_fields)


def test_arg_name_nested(plan_ctx: OpContext) -> None:
    v = one(plan(reach(window={"t_a": 1000, "t_b": 2000, "t_c": 1})), plan_ctx, "arg_name")
    assert (v.field, v.legal) == ("args.window.t_c", ["t_a", "t_b"])


def test_arg_missing(plan_ctx: OpContext) -> None:
    v = one(plan(step("s1", "temporal_reachability", window=W)), plan_ctx, "arg_missing")
    assert (v.step, v.field) == ("s1", "args.src")


@pytest.mark.parametrize(
    ("args", "field"), [({"limit": "ten"}, "args.limit"), ({"window": "May"}, "args.window")]
)
def test_arg_type(plan_ctx: OpContext, args: dict[str, Any], field: str) -> None:
    v = one(plan(reach(**args)), plan_ctx, "arg_type")
    assert (v.step, v.field) == ("s1", field)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"limit": 0}, "args.limit"),
        ({"direction": "sideways"}, "args.direction"),
        ({"window": {"t_a": 1500, "t_b": 1200}}, "args.window"),
    ],
)
def test_arg_value(plan_ctx: OpContext, args: dict[str, Any], field: str) -> None:
    v = one(plan(reach(**args)), plan_ctx, "arg_value")
    assert (v.step, v.field) == ("s1", field)


# -- temporal extent and vacuous arguments -----------------------------------------------------------------


@pytest.mark.parametrize(
    "window", [{"t_a": 5000, "t_b": 6000}, {"t_a": 500, "t_b": 1000}, {"t_a": 2000, "t_b": 2100}]
)
def test_temporal_extent_window(plan_ctx: OpContext, window: dict[str, int]) -> None:
    v = one(plan(reach(window=window)), plan_ctx, "temporal_extent")
    assert (v.step, v.field, v.legal) == ("s1", "args.window", EXTENT)


@pytest.mark.parametrize("window", [{"t_a": 500, "t_b": 1001}, {"t_a": 1999, "t_b": 9000}])
def test_window_overlapping_the_extent_is_fine(plan_ctx: OpContext, window: dict[str, int]) -> None:
    assert check(plan(reach(window=window)), plan_ctx).violations == []


@pytest.mark.parametrize("t_valid", [999, 2000, 10**6])
def test_temporal_extent_t_valid(plan_ctx: OpContext, t_valid: int) -> None:
    v = one(plan(step("s1", "snapshot_subgraph", seeds=["a"], t_valid=t_valid)), plan_ctx, "temporal_extent")
    assert (v.step, v.field, v.legal) == ("s1", "args.t_valid", EXTENT)
    assert check(plan(step("s1", "snapshot_subgraph", seeds=["a"], t_valid=1999)), plan_ctx).violations == []


def test_neighborhood_period_ending_at_the_extent_end_is_fine(plan_ctx: OpContext) -> None:
    raw = plan(step("s1", "neighborhood_evolution", uid="a", t1=1500, t2=2000))
    assert check(raw, plan_ctx).violations == []


def test_vacuous_event_window(plan_ctx: OpContext) -> None:
    v = one(plan(motifs({"t_a": 1100, "t_b": 1800})), plan_ctx, "vacuous_arg")
    assert (v.step, v.field) == ("s1", "args.window")
    assert v.legal == {"previous_event": 1050, "next_event": 1900, "window_length": 700}


def test_vacuous_event_window_only_for_event_operators(plan_ctx: OpContext) -> None:
    empty = {"t_a": 1100, "t_b": 1800}
    series = step("s1", "graph_metric_timeseries", metric="edge_event_count", window=empty, stride=100)
    assert one(plan(series), plan_ctx, "vacuous_arg").field == "args.window"
    state = step("s1", "graph_metric_timeseries", metric="node_count", window=empty, stride=100)
    assert check(plan(state), plan_ctx).violations == []
    assert check(plan(reach(window=empty)), plan_ctx).violations == []


def test_diff_of_a_snapshot_with_itself_is_the_operators_own_rule(plan_ctx: OpContext) -> None:
    raw = plan(step("s1", "diff_snapshots", t1=1500, t2=1500))
    # the operator's own t1 < t2 rule reports it once (no second, vacuous, report of the same problem)
    assert [v.code for v in check(raw, plan_ctx).violations] == ["arg_value"]


@pytest.mark.parametrize(
    ("s", "field"),
    [
        (motifs(node_filter=[]), "args.node_filter"),
        (step("s1", "snapshot_subgraph", seeds=[], t_valid=1500), "args.seeds"),
        (step("s1", "diff_snapshots", t1=1010, t2=1500, scope={"seeds": []}), "args.scope.seeds"),
    ],
)
def test_vacuous_empty_uid_list(plan_ctx: OpContext, s: dict[str, Any], field: str) -> None:
    v = one(plan(s), plan_ctx, "vacuous_arg")
    assert (v.step, v.field) == ("s1", field)


def test_vacuous_burst_series_too_short(plan_ctx: OpContext) -> None:
    raw = plan(step("s1", "burst_detection", target="global", window=W, stride=500))  # 2 buckets
    v = one(raw, plan_ctx, "vacuous_arg")
    assert (v.step, v.field, v.legal) == ("s1", "args.stride", {"stride_at_most": 250})
    ok = plan(step("s1", "burst_detection", target="global", window=W, stride=250))  # 4 buckets: one scored
    assert check(ok, plan_ctx).violations == []
    long = {"w": 9, "min_history": 9}
    assert check(plan(step("s1", "burst_detection", target="global", window=W, stride=100, params=long)),
                 plan_ctx).violations == []  # fmt: skip
    short = plan(step("s1", "burst_detection", target="global", window=W, stride=125, params=long))
    assert one(short, plan_ctx, "vacuous_arg").legal == {"stride_at_most": 100}


def test_vacuous_nothing_believed_yet(plan_ctx: OpContext) -> None:
    v = one(plan(reach(as_of_tt=5)), plan_ctx, "vacuous_arg")
    assert (v.step, v.field) == ("s1", "args.as_of_tt")


# -- grounding ---------------------------------------------------------------------------------------


def test_grounding_literal_uid_not_in_the_task(plan_ctx: OpContext) -> None:
    v = one(plan(reach(src="c")), plan_ctx, "grounding")
    assert (v.step, v.field, v.legal) == ("s1", "args.src", ["a", "b"])


@pytest.mark.parametrize(
    ("s", "field"),
    [
        (step("s1", "co_active", a_spec={"src": "a"}, b_spec={"uid": "zz"}, allen_relation="during"),
         "args.b_spec.uid"),
        (step("s1", "snapshot_subgraph", seeds=["a", "d"], t_valid=1500), "args.seeds[1]"),
        (step("s1", "burst_detection", target="c", window=W, stride=100), "args.target"),
    ],
)  # fmt: skip
def test_grounding_in_other_uid_positions(plan_ctx: OpContext, s: dict[str, Any], field: str) -> None:
    assert one(plan(s), plan_ctx, "grounding").field == field


def test_grounding_uid_through_a_ref_from_resolve_entities_is_fine(plan_ctx: OpContext) -> None:
    raw = plan(resolve_c(), reach("s2", ("s1",), src=ref("s1.rows[0].uid")))
    assert check(raw, plan_ctx).violations == []
    mixed = plan(
        resolve_c(), motifs(node_filter=[ref("s1.rows[0].uid"), "zz"]) | {"id": "s2", "depends_on": ["s1"]}
    )
    assert one(mixed, plan_ctx, "grounding").field == "args.node_filter[1]"


def test_grounding_covers_compute_literals_that_are_store_uids(plan_ctx: OpContext) -> None:
    # compute's operands are untyped: a literal store uid there is an identifier like any other
    flt = {"fn": "filter", "input": ref("s1.rows"), "field": "uid", "cmp": "==", "value": "d"}
    raw = plan(reach(), step("s2", "compute", ("s1",), **flt))
    v = one(raw, plan_ctx, "grounding")
    assert (v.step, v.field) == ("s2", "args.value")
    # a string that is no uid of the store ("fn", "field", "cmp" values) is not an identifier
    grounded = plan(reach(), step("s2", "compute", ("s1",), **{**flt, "value": "a"}))
    assert check(grounded, plan_ctx).violations == []


def test_grounding_global_burst_target_is_not_a_uid(plan_ctx: OpContext) -> None:
    raw = plan(step("s1", "burst_detection", target="global", window=W, stride=100))
    assert check(raw, plan_ctx, VerifierConfig(task_uids=frozenset())).violations == []


# -- cost ---------------------------------------------------------------------------------------


def test_cost(plan_ctx: OpContext) -> None:
    v = one(plan(reach()), plan_ctx, "cost", VerifierConfig(task_uids=frozenset({"a"}), budget_s=1e-9))
    assert (v.step, v.field) == ("s1", "args")
    assert v.legal["budget_s"] == 1e-9
    assert v.legal["estimate"]["seconds"] > 1e-9 and v.legal["suggestions"]


def test_cost_is_not_checked_for_steps_with_refs(plan_ctx: OpContext) -> None:
    raw = plan(resolve_c(), reach("s2", ("s1",), src=ref("s1.rows[0].uid")))
    report = check(raw, plan_ctx, VerifierConfig(budget_s=1e-9))
    assert [(v.code, v.step) for v in report.violations] == [("cost", "s1")]
    assert set(report.estimates_s) == {"s1"}


def test_plan_cost(plan_ctx: OpContext) -> None:
    raw = plan(reach(), reach("s2", window={"t_a": 1000, "t_b": 1500}))
    report = check(raw, plan_ctx, VerifierConfig(task_uids=frozenset({"a"}), plan_budget_s=1e-9))
    v = only(report, "plan_cost")
    assert (v.step, v.field) == (None, "steps")
    assert set(v.legal["estimates_s"]) == {"s1", "s2"}
    assert sum(report.estimates_s.values()) > 1e-9
