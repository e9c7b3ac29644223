"""The per-operator plan schema (models.plan_schema): what it accepts, what it refuses, what a grammar engine
can take, and that the planner sends it.

Acceptance is checked against the plans the project already trusts (the docs' example, the planner's worked
plans, every operator's manual example, every analyst plan): a schema that refused one of them would keep a
constrained model from writing a legitimate plan. The suite's oracle plans are checked in
tests/pipeline/systems/test_tgms.py (they need the small suite).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.models.conftest import HEAD_T_A, HEAD_T_B, config
from tgms.engine.api import InvalidArgError, OpContext, Store, all_operators, build_plan, execute
from tgms.models.client import ChatClient
from tgms.models.plan_schema import (
    KEYWORDS,
    MAX_LIST,
    MAX_STEPS,
    REF_OBJECT,
    per_operator_schema,
    schema_size,
)
from tgms.models.planner import FIXED_EXAMPLES, PlannerConfig, PlanTask, plan_and_run, plan_schema
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.models.worked_plans import WorkedPlan

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
OPS = [s.name for s in all_operators()]


def validator(kind: str | None = None, ops: list[str] | None = None) -> Any:
    schema = per_operator_schema(kind, ops)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def written(plan: dict[str, Any]) -> dict[str, Any]:
    """The part of a plan the model writes (the planner adds plan_id and question)."""
    return {k: plan[k] for k in ("steps", "answer_spec") if k in plan}


def refusals(plan: dict[str, Any], kind: str | None = None) -> list[str]:
    return [e.message for e in validator(kind).iter_errors(plan)]


def reach() -> dict[str, Any]:
    return {
        "steps": [
            {
                "id": "s1",
                "op": "temporal_reachability",
                "args": {"src": "n1", "window": {"t_a": HEAD_T_A, "t_b": HEAD_T_B}},
                "depends_on": [],
            },
            {
                "id": "s2",
                "op": "compute",
                "args": {
                    "fn": "filter",
                    "input": {"$ref": "s1.rows"},
                    "field": "uid",
                    "cmp": "==",
                    "value": 5,
                },
                "depends_on": ["s1"],
            },
        ],
        "answer_spec": {"kind": "count", "from": "s1.rows_total"},
    }


def one_step() -> dict[str, Any]:
    """A plan the head store runs without a problem (the planner tests' accepted reply)."""
    plan = written(reach())
    plan["steps"] = plan["steps"][:1]
    return plan


def schema_nodes(node: Any, where: str = "$") -> list[tuple[str, dict[str, Any]]]:
    """Every schema node (not data: enum/const values and required lists are skipped), with its path."""
    out = [(where, node)]
    for key, value in node.items():
        if key == "properties":
            for name, sub in value.items():
                out += schema_nodes(sub, f"{where}.{name}")
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out += schema_nodes(value, f"{where}[{key}]")
        elif key == "anyOf":
            for i, sub in enumerate(value):
                out += schema_nodes(sub, f"{where}|{i}")
    return out


def all_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in all_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in all_keys(v)}
    return set()


# -- what grammar engines can take ------------------------------------------------------------------------


def test_the_schema_uses_only_grammar_keywords_and_no_ref_key() -> None:
    schema = per_operator_schema(None)
    # llama.cpp's converters read every object with a "$ref" key as a schema reference, data or not
    assert "$ref" not in all_keys(schema)
    for where, node in schema_nodes(schema):
        assert set(node) <= KEYWORDS, where
        assert node, f"{where}: an empty schema is an object to llama.cpp, not any value"
        # llama.cpp ignores properties beside anyOf: a node has one or the other
        assert not ("anyOf" in node and "properties" in node), where
        if node.get("type") == "array" and node != {"type": "array"}:  # the any-value's free array aside
            assert node["maxItems"] <= max(MAX_LIST, MAX_STEPS), where
        if "properties" in node:
            assert node["additionalProperties"] is False, where


