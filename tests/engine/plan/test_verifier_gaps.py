"""The two verifier gaps of issue 14, each shown on the plan that exposed it.

1. ``answer_kind`` looked only at "is an array": an ``entity_set`` answer read from entity_history's edge
   rows passed the verifier and failed after execution ("not a list of uids"). The check now reads the
   element shape the producer's output schema declares (uid strings, or objects with a ``uid``).
2. ``vacuous_arg`` rejected a whole plan because one of several summed windows held no events. An empty
   term of a sum, union or max is a legitimate zero; only emptiness that reaches the answer is reported
   (the rule is in :mod:`engine.plan.vacuity`).

The store (``plan_ctx``) has events in [1000, 1051) and [1900, 2000), none in [1100, 1800).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.plan._plans import W, check, one, plan, ref, step
from tgms.engine.claims.reporter import mechanical_answer
from tgms.engine.execute.executor import execute
from tgms.engine.operators.context import OpContext
from tgms.engine.plan.model import build_plan

EMPTY = {"t_a": 1100, "t_b": 1800}
BUSY = [{"t_a": 1000, "t_b": 1051}, {"t_a": 1900, "t_b": 2000}, {"t_a": 1000, "t_b": 2000}]


def history(sid: str = "s1", **args: Any) -> dict[str, Any]:
    return step(sid, "entity_history", **({"uid": "a", "include_edges": True} | args))


def series(sid: str, window: dict[str, int]) -> dict[str, Any]:
    return step(sid, "graph_metric_timeseries", metric="edge_event_count", window=window, stride=50)


def motif(sid: str, window: dict[str, int]) -> dict[str, Any]:
    return step(sid, "count_temporal_motifs", motif="M_2node_pingpong", delta=100, window=window)


def instances(sid: str, window: dict[str, int]) -> dict[str, Any]:
    return step(sid, "find_temporal_motif_instances", motif="M_2node_pingpong", delta=100, window=window)


# -- gap 1: the element shape of an entity answer -------------------------------------------------------


def test_entity_set_over_edge_rows_is_refused_before_running(plan_ctx: OpContext) -> None:
    raw = plan(history(), answer={"kind": "entity_set", "from": "s1.edges"})
    v = one(raw, plan_ctx, "answer_kind")
    assert (v.step, v.field) == ("s1", "answer_spec.kind")
    assert "uid" in v.message and "edges" in v.message
    # and it is what execution would have said: the value is not a list of uids
    answer = mechanical_answer(execute(build_plan(raw), plan_ctx))
    assert answer["claims"] == [] and "not a list of uids" in answer["text"]


@pytest.mark.parametrize(
    ("s", "source"),
    [
        (history(), "s1.rows"),  # node versions: objects with a uid
        (history(), "s1.rows[*].uid"),  # a projection onto the uid strings
        (step("s1", "temporal_paths", src="a", dst="b", window=W), "s1.rows[0].nodes"),  # uid strings
        (step("s1", "compute", fn="union", a=["a"], b=["b"]), "s1.rows"),  # undeclared elements: run time
    ],
)
def test_entity_set_over_uid_elements_passes(plan_ctx: OpContext, s: dict[str, Any], source: str) -> None:
    assert check(plan(s, answer={"kind": "entity_set", "from": source}), plan_ctx).violations == []


@pytest.mark.parametrize(
    ("s", "source", "ok"),
    [
        (history(), "s1.rows[0]", True),
        (history(), "s1.edges[0]", False),  # an edge version has no uid
        (history(), "s1.edges[0].src", True),
        (step("s1", "temporal_paths", src="a", dst="b", window=W), "s1.rows[0]", False),
    ],
)
def test_entity_answer_needs_a_uid(plan_ctx: OpContext, s: dict[str, Any], source: str, ok: bool) -> None:
    report = check(plan(s, answer={"kind": "entity", "from": source}), plan_ctx)
    assert [v.code for v in report.violations] == ([] if ok else ["answer_kind"])


def test_entity_set_over_edge_rows_by_the_producers_declared_outputs_only(plan_ctx: OpContext) -> None:
    # without a store the output-contract check still applies (it needs only the registry)
    raw = plan(history(), answer={"kind": "entity_set", "from": "s1.edges"})
    assert [v.code for v in check(raw, None).violations] == ["answer_kind"]


# -- gap 2: vacuous only where emptiness reaches the answer ---------------------------------------------


def _sum_of_windows(windows: list[dict[str, int]], make: Any = series) -> dict[str, Any]:
    steps = [make(f"s{i + 1}", w) for i, w in enumerate(windows)]
    ids = tuple(s["id"] for s in steps)
    field = "rows_total" if make is series else "count"
    total = step("t", "compute", ids, fn="sum", input=[ref(f"{i}.{field}") for i in ids])
    return plan(*steps, total, answer={"kind": "count", "from": "t.value"})


@pytest.mark.parametrize("make", [series, motif])
def test_an_empty_term_of_a_sum_is_a_legitimate_zero(plan_ctx: OpContext, make: Any) -> None:
    assert check(_sum_of_windows([*BUSY, EMPTY], make), plan_ctx).violations == []


def test_a_sum_of_only_empty_terms_is_vacuous(plan_ctx: OpContext) -> None:
    report = check(_sum_of_windows([EMPTY, EMPTY], motif), plan_ctx)
    assert [(v.code, v.step) for v in report.violations] == [("vacuous_arg", "s1"), ("vacuous_arg", "s2")]


@pytest.mark.parametrize("fn", ["union", "max"])
def test_an_empty_operand_of_a_union_or_max_is_fine(plan_ctx: OpContext, fn: str) -> None:
    a, b = motif("s1", BUSY[0]), motif("s2", EMPTY)
    if fn == "union":
        a, b = instances("s1", BUSY[0]), instances("s2", EMPTY)
        top = step("t", "compute", ("s1", "s2"), fn="union", a=ref("s1.rows"), b=ref("s2.rows"))
    else:
        top = step("t", "compute", ("s1", "s2"), fn="max", input=[ref("s1.count"), ref("s2.count")])
    assert check(plan(a, b, top, answer={"kind": "count", "from": "t.value"}), plan_ctx).violations == []


def test_the_answers_producer_is_still_vacuous(plan_ctx: OpContext) -> None:
    v = one(plan(motif("s1", EMPTY), answer={"kind": "count", "from": "s1.count"}), plan_ctx, "vacuous_arg")
    assert (v.step, v.field) == ("s1", "args.window")


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        ("count", {"input": ref("s1.rows")}),  # the count of an empty list is 0 whatever the data
        ("intersection", {"a": ref("s1.rows"), "b": ref("s2.rows")}),  # an empty operand empties it
        ("difference", {"a": ref("s1.rows"), "b": ref("s2.rows")}),  # an empty minuend empties it
    ],
)
def test_emptiness_kept_by_the_consumer_reaches_the_answer(
    plan_ctx: OpContext, fn: str, args: dict[str, Any]
) -> None:
    s1, s2 = instances("s1", EMPTY), instances("s2", W)
    top = step("t", "compute", ("s1", "s2"), fn=fn, **args)
    v = one(plan(s1, s2, top, answer={"kind": "count", "from": "t.value"}), plan_ctx, "vacuous_arg")
    assert (v.step, v.field) == ("s1", "args.window")


def test_an_empty_subtrahend_is_fine(plan_ctx: OpContext) -> None:
    s1, s2 = instances("s1", W), instances("s2", EMPTY)
    top = step("t", "compute", ("s1", "s2"), fn="difference", a=ref("s1.rows"), b=ref("s2.rows"))
    assert check(plan(s1, s2, top, answer={"kind": "count", "from": "t.value"}), plan_ctx).violations == []


def test_an_empty_step_that_feeds_nothing_else_is_vacuous_without_an_answer_spec(plan_ctx: OpContext) -> None:
    # no answer_spec: every step nothing consumes is an answer
    report = check(plan(motif("s1", BUSY[0]), motif("s2", EMPTY)), plan_ctx)
    assert [(v.code, v.step) for v in report.violations] == [("vacuous_arg", "s2")]


def test_an_empty_step_off_the_answers_path_is_not_reported(plan_ctx: OpContext) -> None:
    raw = plan(motif("s1", BUSY[0]), motif("s2", EMPTY), answer={"kind": "count", "from": "s1.count"})
    assert check(raw, plan_ctx).violations == []
