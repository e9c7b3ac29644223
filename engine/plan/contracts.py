"""What the registry's contracts say about a plan, without running it.

- :func:`ref_target`: walk a ref through the producing operator's **output** schema (its declared outputs)
  and return the JSON types it yields, or the position where it leaves the contract and the fields that
  were legal there (the paper's Lesson 1: ``s2.count`` where the operator emits ``rows_total``);
- :func:`arg_types`: the JSON types an **argument** position accepts (for ref/argument compatibility);
- :func:`value_shape`, :func:`element_shape`: whether what a ref yields names entities (uid strings, or
  objects with a ``uid``), read from the producer's output schema, for the answer-kind check;
- :func:`uid_positions`: where an operator's arguments name node uids (the :class:`UidArg` marker), for
  the grounding rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

from pydantic import BaseModel

from tgms.engine.operators.base import UidArg
from tgms.engine.operators.registry import OperatorSpec
from tgms.engine.operators.schemas import args_schema, output_schema
from tgms.engine.operators.traits import literals_at, marked
from tgms.engine.plan.refs import Field, Index, Ref, Star

ANY: frozenset[str] = frozenset()  # "no constraint": the schema position accepts or yields anything


def _types(schema: dict[str, Any]) -> frozenset[str]:
    """The JSON types a schema node admits (``ANY`` when unconstrained)."""
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [_types(s) for s in schema[key]]
            return ANY if any(p == ANY for p in parts) else frozenset().union(*parts)
    if "enum" in schema:
        return frozenset(_json_type(v) for v in schema["enum"])
    typ = schema.get("type")
    if typ is None:
        return frozenset({"object"}) if "properties" in schema else ANY
    return frozenset(typ) if isinstance(typ, list) else frozenset({typ})


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [b for s in schema[key] for b in _branches(s)]
    return [schema]


@dataclass(frozen=True)
class RefTarget:
    """Where a ref lands in its producer's output contract."""

    ok: bool
    types: frozenset[str] = ANY  # what the ref yields (``array`` when it projects with [*])
    at: str = ""  # on failure: the position that is not in the contract
    legal: tuple[str, ...] = ()  # on failure: the fields legal at that position
    message: str = ""
    node: dict[str, Any] | None = None  # the schema node it lands on ({}: unconstrained)
    projected: bool = False  # through [*]: a list of ``node`` values


# keyed by the model, not the operator name: a name registered again (a test's toy) has new models
_SCHEMAS: dict[tuple[str, type[BaseModel]], dict[str, Any]] = {}


def _out_schema(spec: OperatorSpec) -> dict[str, Any]:
    if ("out", spec.output) not in _SCHEMAS:
        _SCHEMAS["out", spec.output] = output_schema(spec)
    return _SCHEMAS["out", spec.output]


def _args_schema(spec: OperatorSpec) -> dict[str, Any]:
    if ("args", spec.args) not in _SCHEMAS:
        _SCHEMAS["args", spec.args] = args_schema(spec)
    return _SCHEMAS["args", spec.args]


def ref_target(spec: OperatorSpec, ref: Ref) -> RefTarget:
    schema = _out_schema(spec)
    fields = tuple(spec.declared_outputs)
    if ref.field not in fields:
        return RefTarget(
            False,
            at=f"{ref.step}.{ref.field}",
            legal=fields,
            message=f"{spec.name} has no output field {ref.field!r}",
        )
    node: dict[str, Any] = schema["properties"][ref.field]
    here = f"{ref.step}.{ref.field}"
    projected = False
    for seg in ref.path:
        options = _branches(node)
        if any(_types(o) == ANY for o in options):
            node = {}
            break
        if isinstance(seg, (Index, Star)):
            arrays = [o for o in options if "array" in _types(o)]
            if not arrays:
                return RefTarget(False, at=here + str(seg), message=f"{here} is not a list")
            node = arrays[0].get("items", {})
            projected = projected or isinstance(seg, Star)
        else:
            assert isinstance(seg, Field)
            objs = [o for o in options if "object" in _types(o)]
            props = {k: v for o in objs for k, v in o.get("properties", {}).items()}
            if objs and not props:  # an open object (props): any key
                node = {}
                break
            if seg.name not in props:
                return RefTarget(
                    False, at=here + str(seg), legal=tuple(props), message=f"{here} has no field {seg.name!r}"
                )
            node = props[seg.name]
        here += str(seg)
    types = _types(node) if node else ANY
    return RefTarget(True, frozenset({"array"}) if projected else types, node=node, projected=projected)


def row_field_target(fields: tuple[str, ...] | None, ref: Ref) -> RefTarget | None:
    """A ref into ``rows[i].NAME`` or ``rows[*].NAME`` of a step whose rows' fields are known
    (engine/plan/fields.py: a compute ``group``'s keys and aggregate names, a derive's input fields and
    ``as``, ...), when NAME is not one of them: the failed target, with those fields as the legal ones.
    None when the ref is fine or cannot be told."""
    path = ref.path
    if fields is None or ref.field != "rows" or len(path) < 2:
        return None
    if not isinstance(path[0], (Index, Star)) or not isinstance(path[1], Field) or path[1].name in fields:
        return None
    here = f"{ref.step}.rows{path[0]}"
    return RefTarget(
        False, at=f"{here}{path[1]}", legal=fields, message=f"{here} has no field {path[1].name!r}"
    )


