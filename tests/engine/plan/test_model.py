"""The plan IR (engine/plan/model.py): parse_plan reports every structural violation, build_plan builds
an immutable DAG or raises E_SCHEMA, and Plan.order() is a deterministic topological order.

Each structural rule has a plan that breaks only that rule, so the exact list of codes is asserted.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tgms.engine.errors import SchemaError
from tgms.engine.plan.model import (
    ANSWER_KINDS,
    MAX_STEPS,
    STEP_KEYS,
    AnswerSpec,
    Plan,
    StepRef,
    build_plan,
    parse_plan,
)
from tgms.engine.plan.refs import Field, Index, Ref

WINDOW = {"t_a": 1000, "t_b": 2000}


def step(sid: str, deps: list[str] | None = None, op: str = "compute", **args: Any) -> dict[str, Any]:
    return {"id": sid, "op": op, "args": args, "depends_on": deps or []}


def plan(*steps: dict[str, Any], answer: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"plan_id": "p1", "question": "q?", "steps": list(steps)}
    if answer is not None:
        raw["answer_spec"] = answer
    return raw | extra


def ref(text: Any) -> dict[str, Any]:
    return {"$ref": text}


def codes(raw: Any) -> list[str]:
    return [v.code for v in parse_plan(raw).violations]


def good_plan() -> dict[str, Any]:
    return plan(
        step("s1", op="resolve_entities", query="Alice"),
        step("s2", ["s1"], op="temporal_reachability", src=ref("s1.rows[0].uid"), window=dict(WINDOW)),
        step("s3", ["s2"], fn="count", input=ref("s2.rows")),
        answer={"kind": "count", "from": "s3.value"},
    )


# -- a well-formed plan ------------------------------------------------------------------------------------


def test_build_plan_success() -> None:
    raw = good_plan()
    p = build_plan(raw)
    assert isinstance(p, Plan)
    assert p.plan_id == "p1" and p.question == "q?"
    assert p.ids == ("s1", "s2", "s3")
    s2 = p.step("s2")
    assert s2.op == "temporal_reachability"
    assert s2.depends_on == ("s1",)
    assert s2.index == 1
    assert s2.refs == (StepRef(("src",), Ref("s1", "rows", (Index(0), Field("uid")))),)
    assert s2.refs[0].where == "args.src"
    assert p.answer_spec == AnswerSpec("count", Ref("s3", "value"))
    assert p.answer_spec.to_dict() == {"kind": "count", "from": "s3.value"}
    assert p.raw == raw
    assert parse_plan(raw).violations == []


def test_build_plan_copies_its_input() -> None:
    raw = good_plan()
    p = build_plan(raw)
    d = p.digest
    raw["steps"][1]["args"]["window"]["t_a"] = 1500
    raw["question"] = "changed"
    assert p.step("s2").args["window"] == WINDOW
    assert p.raw["question"] == "q?"
    assert p.digest == d == build_plan(good_plan()).digest
    assert build_plan(raw).digest != d


def test_optional_parts_default() -> None:
    p = build_plan({"steps": [{"id": "s1", "op": "compute"}]})
    s = p.step("s1")
    assert (p.plan_id, p.question, p.answer_spec) == ("", "", None)
    assert (s.args, s.depends_on, s.refs) == ({}, (), ())


def test_answer_spec_from_may_be_a_ref_object() -> None:
    p = build_plan(plan(step("s1", fn="count", input=[]), answer={"kind": "count", "from": ref("s1.value")}))
    assert p.answer_spec == AnswerSpec("count", Ref("s1", "value"))


@pytest.mark.parametrize("kind", ANSWER_KINDS)
def test_every_answer_kind_is_accepted(kind: str) -> None:
    assert codes(plan(step("s1"), answer={"kind": kind, "from": "s1.value"})) == []


def test_ref_locations_in_nested_args() -> None:
    p = build_plan(
        plan(
            step("s1"),
            step(
                "s2",
                ["s1"],
                op="co_active",
                a_spec={"uid": ref("s1.rows[0].uid")},
                b_spec={"src": ["x", ref("s1.rows[1].uid")]},
            ),
        )
    )
    assert [r.where for r in p.step("s2").refs] == ["args.a_spec.uid", "args.b_spec.src[1]"]


def test_build_plan_is_json_in_json_out() -> None:
    raw = json.loads(json.dumps(good_plan()))
    assert build_plan(raw).raw == raw


# -- one structural rule at a time ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param([step("s1")], id="plan-not-an-object"),
        pytest.param("plan", id="plan-a-string"),
        pytest.param(plan(step("s1"), extra_key=1), id="unknown-plan-key"),
        pytest.param(plan(step("s1"), plan_id=7), id="plan-id-not-a-string"),
        pytest.param(plan(step("s1"), question=["q"]), id="question-not-a-string"),
        pytest.param({"plan_id": "p"}, id="no-steps"),
        pytest.param(plan(), id="empty-steps"),
        pytest.param(plan(step("s1"), steps={"s1": {}}), id="steps-not-a-list"),
        pytest.param(plan("s1"), id="step-not-an-object"),
        pytest.param(plan(step("s1") | {"note": "x"}), id="unknown-step-key"),
        pytest.param(plan({"op": "compute", "args": {}}), id="step-without-id"),
        pytest.param(plan(step("1s")), id="step-id-syntax"),
        pytest.param(plan(step("s1") | {"id": 1}), id="step-id-not-a-string"),
        pytest.param(plan(step("s1") | {"op": ""}), id="empty-op"),
        pytest.param(plan({"id": "s1", "args": {}}), id="no-op"),
        pytest.param(plan(step("s1") | {"args": [1]}), id="args-not-an-object"),
        pytest.param(plan(step("s1") | {"depends_on": "s0"}), id="depends-on-a-string"),
        pytest.param(plan(step("s1") | {"depends_on": [1]}), id="depends-on-not-ids"),
        pytest.param(plan(step("s1"), answer="s1.value"), id="answer-spec-not-an-object"),
        pytest.param(plan(step("s1"), answer={"kind": "count", "from": "s1.value", "x": 1}), id="answer-key"),
        pytest.param(plan(step("s1"), answer={"kind": "number", "from": "s1.value"}), id="answer-kind"),
    ],
)
def test_schema(raw: Any) -> None:
    assert codes(raw) == ["schema"]


def test_schema_violations_name_step_and_field() -> None:
    [v] = parse_plan(plan(step("s1") | {"note": "x"})).violations
    assert (v.step, v.field, v.legal) == ("s1", "note", list(STEP_KEYS))
    [v] = parse_plan(plan(step("s1"), answer={"kind": "number", "from": "s1.value"})).violations
    assert (v.field, v.legal) == ("answer_spec.kind", list(ANSWER_KINDS))


def test_too_many_steps() -> None:
    steps = [step(f"s{i}", [f"s{i - 1}"] if i > 1 else []) for i in range(1, MAX_STEPS + 2)]
    [v] = parse_plan(plan(*steps)).violations
    assert (v.code, v.field, v.legal) == ("too_many_steps", "steps", MAX_STEPS)
    assert codes(plan(*steps[:MAX_STEPS])) == []
    assert MAX_STEPS == 12


def test_duplicate_id() -> None:
    p = parse_plan(plan(step("s1"), step("s2", ["s1"]), step("s1")))
    assert [(v.code, v.step, v.field) for v in p.violations] == [("duplicate_id", "s1", "id")]


def test_unknown_dependency() -> None:
    [v] = parse_plan(plan(step("s1"), step("s2", ["s1", "s9"]))).violations
    assert (v.code, v.step, v.field, v.legal) == ("unknown_dependency", "s2", "depends_on", ["s1", "s2"])


def test_cycle() -> None:
    [v] = parse_plan(plan(step("s0"), step("s1", ["s2"]), step("s2", ["s1"]), step("s3", ["s0"]))).violations
    assert (v.code, v.step, v.field, v.legal) == ("cycle", "s1", "depends_on", ["s1", "s2"])


def test_cycle_names_every_step_that_can_never_run() -> None:
    raw = plan(step("s1", ["s3"]), step("s2", ["s1"]), step("s3", ["s2"]), step("s4", ["s1"]))
    [v] = parse_plan(raw).violations
    assert v.code == "cycle" and v.legal == ["s1", "s2", "s3", "s4"]


def test_self_dependency_is_a_cycle() -> None:
    [v] = parse_plan(plan(step("s1", ["s1"]))).violations
    assert (v.code, v.step) == ("cycle", "s1")
    assert "s1 depends on itself" in v.message


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (ref("s1"), "args.input"),  # no field
        (ref("s1.rows[*][*]"), "args.input"),
        (ref("s1.rows;drop"), "args.input"),
        (ref(3), "args.input"),  # not a string
        (ref(None), "args.input"),
        ({"$ref": "s1.rows", "limit": 5}, "args.input"),  # a ref object has exactly one key
        ([1, ref("s1.")], "args.input[1]"),
    ],
)
def test_ref_syntax(value: Any, field: str) -> None:
    [v] = parse_plan(plan(step("s1"), step("s2", ["s1"], fn="count", input=value))).violations
    assert (v.code, v.step, v.field) == ("ref_syntax", "s2", field)


def test_ref_syntax_in_answer_spec() -> None:
    [v] = parse_plan(plan(step("s1"), answer={"kind": "count", "from": "s1"})).violations
    assert (v.code, v.field) == ("ref_syntax", "answer_spec.from")
    assert codes(plan(step("s1"), answer={"kind": "count", "from": 5})) == ["ref_syntax"]


def test_ref_scope_step_not_in_depends_on() -> None:
    raw = plan(step("s1"), step("s2"), step("s3", ["s2"], fn="diff", a=ref("s1.value"), b=ref("s2.value")))
    [v] = parse_plan(raw).violations
    assert (v.code, v.step, v.field, v.legal) == ("ref_scope", "s3", "args.a", ["s2"])
    assert "s1" in v.message


def test_ref_scope_to_an_unknown_step() -> None:
    [v] = parse_plan(plan(step("s1"), step("s2", fn="count", input=ref("s9.rows")))).violations
    assert (v.code, v.step) == ("ref_scope", "s2")


def test_ref_scope_ref_to_itself() -> None:
    [v] = parse_plan(plan(step("s1", fn="count", input=ref("s1.rows")))).violations
    assert (v.code, v.step, v.field) == ("ref_scope", "s1", "args.input")
    assert "itself" in v.message


def test_answer_spec_naming_an_unknown_step() -> None:
    [v] = parse_plan(plan(step("s1"), step("s2"), answer={"kind": "count", "from": "s9.value"})).violations
    assert (v.code, v.field, v.legal) == ("answer_spec", "answer_spec.from", ["s1", "s2"])


# -- all at once ---------------------------------------------------------------------------------------


def test_every_violation_is_reported_at_once() -> None:
    raw = plan(
        step("s1") | {"note": 1},  # schema (the step is dropped)
        step("s2"),
        step("s2"),  # duplicate_id
        step("s3", ["s9"]),  # unknown_dependency
        step("s4", ["s2"], fn="count", input=ref("s2")),  # ref_syntax
        step("s5", fn="count", input=ref("s2.rows")),  # ref_scope
        answer={"kind": "count", "from": "s8.value"},  # answer_spec
    )
    assert codes(raw) == [
        "schema",
        "ref_syntax",
        "duplicate_id",
        "unknown_dependency",
        "ref_scope",
        "answer_spec",
    ]
    raw2 = plan(*[step(f"s{i}") for i in range(13)], step("t1", ["t1"]), extra=1)
    assert codes(raw2) == ["schema", "too_many_steps", "cycle"]


def test_parse_plan_keeps_the_steps_that_parsed() -> None:
    p = parse_plan(plan(step("s1"), "junk", step("s2", ["s1"]), step("s3", ["zz"])))
    assert [s.id for s in p.steps] == ["s1", "s2", "s3"]
    assert [s.index for s in p.steps] == [0, 2, 3]  # the position in the raw plan
    assert codes(p.raw) == ["schema", "unknown_dependency"]


def test_build_plan_raises_schema_error_with_every_violation() -> None:
    raw = plan(step("s1"), step("s1"), step("s2", ["s9"]))
    with pytest.raises(SchemaError) as info:
        build_plan(raw)
    err = info.value
    assert err.code == "E_SCHEMA"
    vs = err.details["violations"]
    assert [v["code"] for v in vs] == ["duplicate_id", "unknown_dependency"]
    assert vs[1] == {
        "code": "unknown_dependency",
        "step": "s2",
        "field": "depends_on",
        "message": "step s2: depends_on names no step 's9'",
        "legal": ["s1", "s1", "s2"],
    }
    assert "(+1 more)" in err.message
    json.dumps(err.to_dict())


def test_build_plan_single_violation_message() -> None:
    with pytest.raises(SchemaError) as info:
        build_plan(plan(step("s1", ["s1"])))
    assert "more)" not in info.value.message
    assert [v["code"] for v in info.value.details["violations"]] == ["cycle"]
    assert "legal" in info.value.details["violations"][0]


def test_violation_to_dict_omits_missing_legal() -> None:
    with pytest.raises(SchemaError) as info:
        build_plan({"steps": []})
    [v] = info.value.details["violations"]
    assert v == {
        "code": "schema",
        "step": None,
        "field": "steps",
        "message": "steps must be a non-empty list",
    }


# -- topological order -------------------------------------------------------------------------------


def order(raw: dict[str, Any]) -> list[str]:
    return [s.id for s in build_plan(raw).order()]


def test_order_respects_dependencies() -> None:
    assert order(plan(step("c", ["b"]), step("b", ["a"]), step("a"))) == ["a", "b", "c"]


def test_order_breaks_ties_by_plan_position() -> None:
    assert order(plan(step("s3"), step("s1"), step("s2"))) == ["s3", "s1", "s2"]
    # s3 becomes ready after s1 and is ahead of s2 in the plan, so it runs before s2
    assert order(plan(step("s3", ["s1"]), step("s1"), step("s2"))) == ["s1", "s3", "s2"]
    diamond = plan(step("a"), step("c", ["a"]), step("b", ["a"]), step("d", ["b", "c"]), step("e"))
    assert order(diamond) == ["a", "c", "b", "d", "e"]


def test_order_is_deterministic_and_repeated_deps_count_once() -> None:
    raw = plan(step("x"), step("y", ["x", "x"]), step("z", ["y", "x"]))
    assert order(raw) == ["x", "y", "z"]
    assert all(order(copy.deepcopy(raw)) == ["x", "y", "z"] for _ in range(3))


def test_order_of_a_big_plan() -> None:
    ids = [f"s{i}" for i in range(MAX_STEPS)]
    steps = [step(sid, ids[i + 1 : i + 3]) for i, sid in enumerate(ids)]  # each waits on the next two
    assert order(plan(*steps)) == ids[::-1]
