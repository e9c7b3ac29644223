"""Artifacts generated from the operator registry — never written by hand (DESIGN §3.4).

- :func:`operator_schemas`: the JSON Schema of every operator's args and output model;
- :func:`tool_definitions`: ``[{name, description, inputSchema, outputSchema}]`` as an MCP server lists
  its tools (``description`` is the operator's manual entry);
- :func:`planner_manual`: the planner's manual, one section per operator (summary, arguments with types
  and defaults, declared outputs, the worked example).

Schemas are made deterministic and self-contained: ``$ref``s into ``$defs`` are inlined, pydantic's
generated ``title``s are dropped, and JSON text is written with sorted keys. Everything per operator comes
from its registry entry.

Regenerate the pinned snapshot after changing an operator (or registering a new one)::

    python -m tgms.engine.operators.schemas --write-snapshot
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from tgms.engine.operators.base import OpArgs, PagedOutput
from tgms.engine.operators.registry import OperatorSpec, all_operators
from tgms.engine.operators.units import Unit, UnitTree, model_tree, units_legend

REPO_ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO_ROOT / "tests" / "engine" / "operators" / "snapshots" / "tool_definitions.json"
REGENERATE = "python -m tgms.engine.operators.schemas --write-snapshot"

# JSON Schema keywords whose value is a schema, a list of schemas, or a map of name -> schema
_SCHEMA_KEYS = frozenset(
    {"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"}
)
_SCHEMA_LIST_KEYS = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})
_SCHEMA_MAP_KEYS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs"})


def _clean(node: Any, defs: dict[str, Any], stack: tuple[str, ...] = ()) -> Any:
    """Inline ``#/$defs/...`` references and drop generated titles, walking schema positions only (an
    ``enum`` or ``default`` value is data and is copied as is)."""
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in stack:
            raise ValueError(f"recursive schema {name!r} cannot be inlined")
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return _clean({**defs[name], **siblings}, defs, (*stack, name))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs"):
            continue
        if key in _SCHEMA_KEYS:
            out[key] = _clean(value, defs, stack)
        elif key in _SCHEMA_LIST_KEYS:
            out[key] = [_clean(v, defs, stack) for v in value]
        elif key in _SCHEMA_MAP_KEYS:
            out[key] = {k: _clean(v, defs, stack) for k, v in value.items()}
        else:
            out[key] = value
    return out


def _sorted(value: Any) -> Any:
    """The same JSON value with every object's keys in sorted order (a deterministic byte form)."""
    return json.loads(json.dumps(value, sort_keys=True, ensure_ascii=False))


def model_schema(model: type[BaseModel], mode: str = "validation", *, sort: bool = True) -> dict[str, Any]:
    """The model's JSON Schema, self-contained; ``sort=False`` keeps the declared field order."""
    raw = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
    clean = _clean(raw, raw.get("$defs", {}))
    return _sorted(clean) if sort else clean


def args_schema(spec: OperatorSpec) -> dict[str, Any]:
    return model_schema(spec.args, "validation")


def output_schema(spec: OperatorSpec) -> dict[str, Any]:
    return model_schema(spec.output, "serialization")


def operator_schemas() -> dict[str, dict[str, Any]]:
    """``{op: {"args": schema, "output": schema, "declared_outputs": [...]}}`` for every operator."""
    return {
        s.name: {
            "args": args_schema(s),
            "output": output_schema(s),
            "declared_outputs": list(s.declared_outputs),
        }
        for s in all_operators()
    }


def tool_definitions() -> list[dict[str, Any]]:
    """The MCP tool list: one tool per operator, in registry order."""
    return [
        {
            "name": s.name,
            "description": s.manual.strip(),
            "inputSchema": args_schema(s),
            "outputSchema": output_schema(s),
        }
        for s in all_operators()
    ]