# -- what a value holds: uids or not -----------------------------------------------------------------------


class Shape(Enum):
    """Whether a value the contract declares can name an entity (DESIGN §3.5 answer kinds)."""

    UID = "a uid string or an object with a uid"
    OTHER = "neither a uid string nor an object with a uid"
    UNKNOWN = "not declared"


def _shape(node: dict[str, Any]) -> Shape:
    """The shape of a schema node: UID if some branch is a string or an object whose ``uid`` is a string;
    UNKNOWN if some branch is unconstrained (compute's rows, an open object); else OTHER. ``null``
    branches are neutral (a missing value is the run's to report)."""
    shapes = set()
    for o in _branches(node):
        types = _types(o) if o else ANY
        if types == ANY:
            shapes.add(Shape.UNKNOWN)
        elif "string" in types:
            shapes.add(Shape.UID)
        elif "object" in types:
            props = o.get("properties")
            if not props:
                shapes.add(Shape.UNKNOWN)
            elif "uid" in props:
                uid = _types(props["uid"]) if props["uid"] else ANY
                shapes.add(Shape.UID if uid == ANY or "string" in uid else Shape.OTHER)
            else:
                shapes.add(Shape.OTHER)
        elif types != {"null"}:
            shapes.add(Shape.OTHER)
    for s in (Shape.UID, Shape.UNKNOWN):
        if s in shapes:
            return s
    return Shape.OTHER


def value_shape(tgt: RefTarget) -> Shape:
    """What the value a ref yields is (an ``entity`` answer needs UID or UNKNOWN)."""
    if tgt.node is None or tgt.projected:
        return Shape.UNKNOWN if tgt.node is None else Shape.OTHER
    return _shape(tgt.node)


def element_shape(tgt: RefTarget) -> Shape:
    """What the elements of the list a ref yields are (an ``entity_set`` answer needs UID or UNKNOWN)."""
    if tgt.node is None:
        return Shape.UNKNOWN
    if tgt.projected:
        return _shape(tgt.node)
    if not tgt.node:
        return Shape.UNKNOWN
    items = [o.get("items", {}) for o in _branches(tgt.node) if "array" in _types(o)]
    return _shape({"anyOf": items}) if items else Shape.OTHER


def arg_node(spec: OperatorSpec, loc: tuple[str | int, ...]) -> dict[str, Any]:
    """The args-schema node at argument position ``loc`` (``{}`` when the schema does not say)."""
    node: dict[str, Any] = _args_schema(spec)
    for part in loc:
        options = _branches(node)
        if isinstance(part, int):
            arrays = [o for o in options if "array" in _types(o)]
            node = arrays[0].get("items", {}) if arrays else {}
        else:
            node = {k: v for o in options for k, v in o.get("properties", {}).items()}.get(part, {})
        if not node:
            return {}
    return node


def arg_types(spec: OperatorSpec, loc: tuple[str | int, ...]) -> frozenset[str]:
    """The JSON types the argument position ``loc`` accepts (``ANY`` if it cannot be told)."""
    node = arg_node(spec, loc)
    return _types(node) if node else ANY


def arg_fields(spec: OperatorSpec, loc: tuple[str | int, ...]) -> list[str]:
    """The argument names an object position ``loc`` takes (``()``: the operator's own arguments)."""
    return sorted({k for o in _branches(arg_node(spec, loc)) for k in o.get("properties", {})})


def compatible(arg: frozenset[str], value: frozenset[str]) -> bool:
    if arg == ANY or value == ANY:
        return True
    widen = {"integer": {"integer", "number"}}
    return any(t in arg or widen.get(t, set()) & arg for t in value)


# -- uid arguments -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UidPosition:
    path: tuple[str, ...]  # field names; "*" = each element of a list
    keywords: tuple[str, ...] = ()


@cache
def uid_positions(model: type[BaseModel]) -> tuple[UidPosition, ...]:
    return tuple(UidPosition(path, mark.keywords) for path, mark in marked(model, UidArg))


def literal_uids(model: type[BaseModel], args: dict[str, Any]) -> list[tuple[str, str]]:
    """``(argument location, uid)`` for every literal uid in ``args`` (refs are not literals)."""
    found: list[tuple[str, str]] = []
    for pos in uid_positions(model):
        for where, value in literals_at(args, pos.path):
            if isinstance(value, str) and value not in pos.keywords:
                found.append((where, value))
            elif isinstance(value, list):  # a uid-or-list position (co_active specs)
                found += [
                    (f"{where}[{i}]", v)
                    for i, v in enumerate(value)
                    if isinstance(v, str) and v not in pos.keywords
                ]
    return found


def arg_max_items(spec: OperatorSpec, loc: tuple[str | int, ...]) -> int | None:
    """The ``maxItems`` of the list argument at ``loc`` (None when it has none or is not a list)."""
    caps = [o["maxItems"] for o in _branches(arg_node(spec, loc)) if "maxItems" in o]
    return min(caps) if caps else None
