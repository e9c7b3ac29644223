"""Argument names that are not strings (YAML 1.1 reads an unquoted ``on:`` as ``true``) are a schema
violation naming where the key stands and why it is not a string, never a crash or an "unknown argument
[True]"."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tgms.engine.errors import SchemaError
from tgms.engine.operators.base import validation_error
from tgms.engine.operators.compute_fns import evaluate
from tgms.engine.plan.verifier import VerifierConfig, verify


def _plan(args: dict[Any, Any]) -> dict[str, Any]:
    return {
        "plan_id": "p",
        "question": "q",
        "steps": [
            {"id": "s1", "op": "aggregate_events", "args": {"group_by": ["pair"]}},
            {"id": "s2", "op": "compute", "args": args, "depends_on": ["s1"]},
        ],
        "answer_spec": {"kind": "rows", "from": "s2.rows"},
    }


def test_a_boolean_argument_name_is_a_schema_violation_with_the_yaml_hint() -> None:
    args = {
        "fn": "join",
        "a": {"$ref": "s1.rows"},
        "b": {"$ref": "s1.rows"},
        True: [{"a": "src", "b": "dst"}],
    }
    found = [v.to_dict() for v in verify(_plan(args), None, VerifierConfig.without("cost")).violations]
    assert [(v["code"], v["step"], v["field"]) for v in found if v["code"] == "schema"] == [
        ("schema", "s2", "args")
    ]
    assert "quote it" in found[0]["message"] and "True" in found[0]["message"]
    # deeper down too, with its place
    nested = {"fn": "derive", "input": {"$ref": "s1.rows"}, "expr": {"op": "abs", 1: "x"}, "as": "y"}
    found = [v.to_dict() for v in verify(_plan(nested), None, VerifierConfig.without("cost")).violations]
    assert [(v["code"], v["field"]) for v in found][:1] == [("schema", "args.expr")]


def test_a_step_refused_while_parsing_is_reported_once_not_again_by_its_dependents() -> None:
    """A later step that depends on (and reads) the refused step, and the answer taken from it, are not
    told "depends_on names no step 's2'": the one violation is the refused step's own."""
    plan = _plan({"fn": "join", "a": {"$ref": "s1.rows"}, "b": {"$ref": "s1.rows"}, True: "src"})
    plan["steps"].append(
        {
            "id": "s3",
            "op": "compute",
            "args": {"fn": "count", "input": {"$ref": "s2.rows"}},
            "depends_on": ["s2"],
        }
    )
    found = [v.to_dict() for v in verify(plan, None, VerifierConfig.without("cost")).violations]
    assert [(v["code"], v["step"]) for v in found] == [("schema", "s2")], found
    plan["steps"][2]["depends_on"] = ["s9"]  # a step that never was is still named
    found = [v.to_dict() for v in verify(plan, None, VerifierConfig.without("cost")).violations]
    assert ("unknown_dependency", "s3") in [(v["code"], v["step"]) for v in found]


def test_compute_called_directly_with_mixed_key_types_refuses_cleanly() -> None:
    with pytest.raises(ValidationError) as info:
        evaluate({"fn": "count", "input": [1], True: 1, "zz": 2})
    err = validation_error(info.value, "compute")
    assert isinstance(err, SchemaError) and "unknown argument" in str(err)