def test_each_step_is_a_union_over_the_registry_with_each_operators_own_args() -> None:
    schema = per_operator_schema("count")
    branches = schema["properties"]["steps"]["items"]["anyOf"]
    assert [b["properties"]["op"]["const"] for b in branches] == OPS
    for branch in branches:
        assert branch["additionalProperties"] is False and branch["required"] == ["id", "op", "args"]
        spec = next(s for s in all_operators() if s.name == branch["properties"]["op"]["const"])
        declared = set(spec.args.model_json_schema()["properties"])
        assert set(branch["properties"]["args"]["properties"]) == declared
    compute = next(b for b in branches if b["properties"]["op"]["const"] == "compute")
    args = list(compute["properties"]["args"]["properties"])
    assert args[:3] == ["fn", "input", "field"] and args[-3:] == ["as_of_tt", "limit", "cursor"]
    assert schema["properties"]["answer_spec"]["properties"]["kind"]["enum"] == ["count"]


def test_the_schema_is_the_same_bytes_on_every_call_and_a_callers_edit_does_not_stick() -> None:
    first = per_operator_schema("count")
    text = json.dumps(first, ensure_ascii=False)
    first["properties"].clear()
    assert json.dumps(per_operator_schema("count"), ensure_ascii=False) == text
    subset = per_operator_schema("count", ["compute", "temporal_reachability"])
    assert subset == per_operator_schema("count", ["temporal_reachability", "compute"])


def test_size_and_the_operator_subset() -> None:
    full, generic = schema_size(per_operator_schema(None)), schema_size(plan_schema(None))
    assert full["operators"] == generic["operators"] == len(OPS)
    # ~66 KB: 19 operators, edge predicates on five; ~77 KB with next_event's two nested event selections;
    # ~81 KB with compute group's nested aggregates and order_by (each leaf may be a $ref); ~83.4 KB with
    # aggregate_events' per-aggregate where (a predicate list); a jump: a regression
    assert full["chars"] < 84_500
    small = per_operator_schema("count", ["temporal_reachability", "compute"])
    assert schema_size(small) == {"chars": schema_size(small)["chars"], "operators": 2}
    assert schema_size(small)["chars"] < full["chars"] / 4
    v = jsonschema.Draft202012Validator(small)
    assert v.is_valid(written(reach()))
    plan = written(reach())
    plan["steps"][0] = {"id": "s1", "op": "list_events", "args": {}, "depends_on": []}
    assert not v.is_valid(plan)  # an operator outside the subset
    with pytest.raises(InvalidArgError):
        per_operator_schema("count", ["temporal_reachability", "teleport"])
    with pytest.raises(InvalidArgError):
        per_operator_schema("count", [])


def test_llama_cpps_converter_turns_it_into_a_grammar() -> None:
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    gbnf = grammar.json_schema_to_gbnf(json.dumps(per_operator_schema(None)))
    assert all(json.dumps(json.dumps(op)) in gbnf for op in OPS)  # each op as a literal
    # ~0.46 MB, 2,971 rules with issue 27's operators and compute functions (0.28 MB and 1,921 rules before
    # them): it grows with the registry, linearly; a bounded ref repetition once made it 1.3 MB
    assert len(gbnf) < 600_000


# -- what it accepts ---------------------------------------------------------------------------------------


def test_it_accepts_the_docs_example_and_the_planners_worked_plans() -> None:
    docs = json.loads((ROOT / "docs" / "examples" / "reach_count.json").read_text(encoding="utf-8"))
    assert refusals(written(docs), "count") == []
    for ex in FIXED_EXAMPLES:
        assert refusals(ex.plan, ex.kind) == []
    assert refusals(reach(), "count") == []


@pytest.mark.parametrize("op", OPS)
def test_it_accepts_every_operators_manual_example(op: str) -> None:
    spec = next(s for s in all_operators() if s.name == op)
    plan = {
        "steps": [{"id": "s1", "op": op, "args": spec.example["args"]}],
        "answer_spec": {"kind": "rows", "from": f"s1.{spec.declared_outputs[0]}"},
    }
    assert refusals(plan) == []


