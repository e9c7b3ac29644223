"""The per-operator plan schema: structured output that lets a constrained decoder write only real arguments.

:func:`models.planner.plan_schema` (the *generic* schema) fixes the plan's outline and the operator names,
but leaves each step's ``args`` a free object, so a model under a grammar still invents argument keys
(issue 25: ``nodes_total`` in args, a step closed early). :func:`per_operator_schema` makes each step an
``anyOf`` over operators, one branch ``{id, op: {const: name}, args: <that operator's args>, depends_on}``
with ``additionalProperties: false`` on the step, on its args and on every nested object of the args, so
the decoder can only write the keys the operator declares.

Every args schema comes from the operator registry (:func:`engine.api.operator_schemas`, already free of
``$defs``/``$ref``), adapted for grammar engines (:func:`grammar_schema`):

- only the keywords llama.cpp's ``json-schema-to-grammar`` turns into grammar are kept (:data:`KEYWORDS`,
  checked against its converter: ``not``, ``if``/``then``/``else`` are unsupported, ``allOf`` is read as a
  merge of objects, ``properties`` beside ``anyOf`` in one node is ignored). Dropped: compute's
  ``allOf``/``if``/``then`` (which fn takes which argument: the verifier checks that), numeric bounds
  (llama.cpp bounds integers only, and its integer rule stops at 16 digits anyway, so the open end 2**62
  cannot be written under its grammar: the verifier checks extents), ``default``/``description`` (no
  grammar; they only cost bytes);
- a value the registry leaves unconstrained (``{}``: compute's ``a``, ``b``, ``value``) becomes an explicit
  union of the JSON types: both llama.cpp converters read ``{}`` as "an object", which would refuse
  ``"value": 5``;
- wherever an argument value may stand, a ref object may stand instead (DESIGN §3.5, at any depth). It is
  written *without* a ``"$ref"`` key in the schema: ``{"type": "object", "required": ["$ref"],
  "additionalProperties": {"type": "string", "pattern": REF}}``. Both llama.cpp converters take every
  object that has a ``"$ref"`` key for a schema reference, so ``"properties": {"$ref": ...}`` crashes
  them (C++: a JSON object read as a string; Python: an unhashable dict). The price: under llama.cpp's
  grammar the ref object's key is any string (a validator checks ``required``; the plan verifier checks
  the rest);
- arrays are capped with ``maxItems`` (:data:`MAX_LIST` where the registry allows more): a tiny model
  otherwise loops inside a list until ``max_tokens``. Literal lists are task uids or small constants; a
  long list comes through a ``$ref``.

Argument keys keep the operator's declared order (the manual's), the arguments every operator shares
(``as_of_tt``, ``limit``, ``cursor``) last: llama.cpp's grammar fixes the key order, and required keys
come first. The schema is built once per (answer kind, operator subset) and is the same bytes on every
call (a server's grammar cache and the response cache key on it).

Size (17 operators): see docs/systems.md; :func:`schema_size` measures it. ``ops`` restricts the union
to a subset (retrieval of the operators that matter for a question narrows it).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from tgms.engine.api import ANSWER_KINDS, ARG_UNITS, InvalidArgError, Unit, all_operators, operator_schemas
from tgms.models.errors import ModelOutputError

MAX_STEPS = 12  # the plan IR's limit (DESIGN §3.5)
#: cap of an array the registry leaves longer (10,000 uids): literal lists in a plan are short
MAX_LIST = 32
#: the JSON Schema keywords kept (what llama.cpp's json-schema-to-grammar turns into grammar)
KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "enum",
        "const",
        "anyOf",
        "items",
        "minItems",
        "maxItems",
        "pattern",
        "additionalProperties",
    }
)
#: step ids as a pattern: SmolLM2 under a grammar without it named steps after node uids ("n431")
STEP_ID_PATTERN = "^s[0-9]{1,2}$"
#: the ref path after the field: ``.name``, ``[i]`` or ``[*]`` segments, as in the ref language of
#: engine.plan.refs. Unbounded on purpose: a bounded repetition (``{0,4}``) is expanded into nested rules
#: at every ref position by llama-cpp-python's converter (the grammar grew from 0.3 MB to 1.3 MB)
_SEGMENTS = r"(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\]|\[\*\])*"
#: a ``$ref`` string at an argument position: a step id, a field, then path characters. Looser than the
#: ref language (the verifier parses the path) because it is repeated at ~240 argument positions: the
#: exact form would add ~10 KB to the schema
REF_PATTERN = r"^s[0-9]{1,2}\.[A-Za-z_][A-Za-z0-9_.\[\]*]*$"
#: every JSON type: what the registry's unconstrained ``{}`` means (see the module docstring)
ANY_VALUE: dict[str, Any] = {
    "anyOf": [{"type": t} for t in ("string", "number", "boolean", "null", "array", "object")]
}
#: ``{"$ref": "sN.field..."}``, with no "$ref" key in the schema itself (see the module docstring)
REF_OBJECT: dict[str, Any] = {
    "type": "object",
    "required": ["$ref"],
    "additionalProperties": {"type": "string", "pattern": REF_PATTERN},
}
SCHEMAS = ("none", "generic", "per_operator")
#: which operators a per-operator union offers a task (models.planner.PlannerConfig.schema_scope)
SCHEMA_SCOPES = ("shown", "all")


def _ref_or(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or a ref object in its place (an any-value already admits one)."""
    if schema == ANY_VALUE:
        return schema
    branches = schema["anyOf"] if set(schema) == {"anyOf"} else [schema]
    return {"anyOf": [*branches, REF_OBJECT]}


