"""The planner's operator manual, generated from the operator registry and compact enough for a small model.

The engine's own :func:`engine.api.planner_manual` is the full reference (about 18,000 characters: every
manual paragraph, bound and example); a model served with a 4,096-token window cannot hold it next to the
rules, worked plans and a question. This module renders the same registry facts in one short block per
operator, and never writes any of them by hand:

- the purpose line: the first sentence of the operator's manual entry, cut at its first colon or
  semicolon (what follows is detail) and capped in length;
- the arguments in declaration order: ``name:type`` when required, ``name:type=default`` or
  ``name?:type`` (default null) when optional; enums are spelled out (motif names, metrics, compute's
  fns), numeric ranges are kept when they are small (``hops``, ``k``), time values are plain ``int``;
- the DECLARED OUTPUT FIELDS a ``$ref`` may name, lists with the keys of their elements
  (``rows[{uid,earliest_arrival}]``); the page bookkeeping (``truncated``, ``cursor``, ``<list>_truncated``)
  is stated once for all operators instead of per operator;
- the units (issue 24): the naming conventions once in the header (:func:`engine.api.units_legend`), and
  the rule of an operator whose output units depend on its arguments (compute, aggregate_events,
  graph_metric_timeseries);
- the example's note when it has one (resolve_entities and compute explain how a later step takes their
  result through a ``$ref``).

The text is a pure function of the registry, so it is byte-identical across calls and processes (the
planner's prompt prefix relies on it).
"""

from __future__ import annotations

import json
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel

from tgms.engine.api import DEFAULT_LIMIT, OperatorSpec, all_operators, operator_schemas, units_legend

#: arguments every operator accepts (stated once in the header)
COMMON_ARGS = ("as_of_tt", "limit", "cursor")
#: output fields of the page bookkeeping (stated once in the header)
PAGE_FIELDS = ("truncated", "cursor")
PURPOSE_MAX = 110
#: a numeric range is printed when its upper bound is at most this (hops 0..3, k 1..20); time bounds are not
SMALL_RANGE = 10_000
#: an element type with more keys than this, used by several outputs, is spelled out once and named
ALIAS_MIN_KEYS = 5
#: argument descriptions that add nothing to the type (the header states the time unit)
#: where a purpose line's detail starts (the outputs are listed separately)
_DETAIL = (": ", "; ", ", as `rows`", " as `rows`", ", with its")
_TAKEN = "Taken by"
_PLAIN = ("epoch microseconds", "the function; see the manual")