def dumps_json(value: Any) -> str:
    """The stable text form of generated JSON (sorted keys, two-space indent, trailing newline)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# -- the planner's manual ----------------------------------------------------------------------------


def _num(v: Any) -> str:
    if isinstance(v, int) and v >= 2**32 and v & (v - 1) == 0:
        return f"2**{v.bit_length() - 1}"
    return json.dumps(v)


#: JSON Schema bounds as rendered after the type, in this order (a length is an int below 2**32: _num
#: prints it as is)
_BOUNDS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("exclusiveMaximum", "<"),
    ("minLength", "len >="),
    ("maxLength", "len <="),
    ("minItems", "len >="),
    ("maxItems", "len <="),
)


def render_type(s: dict[str, Any], deep: bool = True) -> str:
    """A compact type string of a (cleaned) schema: ``int >= 0 < 2**62``, ``list[str]``, ``{t_a, t_b}``."""
    if "enum" in s:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in s["enum"])
    if "const" in s:
        return json.dumps(s["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if key in s:
            return " | ".join(render_type(x, deep) for x in s[key])
    if "allOf" in s and "type" not in s and "properties" not in s:
        return render_type(s["allOf"][0], deep)
    typ = s.get("type")
    bounds = [f"{sym} {_num(s[key])}" for key, sym in _BOUNDS if key in s]
    if typ == "array":
        base = f"list[{render_type(s.get('items', {}), deep)}]"
    elif typ == "object" or "properties" in s:
        props = s.get("properties")
        if not props:
            base = "object"
        elif deep:
            base = "{" + ", ".join(f"{k}: {render_type(v, False)}" for k, v in props.items()) + "}"
        else:
            base = "{" + ", ".join(props) + "}"
    elif typ is None:
        base = "any"
    else:
        base = {"integer": "int", "number": "number", "string": "str", "boolean": "bool"}.get(typ, typ)
    return " ".join([base, *bounds]) if bounds else base


def _arg_lines(model: type[BaseModel], skip: Sequence[str] = ()) -> list[str]:
    props = model_schema(model, sort=False)["properties"]
    lines = []
    for field_name, info in model.model_fields.items():
        if field_name in skip:
            continue
        name = info.alias or field_name  # an argument named by a Python keyword (compute's `as`)
        if info.is_required():
            default = "required"
        elif info.default is PydanticUndefined:
            default = "optional"
        else:
            default = "default " + json.dumps(info.default, ensure_ascii=False)
        line = f"- `{name}`: {render_type(props[name])} ({default})"
        if info.description:
            line += f" — {info.description}"
        lines.append(line)
    return lines


def _output_lines(spec: OperatorSpec) -> list[str]:
    props = model_schema(spec.output, "serialization", sort=False)["properties"]
    tree = model_tree(spec.output)
    return [
        f"- `{name}`: {render_type(props[name], deep=False)}{_unit_note(tree.member(name))}"
        for name in spec.declared_outputs
    ]


def _unit_note(tree: UnitTree) -> str:
    """` (count)`, or for a list ` (each: uid id, earliest_arrival time)`; free values are left out."""
    if tree.unit is not None:  # a bool's type already says it
        return "" if tree.unit in (Unit.VALUE, Unit.BOOLEAN) else f" ({tree.unit})"
    item = tree.item
    if item is None:
        return ""
    if item.unit is not None:
        return "" if item.unit is Unit.VALUE else f" (each: {item.unit})"
    shown = [f"{k} {v.unit}" for k, v in item.fields or () if v.unit not in (None, Unit.VALUE)]
    return f" (each: {', '.join(shown)})" if shown else ""


def manual_section(spec: OperatorSpec) -> str:
    manual = spec.manual.strip()
    details = manual[len(spec.summary) :].strip() if manual.startswith(spec.summary[:-1]) else manual
    parts = [f"### {spec.name} ({spec.family})", "", spec.summary]
    if details:
        parts += ["", details]
    parts += ["", "Arguments:", *(_arg_lines(spec.args, skip=tuple(OpArgs.model_fields)) or ["- (none)"])]
    parts += ["", "Declared outputs:", *_output_lines(spec)]
    if spec.traits.units_doc:
        parts.append(f"Units: {spec.traits.units_doc}.")
    example = spec.example
    parts += ["", "Example: " + json.dumps({"op": spec.name, "args": example["args"]}, ensure_ascii=False)]
    if example.get("outputs"):
        parts.append("Outputs used: " + ", ".join(f"`{o}`" for o in example["outputs"]))
    if example.get("note"):
        parts.append(f"Note: {example['note']}")
    return "\n".join(parts)


def planner_manual() -> str:
    """The planner's manual: shared arguments once, then one section per operator."""
    specs = all_operators()
    head = [
        "## Operators",
        "",
        f"{len(specs)} operators. Times are int epoch microseconds (UTC); intervals are half-open [s, e).",
        "Every operator also accepts:",
        *_arg_lines(OpArgs),
        "List outputs L come with L_total; a page is cut at `limit`, and "
        + ", ".join(f"`{f}`" for f in PagedOutput.model_fields)
        + " report whether anything was left out.",
        "",
        *units_legend(),
    ]
    return "\n".join(head) + "\n\n" + "\n\n".join(manual_section(s) for s in specs) + "\n"


# -- command line --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tgms.engine.operators.schemas", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--write-snapshot",
        nargs="?",
        const=str(SNAPSHOT),
        metavar="PATH",
        help=f"write the tool definitions to PATH (default {SNAPSHOT.relative_to(REPO_ROOT)})",
    )
    p.add_argument("--print", choices=["tools", "schemas", "manual"], dest="what", help="print an artifact")
    args = p.parse_args(argv)
    if args.write_snapshot:
        path = Path(args.write_snapshot)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps_json(tool_definitions()), encoding="utf-8")
        print(f"wrote {path} ({len(all_operators())} operators)", file=sys.stderr)
    if args.what == "tools":
        sys.stdout.write(dumps_json(tool_definitions()))
    elif args.what == "schemas":
        sys.stdout.write(dumps_json(operator_schemas()))
    elif args.what == "manual":
        sys.stdout.write(planner_manual())
    elif not args.write_snapshot:
        p.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