def grammar_schema(node: dict[str, Any], refs: bool = True) -> dict[str, Any]:
    """A registry schema node adapted for grammar engines (module docstring): known keywords only, any
    value spelled out, arrays capped, a ref object admitted at every value position below the top when
    ``refs``."""
    if not node or set(node) <= {"default", "description"}:
        return ANY_VALUE
    if "anyOf" in node:  # pydantic puts nothing beside anyOf but default/description: drop those
        flat: list[dict[str, Any]] = []
        for branch in node["anyOf"]:
            adapted = grammar_schema(branch, refs)
            flat.extend(adapted["anyOf"] if set(adapted) == {"anyOf"} else [adapted])
        return {"anyOf": flat}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in KEYWORDS:
            continue
        if key == "properties":
            out[key] = {
                name: _ref_or(grammar_schema(sub, refs)) if refs else grammar_schema(sub, refs)
                for name, sub in value.items()
            }
        elif key == "items":
            item = grammar_schema(value, refs)
            out[key] = _ref_or(item) if refs else item
        elif key == "additionalProperties" and isinstance(value, dict):
            out[key] = grammar_schema(value, refs)
        else:
            out[key] = value
    if out.get("type") == "array":
        out.setdefault("items", ANY_VALUE)
        out["maxItems"] = min(int(out.get("maxItems", MAX_LIST)), MAX_LIST)
    if out.get("type") == "object" and out.get("additionalProperties") is True:
        del out["additionalProperties"]  # a free object (compute's expr): "object" in every converter
    return out


def _shared_args() -> frozenset[str]:
    """The arguments every operator accepts (as_of_tt, limit, cursor), read off the registry."""
    names = [set(spec.args.model_json_schema()["properties"]) for spec in all_operators()]
    return frozenset(set.intersection(*names)) if names else frozenset()


#: a named time of the question (models.worked_plans): what a time or duration argument may hold instead
NAME_STRING = {"type": "string", "pattern": "^[TD][1-9][0-9]?$"}
#: the arguments that take a time point or a duration (engine units' naming table)
TIMED_ARGS = frozenset(n for n, u in ARG_UNITS.items() if u in (Unit.TIME, Unit.DURATION))