def test_it_accepts_every_analyst_plan() -> None:
    questions = yaml.safe_load((ROOT / "tests" / "analyst" / "questions.yaml").read_text(encoding="utf-8"))
    plans = [(q["id"], q["plan"]) for q in questions["questions"] if q.get("plan")]
    assert len(plans) >= 100
    v = validator()
    refused = {qid: jsonschema.exceptions.best_match(v.iter_errors(written(p))) for qid, p in plans}
    assert {qid: e.message for qid, e in refused.items() if e is not None} == {}


def test_a_ref_may_stand_for_any_argument_value_at_any_depth() -> None:
    plan = reach()
    plan["steps"][0]["args"]["window"] = {"t_a": {"$ref": "s0.rows[0].vt_s"}, "t_b": HEAD_T_B}
    plan["steps"][0]["args"]["src"] = {"$ref": "s0.rows[0].uid"}
    plan["steps"][1]["args"]["input"] = [{"$ref": "s1.rows[*].uid"}, ["n1", "n2"]]
    plan["steps"].append(
        {"id": "s3", "op": "snapshot_subgraph", "args": {"seeds": [{"$ref": "s1.rows[0].uid"}], "t_valid": 1}}
    )
    assert refusals(plan) == []


# -- what it refuses ---------------------------------------------------------------------------------------


def mutated(edit: Any) -> dict[str, Any]:
    plan = reach()
    edit(plan)
    return plan


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda p: p["steps"][0]["args"].update(nodes_total=3), id="invented-arg-key"),
        pytest.param(lambda p: p["steps"][1]["args"].update(limit2=10), id="limit2"),
        pytest.param(lambda p: p["steps"][0]["args"]["window"].update(t_c=1), id="invented-nested-key"),
        pytest.param(lambda p: p["steps"][0].update(op="teleport"), id="unknown-op"),
        pytest.param(
            lambda p: p["steps"][0].update(op="neighborhood_evolution"), id="args-of-another-operator"
        ),
        pytest.param(lambda p: p["steps"][0].update(answer="s1.rows"), id="invented-step-key"),
        pytest.param(lambda p: p.update(notes="because"), id="invented-plan-key"),
        pytest.param(lambda p: p["steps"][0].update(id="n431"), id="step-named-after-a-uid"),
        pytest.param(lambda p: p["steps"][1]["args"].update(input={"$ref": "rows"}), id="ref-without-step"),
        pytest.param(lambda p: p["answer_spec"].update({"from": "s1.reach_count"}), id="undeclared-from"),
        pytest.param(lambda p: p["answer_spec"].update(kind="value"), id="other-kind"),
        pytest.param(lambda p: p["steps"][0]["args"].update(src=7), id="wrong-type"),
        pytest.param(
            lambda p: p["steps"].append(
                {"id": "s3", "op": "snapshot_subgraph", "args": {"seeds": ["n1"] * 40, "t_valid": 1}}
            ),
            id="list-past-the-cap",
        ),
        pytest.param(lambda p: p["steps"].extend([p["steps"][0]] * MAX_STEPS), id="too-many-steps"),
    ],
)
def test_it_refuses(edit: Any) -> None:
    assert refusals(mutated(edit), "count") != []


def test_the_ref_object_refuses_a_bad_ref_string() -> None:
    v = jsonschema.Draft202012Validator(REF_OBJECT)
    assert v.is_valid({"$ref": "s12.rows[*].uid"})
    assert not v.is_valid({"$ref": "s1"}) and not v.is_valid({"$ref": "x1.rows"}) and not v.is_valid({})


# -- the planner sends it -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ctx(head_store: Store) -> OpContext:
    return OpContext(head_store)


def plan_once(url: str, ctx: OpContext, cfg: PlannerConfig, flavour: str = "vllm") -> None:
    client = ChatClient(config(url, flavour=flavour))
    try:
        task = PlanTask("t/1", "How many nodes can n1 reach?", ("n1",), "count", "Dataset: test.")

        def complete(role: str, messages: Any, schema: Any = None, max_tokens: Any = None, sampling=None):
            return client.complete(messages, schema=schema, max_tokens=max_tokens, sampling=sampling)

        plan_and_run(complete, task, ctx, lambda plan: execute(build_plan(plan), ctx), cfg)
    finally:
        client.close()


