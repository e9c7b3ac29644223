"""The artifacts generated from the operator registry: pinned tool definitions, completeness of every
registry entry, and the planner's manual.

The snapshot changes whenever an operator is added or its args/output model or manual changes; then
regenerate it with ``python -m tgms.engine.operators.schemas --write-snapshot`` and review the diff.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
from typing import Any

import numpy as np
import pytest

from tgms.engine.operators.base import OpArgs, PagedOutput, parse_args
from tgms.engine.operators.cost import CostEstimate, StoreProfile
from tgms.engine.operators.registry import FAMILY_MODULES, OPERATOR_ORDER, OperatorSpec, all_operators
from tgms.engine.operators.schemas import (
    REGENERATE,
    SNAPSHOT,
    dumps_json,
    operator_schemas,
    planner_manual,
    tool_definitions,
)

SPECS = all_operators()
IDS = [s.name for s in SPECS]


def _arg_names(spec: Any) -> dict[str, Any]:
    """Argument names as a call spells them (an alias for a Python keyword, compute's `as`) -> field."""
    return {f.alias or n: f for n, f in spec.args.model_fields.items()}


def test_tool_definitions_match_snapshot() -> None:
    got = dumps_json(tool_definitions())
    if not SNAPSHOT.exists():
        pytest.fail(f"snapshot {SNAPSHOT} is missing; create it with `{REGENERATE}`")
    want = SNAPSHOT.read_text(encoding="utf-8")
    if got != want:
        names_got = {t["name"] for t in json.loads(got)}
        names_want = {t["name"] for t in json.loads(want)}
        lines = difflib.unified_diff(want.splitlines(True), got.splitlines(True), "snapshot", "generated")
        diff = "".join(itertools.islice(lines, 80))
        pytest.fail(
            "generated tool definitions differ from the pinned snapshot "
            f"(added: {sorted(names_got - names_want)}, removed: {sorted(names_want - names_got)}).\n"
            f"If the change is intended, regenerate with `{REGENERATE}` and review the diff.\n"
            f"First lines of the diff:\n{diff}"
        )


def test_generation_is_deterministic() -> None:
    assert dumps_json(tool_definitions()) == dumps_json(tool_definitions())
    assert dumps_json(operator_schemas()) == dumps_json(operator_schemas())
    assert planner_manual() == planner_manual()


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def test_tool_definitions_shape() -> None:
    tools = tool_definitions()
    assert [t["name"] for t in tools] == IDS and len(set(IDS)) == len(IDS)
    for tool, spec in zip(tools, SPECS, strict=True):
        assert set(tool) == {"name", "description", "inputSchema", "outputSchema"}
        assert tool["description"] == spec.manual.strip()
        for key in ("inputSchema", "outputSchema"):
            schema = tool[key]
            assert schema["type"] == "object" and schema["additionalProperties"] is False
            assert not any("$ref" in n or "$defs" in n for n in _walk(schema)), "schemas are self-contained"
        props = tool["inputSchema"]["properties"]
        assert set(props) == set(_arg_names(spec))
        assert set(OpArgs.model_fields) <= set(props)  # as_of_tt, limit, cursor everywhere
        assert set(tool["inputSchema"].get("required", [])) == {
            n for n, f in _arg_names(spec).items() if f.is_required()
        }
        assert set(tool["outputSchema"]["properties"]) == set(spec.declared_outputs)


def _profile() -> StoreProfile:
    vt = np.arange(0, 10_000_000, 1000, dtype=np.int64)
    return StoreProfile(
        n_edges=len(vt), n_nodes=500, vt_min=0, vt_max=int(vt[-1]), vt_sorted=vt, max_degree=40
    )


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_registry_entry_is_complete(spec: OperatorSpec) -> None:
    # the paper's thirteen in Table 1 order; later families (events) follow them in all_operators()
    assert spec.family in FAMILY_MODULES
    assert spec.name in OPERATOR_ORDER or FAMILY_MODULES.index(spec.family) >= 8
    assert isinstance(spec.manual, str) and len(spec.manual.split()) >= 15, "a one-paragraph manual entry"
    assert "\n\n" not in spec.manual.strip()
    assert spec.summary.endswith(".") and len(spec.summary) > 10
    # the worked example validates against the args model
    assert isinstance(spec.example, dict) and isinstance(spec.example.get("args"), dict)
    args = parse_args(spec.args, spec.example["args"], spec.name)
    for out in spec.example.get("outputs", []):
        assert out in spec.declared_outputs, f"example names undeclared output {out!r}"
    # a cost function that prices the example
    est = spec.cost(_profile(), args)
    assert isinstance(est, CostEstimate) and math.isfinite(est.seconds) and est.seconds > 0
    # declared outputs: every list has a _total; secondary lists a _truncated; lists come with paging fields
    outs = spec.declared_outputs
    assert outs
    for name in spec.lists:
        assert f"{name}_total" in outs
        if name != "rows":
            assert f"{name}_truncated" in outs
    if spec.lists:
        assert issubclass(spec.output, PagedOutput)
        assert {"truncated", "cursor"} <= set(outs)


def test_args_models_forbid_unknown_fields() -> None:
    for spec in SPECS:
        assert spec.args.model_config.get("extra") == "forbid", spec.name
        assert issubclass(spec.args, OpArgs), spec.name


def test_compute_schema_expresses_fn_specific_args() -> None:
    (compute,) = [t for t in tool_definitions() if t["name"] == "compute"]
    schema = compute["inputSchema"]
    assert "sum" in schema["properties"]["fn"]["enum"]
    rules = {tuple(r["if"]["properties"]["fn"]["enum"]): r["then"] for r in schema["allOf"]}
    reducers = rules[("count", "sum", "min", "max", "mean", "median", "distinct")]
    assert reducers["properties"]["k"] == {"type": "null"} and reducers["required"] == ["input"]
    assert rules[("topk",)]["properties"].get("k") is None  # topk takes k
    assert set(rules[("filter",)]["required"]) == {"input", "cmp"}  # and value or other
    pairwise = rules[("interval_relation", "ratio", "diff", "percent", "pct_change", "mul", "add")]
    assert pairwise["properties"]["field"] == {"type": "null"} and len(pairwise["anyOf"]) == 2
    compare = rules[("compare",)]  # operands as a pair fn, and cmp
    assert compare["required"] == ["cmp"] and len(compare["anyOf"]) == 2
    join = rules[("join",)]  # operands as a pair fn, and its key
    assert join["required"] == ["on"] and len(join["anyOf"]) == 2 and join["properties"]["expr"]
    assert set(rules[("derive",)]["required"]) == {"input", "expr", "as"}
    assert set(rules[("quantile",)]["required"]) == {"input", "q"} and "q" not in reducers["required"]
    assert reducers["properties"]["q"] == reducers["properties"]["by"] == {"type": "null"}
    group = rules[("group",)]  # by is needed; aggregates and order_by are optional; field is not taken
    assert set(group["required"]) == {"input", "by"} and group["properties"]["field"] == {"type": "null"}
    assert "aggregates" not in group["properties"] and "order_by" not in group["properties"]
    fns = {f for key in rules for f in key}
    assert fns == set(schema["properties"]["fn"]["enum"])


def test_planner_manual_has_every_operator() -> None:
    text = planner_manual()
    for spec in SPECS:
        head = f"### {spec.name} ({spec.family})"
        assert head in text
        section = text.split(head, 1)[1].split("\n### ", 1)[0]
        assert spec.summary in section
        for name in _arg_names(spec):
            if name not in OpArgs.model_fields:
                assert f"`{name}`:" in section, (spec.name, name)
        for name in spec.declared_outputs:
            assert f"`{name}`:" in section, (spec.name, name)
        assert json.dumps(spec.example["args"], ensure_ascii=False) in section
    for name in OpArgs.model_fields:  # the shared arguments once, at the top
        assert f"`{name}`:" in text.split("### ", 1)[0]


def test_operator_schemas_cover_args_and_outputs() -> None:
    schemas = operator_schemas()
    assert list(schemas) == IDS
    for spec in SPECS:
        entry = schemas[spec.name]
        assert entry["declared_outputs"] == list(spec.declared_outputs)
        assert set(entry["args"]["properties"]) == set(_arg_names(spec))
        assert set(entry["output"]["properties"]) == set(spec.declared_outputs)