def _with_names(node: Any) -> Any:
    """``node`` where every time or duration argument (at any depth: a window's t_a, t_b) also admits a
    named time ``"T1"``/``"D1"``, which the planner replaces by its number before verifying."""
    if isinstance(node, list):
        return [_with_names(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _with_names(v) for k, v in node.items()}
    for name, sub in (out.get("properties") or {}).items():
        if name in TIMED_ARGS and isinstance(sub, dict):
            branches = sub["anyOf"] if set(sub) == {"anyOf"} else [sub]
            if NAME_STRING not in branches:
                out["properties"][name] = {"anyOf": [*branches, NAME_STRING]}
    return out


def args_schema(
    op: str, registry: dict[str, dict[str, Any]] | None = None, named: bool = False
) -> dict[str, Any]:
    """The operator's args schema for a grammar: the registry's (``registry``: operator_schemas(), passed
    in when building many), adapted, keys in declared order with the shared arguments last; ``named``:
    time and duration arguments also admit the question's named times."""
    spec = next(s for s in all_operators() if s.name == op)
    adapted = grammar_schema((registry or operator_schemas())[op]["args"])
    declared = list(spec.args.model_json_schema()["properties"])  # declared order, aliases applied
    shared = _shared_args()
    order = [n for n in declared if n not in shared] + [n for n in declared if n in shared]
    props = adapted.get("properties", {})
    adapted["properties"] = {n: props[n] for n in order if n in props}
    adapted["additionalProperties"] = False
    if "required" in adapted:
        adapted["required"] = [n for n in order if n in adapted["required"]]
    return _with_names(adapted) if named else adapted


def _step_branch(
    op: str, step_id: dict[str, Any], registry: dict[str, dict[str, Any]], named: bool
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "id": step_id,
            "op": {"const": op},
            "args": args_schema(op, registry, named),
            "depends_on": {"type": "array", "items": step_id, "maxItems": MAX_STEPS},
        },
        # depends_on may be left out (the engine reads a missing one as []; oracle plans do)
        "required": ["id", "op", "args"],
        "additionalProperties": False,
    }


def _from_pattern(ops: Sequence[str]) -> str:
    """answer_spec.from: a ref whose field is a declared output of one of ``ops`` (one occurrence in the
    schema, so the union of names is affordable here, unlike at every argument position)."""
    specs = {s.name: s for s in all_operators()}
    fields = sorted({f for op in ops for f in specs[op].declared_outputs})
    return rf"^s[0-9]{{1,2}}\.({'|'.join(fields)}){_SEGMENTS}$"


@cache
def _built(kind: str | None, ops: tuple[str, ...], named: bool) -> str:
    kinds = [kind] if kind is not None else list(ANSWER_KINDS)
    step_id = {"type": "string", "pattern": STEP_ID_PATTERN}
    registry = operator_schemas()
    schema = {
        "type": "object",
        "properties": {
            "steps": {
                "type": "array",
                "items": {"anyOf": [_step_branch(op, step_id, registry, named) for op in ops]},
                "minItems": 1,
                "maxItems": MAX_STEPS,
            },
            "answer_spec": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": kinds},
                    "from": {"type": "string", "pattern": _from_pattern(ops)},
                },
                "required": ["kind", "from"],
                "additionalProperties": False,
            },
        },
        "required": ["steps", "answer_spec"],
        # the model writes steps and answer_spec only (the planner adds plan_id and question)
        "additionalProperties": False,
    }
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def per_operator_schema(
    kind: str | None, ops: Sequence[str] | None = None, named: bool = False
) -> dict[str, Any]:
    """The plan schema with one step branch per operator (module docstring); ``ops`` restricts the union
    to those operators (kept in registry order, so the same set gives the same bytes); ``named``: time and
    duration arguments also admit named times (the prompt layout's ``time_names``)."""
    if kind is not None and kind not in ANSWER_KINDS:
        raise ModelOutputError(f"unknown answer kind {kind!r}", allowed=list(ANSWER_KINDS))
    names = [s.name for s in all_operators()]
    if ops is not None:
        unknown = sorted(set(ops) - set(names))
        if unknown or not ops:
            raise InvalidArgError(f"unknown or no operators {unknown} for the plan schema", allowed=names)
        names = [n for n in names if n in set(ops)]
    # built once as text: every call returns equal bytes, and a caller's edit cannot reach the cache
    return copy.deepcopy(json.loads(_built(kind, tuple(names), named)))


def schema_size(schema: dict[str, Any]) -> dict[str, int]:
    """``{chars, operators}``: the compact JSON size of a plan schema and how many operator branches it
    has (the generic schema counts its op enum)."""
    step = schema["properties"]["steps"]["items"]
    ops = len(step["anyOf"]) if "anyOf" in step else len(step["properties"]["op"]["enum"])
    return {"chars": len(json.dumps(schema, ensure_ascii=False, separators=(",", ":"))), "operators": ops}