def test_the_planner_sends_the_per_operator_schema_the_same_bytes_on_every_request(ctx) -> None:
    bad = one_step()
    bad["steps"][0]["args"]["src"] = "n2"  # a grounding violation: one repair, so two requests
    replies = iter([json.dumps(bad), json.dumps(one_step())])
    with ScriptedServer(lambda body: next(replies)) as server:
        plan_once(server.url, ctx, PlannerConfig(schema="per_operator"))
        first, repair = server.log.chat_bodies
    assert first["response_format"]["type"] == "json_schema"
    sent = first["response_format"]["json_schema"]["schema"]
    assert sent == per_operator_schema("count", named=True)  # time names are on by default
    assert json.dumps(first["response_format"]) == json.dumps(repair["response_format"])


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (PlannerConfig(), None),
        (PlannerConfig(constrained=True), plan_schema("count")),
        (PlannerConfig(schema="generic"), plan_schema("count")),
        (PlannerConfig(schema="per_operator", schema_ops=("temporal_reachability", "compute")), "subset"),
    ],
)
def test_the_schema_choice(ctx, cfg: PlannerConfig, expected: Any) -> None:
    with ScriptedServer(lambda body: json.dumps(one_step())) as server:
        plan_once(server.url, ctx, cfg, flavour="llamacpp")
        (body,) = server.log.chat_bodies
    if expected is None:
        assert "response_format" not in body
        return
    if expected == "subset":
        expected = per_operator_schema("count", ["temporal_reachability", "compute"], named=True)
    assert body["response_format"] == {"type": "json_object", "schema": expected}


def test_an_unknown_schema_choice_is_refused() -> None:
    with pytest.raises(InvalidArgError):
        PlannerConfig(schema="per_op")
    with pytest.raises(InvalidArgError):
        PlannerConfig(schema="per_operator", schema_scope="some")


def _ops_offered(schema: dict[str, Any]) -> set[str]:
    return {b["properties"]["op"]["const"] for b in schema["properties"]["steps"]["items"]["anyOf"]}


def test_the_union_offers_the_operators_the_prompt_shows() -> None:
    """A task with retrieved worked plans is shown only their operators' manual blocks: the per-operator
    union (the response format, and the retry after a repeat) offers those, not all 17 (schema_scope)."""
    shown = WorkedPlan("How many nodes can n3 reach?", ("n3",), "count", reach(), source="train:1")
    task = PlanTask(
        "t/1", "How many nodes can n1 reach?", ("n1",), "count", "Dataset: test.", examples=(shown,)
    )
    narrow = PlannerConfig(schema="per_operator")
    assert _ops_offered(narrow.response_schema("count", task)) == {"temporal_reachability", "compute"}
    assert _ops_offered(PlannerConfig().retry_schema("count", task)) == {"temporal_reachability", "compute"}
    every = {s.name for s in all_operators()}
    assert (
        _ops_offered(PlannerConfig(schema="per_operator", schema_scope="all").response_schema("count", task))
        == every
    )
    bare = PlanTask("t/2", "How many nodes can n1 reach?", ("n1",), "count", "Dataset: test.")
    assert _ops_offered(narrow.response_schema("count", bare)) == every, "no worked plans: the full manual"


def test_named_times_are_admitted_only_where_a_time_or_duration_goes() -> None:
    from jsonschema import Draft202012Validator

    named = Draft202012Validator(per_operator_schema("count", named=True))
    plan = reach()
    plan["steps"][0]["args"]["window"] = {"t_a": "T1", "t_b": "T2"}
    assert [e.message for e in named.iter_errors(plan)] == []
    assert refusals(plan, "count"), "without named times the schema wants the numbers"
    plan["steps"][0]["args"]["src"] = "T1"  # an id: a name is a string like any uid, but not here ...
    plan["steps"][0]["args"]["limit"] = "T1"  # ... a limit is a count: a named time is refused
    assert list(named.iter_errors(plan))