def _scalar(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def render_type(s: dict[str, Any], depth: int = 0) -> str:
    """A compact type: ``int``, ``int 0..3``, ``str|[str]``, ``{t_a:int,t_b:int}``, ``a|b|c``."""
    if "enum" in s:
        return "|".join(_scalar(v) for v in s["enum"])
    if "const" in s:
        return _scalar(s["const"])
    for key in ("anyOf", "oneOf"):
        if key in s:
            parts = [render_type(x, depth) for x in s[key] if x.get("type") != "null"]
            return "|".join(dict.fromkeys(parts)) or "null"
    typ = s.get("type")
    if typ == "array":
        return "[" + render_type(s.get("items", {}), depth + 1) + "]"
    if typ == "object" or "properties" in s:
        props: dict[str, Any] = s.get("properties") or {}
        if not props:
            return "object"
        if depth >= 2:
            return "{" + ",".join(props) + "}"
        req = set(s.get("required") or ())
        return (
            "{"
            + ",".join(f"{k}{'' if k in req else '?'}:{render_type(v, depth + 1)}" for k, v in props.items())
            + "}"
        )
    if typ in ("integer", "number"):
        base = "int" if typ == "integer" else "num"
        lo = s.get("minimum", s.get("exclusiveMinimum"))
        hi = s.get("maximum")
        if isinstance(hi, (int, float)) and hi <= SMALL_RANGE and lo is not None:
            return f"{base} {_scalar(lo)}..{_scalar(hi)}"
        return base
    return {"string": "str", "boolean": "bool"}.get(typ or "", "any")


def purpose(spec: OperatorSpec) -> str:
    """The manual's first sentence, cut before its detail (first ``: `` or ``; ``) and capped in length."""
    line = spec.summary.rstrip(".")
    for sep in _DETAIL:
        if sep in line:
            line = line.split(sep, 1)[0]
    if len(line) > PURPOSE_MAX:
        line = line[:PURPOSE_MAX].rsplit(" ", 1)[0] + "…"
    return line.replace("`", "")


def _arg(name: str, schema: dict[str, Any], required: bool) -> str:
    typ = render_type(schema)
    if required:
        return f"{name}:{typ}"
    default = schema.get("default")
    if default is None:
        return f"{name}?:{typ}"
    return f"{name}:{typ}={_scalar(default)}"


def arg_line(spec: OperatorSpec, schema: dict[str, Any], earlier: dict[str, str] | None = None) -> str:
    """The argument list; a long type spelled out before, in this operator or in an earlier one
    (``earlier``: type -> ``op.arg``, updated) is named instead (``like list_events.where``)."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    # a call spells an argument by its alias when it has one (compute's `as`, a Python keyword)
    names = [f.alias or n for n, f in spec.args.model_fields.items() if n not in COMMON_ARGS]
    names = [n for n in names if n in props]
    out: list[str] = []
    seen: dict[str, str] = {}  # a long type already spelled out in this operator -> the arg that has it
    for n in names:
        text = _arg(n, props[n], n in required)
        typ = render_type(props[n])
        if len(typ) > 40 and typ in seen:
            text = text.replace(typ, f"like {seen[typ]}")
        elif len(typ) > 40 and earlier is not None and typ in earlier:
            text = text.replace(typ, f"like {earlier[typ]}")
        seen.setdefault(typ, n)
        if earlier is not None:
            earlier.setdefault(typ, f"{spec.name}.{n}")
        out.append(text)
    return ", ".join(out) or "(none)"


def _element_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model of a list's elements (``list[ReachRow]`` -> ``ReachRow``), if any."""
    for a in typing.get_args(annotation):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
        inner = _element_model(a)
        if inner is not None:
            return inner
    return None


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(annotation) is list or any(_is_list(a) for a in typing.get_args(annotation))


def element_keys(model: type[BaseModel], aliases: dict[str, str], depth: int = 0) -> str:
    """``{k1,k2,sub[{...}]}`` in declaration order; a shared long element type by its alias."""
    if model.__name__ in aliases:
        return model.__name__
    keys = []
    for name, f in model.model_fields.items():
        sub = _element_model(f.annotation) if _is_list(f.annotation) else None
        keys.append(
            f"{name}[{element_keys(sub, aliases, depth + 1)}]" if sub is not None and depth < 1 else name
        )
    return "{" + ",".join(keys) + "}"


def shared_elements(specs: list[OperatorSpec]) -> dict[str, str]:
    """Element types used by several outputs and long enough to name once: ``{name: "{k1,...}"}``."""
    seen: dict[str, list[type[BaseModel]]] = {}
    for spec in specs:
        for f in spec.output.model_fields.values():
            m = _element_model(f.annotation) if _is_list(f.annotation) else None
            if m is not None:
                seen.setdefault(m.__name__, []).append(m)
    return {
        name: element_keys(ms[0], {})
        for name, ms in sorted(seen.items())
        if len(ms) >= 2 and len(ms[0].model_fields) > ALIAS_MIN_KEYS
    }


def output_line(spec: OperatorSpec, schema: dict[str, Any], aliases: dict[str, str]) -> str:
    """The declared output fields a ``$ref`` may name (page bookkeeping left to the header)."""
    props = schema.get("properties") or {}
    out = []
    for name in spec.declared_outputs:
        if name in PAGE_FIELDS or (name.endswith("_truncated") and name[: -len("_truncated")] in props):
            continue
        ann = spec.output.model_fields[name].annotation
        model = _element_model(ann) if _is_list(ann) else None
        if model is not None:
            out.append(f"{name}[{element_keys(model, aliases)}]")
        elif _is_list(ann):
            out.append(f"{name}[{render_type(props.get(name, {}).get('items', {}), 2)}]")
        else:
            out.append(f"{name}:{render_type(props.get(name, {}), 2)}")
    return ", ".join(out)


def arg_notes(spec: OperatorSpec) -> str:
    """The argument descriptions that say more than the type (delta's unit, stride's bucket width); those
    that only say which fns take the argument go into :func:`takes_line` instead."""
    notes = []
    for field_name, f in spec.args.model_fields.items():
        name = f.alias or field_name
        desc = (f.description or "").strip()
        if name in COMMON_ARGS or not desc or desc.startswith(_PLAIN) or _TAKEN in desc:
            continue
        notes.append(f"{name}: {desc.rstrip('.')}")
    return "; ".join(notes)


def takes_line(spec: OperatorSpec) -> str:
    """Which arguments each function of a multi-function operator takes (compute), from the "Taken by: ..."
    of the argument descriptions; functions that take the same arguments are grouped."""
    fns: dict[str, list[str]] = {}
    everyone: list[str] = []
    for field_name, f in spec.args.model_fields.items():
        name = f.alias or field_name
        desc = f.description or ""
        if _TAKEN not in desc:
            continue
        who = desc.split(_TAKEN, 1)[1].strip().rstrip(".")
        if who.startswith("every"):
            everyone.append(name)
            continue
        for fn in (w.strip() for w in who.lstrip(":").split(",")):
            fns.setdefault(fn, []).append(name)
    groups: dict[tuple[str, ...], list[str]] = {}
    for fn, names in fns.items():
        groups.setdefault(tuple(everyone + names), []).append(fn)
    return "; ".join(f"{'|'.join(fs)}: {', '.join(names)}" for names, fs in groups.items())


def operator_block(
    spec: OperatorSpec,
    schemas: dict[str, Any],
    aliases: dict[str, str],
    seen: dict[str, str],
    types: dict[str, str] | None = None,
) -> str:
    """One operator's lines; ``seen`` maps argument lines already printed to their operator, so an operator
    with the same arguments as an earlier one (the two motif operators) says so instead of repeating them."""
    args = arg_line(spec, schemas["args"])
    same = seen.get(args) if len(args) > 60 else None
    if not same:  # long types shared with earlier operators are named, not repeated
        args = arg_line(spec, schemas["args"], types)
    seen.setdefault(args, spec.name)
    line = purpose(spec)
    lines = [f"{spec.name}: {line}" + ("" if line.endswith("…") else ".")]
    if same:
        lines.append(f"  args: as {same}")
    else:
        lines.append(f"  args: {args}")
        notes = arg_notes(spec)
        if notes:
            lines.append(f"  where {notes}")
    takes = takes_line(spec)
    if takes:
        lines.append(f"  fn takes: {takes}")
    lines.append(f"  out: {output_line(spec, schemas['output'], aliases)}")
    if spec.traits.units_doc and spec.name != "compute":  # the header states compute's rules
        lines.append(f"  units: {spec.traits.units_doc}")
    note = (spec.example or {}).get("note")
    if note and "$ref" in note:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def _head(specs: list[OperatorSpec], aliases: dict[str, str]) -> list[str]:
    return [
        f"OPERATORS ({len(specs)}). Times are int epoch µs (UTC); intervals and windows are "
        "half-open [start, end).",
        "Every operator also takes as_of_tt?:int (the data as believed at that transaction time); list "
        f"outputs take limit:int 1..10000={DEFAULT_LIMIT}, and a list L comes with L_total (exact, past "
        "a cut page).",
        "out lists the ONLY fields a $ref may name; L[{k1,k2}]: a list of objects with those keys.",
        *(f"{name} = {keys}" for name, keys in aliases.items()),
        *units_legend(compact=True),
    ]


def _blocks(specs: list[OperatorSpec], aliases: dict[str, str]) -> list[str]:
    schemas = operator_schemas()
    seen: dict[str, str] = {}
    types: dict[str, str] = {}
    return [operator_block(s, schemas[s.name], aliases, seen, types) for s in specs]


@cache
def operator_manual() -> str:
    """The compact manual: shared conventions once, then one block per operator in registry order."""
    specs = all_operators()
    aliases = shared_elements(specs)
    return "\n".join(_head(specs, aliases)) + "\n" + "\n".join(_blocks(specs, aliases)) + "\n"


@cache
def manual_index() -> str:
    """The manual without the operators' blocks (issue 25, item 2): the shared conventions, then one line
    per operator (its name and purpose). The blocks of the operators a question needs go in the task's
    message (:func:`operator_blocks`), so this stays one constant prefix."""
    specs = all_operators()
    aliases = shared_elements(specs)
    lines = [f"  {s.name}: {purpose(s)}" for s in specs]
    return (
        "\n".join(_head(specs, aliases))
        + "\nThe operators (the args and out fields of those the question needs are given with the task):\n"
        + "\n".join(lines)
        + "\n"
    )


def operator_blocks(names: list[str] | tuple[str, ...]) -> str:
    """The blocks of the named operators, in registry order, with the shared aliases of the full manual
    (the index's header defines them). Unknown names are skipped."""
    wanted = set(names)
    specs = all_operators()
    aliases = shared_elements(specs)
    return "\n".join(_blocks([s for s in specs if s.name in wanted], aliases))


#: characters per token of SmolLM2's tokenizer on this prompt (measured 2.77 on the static prefix: digits
#: are one token each, and the manual is dense with punctuation); a little under, so estimates err high
CHARS_PER_TOKEN = 2.7


def estimate_tokens(text: str) -> int:
    """A token count estimate (chars / 2.7) until the local servers' tokenizer count is wired in."""
    return int(len(text) / CHARS_PER_TOKEN) + 1
