"""Which fields compute's rows hold, and which fields of its input rows a call names (``Traits.row_fields``
and ``Traits.reads_fields``), for the plan verifier.

A field a call names that its input's rows lack is not an error at run time everywhere: ``derive`` makes it
null, ``group``'s numeric aggregates skip it, and a plan answers something else than was asked (a typo,
``totl`` for ``total``). Where the producer's row fields are known — a ``group``'s keys and aggregates,
``aggregate_events``' keys and aggregates, an operator's declared row model, and what ``derive``,
``filter``, ``topk``, ``rolling``, ``join`` and ``record`` make of those — the verifier refuses such a
name before anything runs, with the fields there are (engine/plan/fields.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tgms.engine.operators.compute_fns import REDUCERS, SET_OPS
from tgms.engine.operators.compute_group import aggregate_names, group_fields

#: operand argument -> the fields of the rows a whole-rows ref there yields (None: not known)
Inputs = Mapping[str, tuple[str, ...] | None]
#: (argument path for the message, operand argument, field name, whether the name may be a dotted path
#: into an object field: a derive's operand ``props.rating`` reads the rows' ``props``)
Read = tuple[str, str, str, bool]

_NO_INPUTS: Inputs = {}


def join_keys(on: Any) -> list[tuple[str, str]] | None:
    """A join's keys as (a's field, b's field) pairs; None when one is not a field name or {a, b}."""
    items = on if isinstance(on, list) else [on]
    keys = []
    for it in items:
        if isinstance(it, str):
            keys.append((it, it))
        elif isinstance(it, dict) and isinstance(it.get("a"), str) and isinstance(it.get("b"), str):
            keys.append((it["a"], it["b"]))
        else:
            return None
    return keys


def compute_row_fields(args: Mapping[str, Any], inputs: Inputs = _NO_INPUTS) -> tuple[str, ...] | None:
    """The fields of every row a compute call gives, when its arguments and its inputs' fields fix them."""
    fn = args.get("fn")
    base = inputs.get("input")
    if fn == "group":
        return group_fields(args)
    if fn == "record":
        parts = args.get("fields")
        return tuple(parts) if isinstance(parts, dict) and all(isinstance(k, str) for k in parts) else None
    if fn in ("filter", "topk"):
        return base
    if fn == "derive":
        name = args.get("as")
        if base is None or not isinstance(name, str) or not name:
            return None
        return base if name in base else (*base, name)
    if fn == "rolling":
        names = aggregate_names(args)
        return None if base is None or names is None else (*base, *(n for n in names if n not in base))
    if fn == "join":
        return _join_fields(args, inputs.get("a"), inputs.get("b"))
    return None


def joined_b_names(
    args: Mapping[str, Any], keys: list[tuple[str, str]], a: Sequence[str], b: Sequence[str]
) -> list[tuple[str, str]]:
    """A join's b fields in its rows: (name in the joined row, b's name) for each of b's non-key fields,
    renamed ``<prefix><name>`` (``b_`` by default) where a's rows already have the name."""
    prefix = args.get("prefix") if isinstance(args.get("prefix"), str) and args.get("prefix") else "b_"
    b_keys = {kb for _, kb in keys}
    return [(f"{prefix}{n}" if n in a else n, n) for n in b if n not in b_keys]


def _join_fields(
    args: Mapping[str, Any], a: tuple[str, ...] | None, b: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    keys = join_keys(args.get("on"))
    if a is None or keys is None:
        return None
    if args.get("how") == "anti":
        return a
    if b is None:
        return None
    return (*a, *(out for out, _ in joined_b_names(args, keys, a, b)))


def compute_clashes(args: Mapping[str, Any], inputs: Inputs) -> list[tuple[str, str]]:
    """A join's b field whose name in the joined rows is already taken (by a's rows or an earlier b field):
    the run would stop at it (compute_rows._merge), so the verifier says so first, at ``prefix``."""
    keys = join_keys(args.get("on"))
    a, b = inputs.get("a"), inputs.get("b")
    if args.get("fn") != "join" or args.get("how") == "anti" or keys is None or a is None or b is None:
        return []
    taken, out = set(a), []
    for name, b_name in joined_b_names(args, keys, a, b):
        if name in taken:
            out.append(
                (
                    "prefix",
                    f"b's field {b_name!r} would be named {name!r}, which the joined rows already have: "
                    "give the join a prefix of its own (e.g. c_), or rename first (a derive whose expr "
                    "is the field's name)",
                )
            )
        taken.add(name)
    return out


def compute_reads(args: Mapping[str, Any]) -> list[Read]:
    """Every field of its input rows a compute call names: ``(argument path, operand, name, path)``, path
    true where a dotted name reads into an object field (a derive's operands)."""
    fn = args.get("fn")
    out: list[Read] = []

    def name(where: str, operand: str, value: Any, path: bool = False) -> None:
        if isinstance(value, str):
            out.append((where, operand, value, path))

    if fn in (*REDUCERS, "quantile", "distinct", "topk", "filter"):
        name("field", "input", args.get("field"))
    if fn == "topk":
        name("tie_by", "input", args.get("tie_by"))
    if fn == "filter":
        name("other", "input", args.get("other"))
    if fn in SET_OPS:
        for operand in ("a", "b"):
            name("field", operand, args.get("field"))
    if fn == "derive":
        _expr_names(args.get("expr"), "expr", name)
    if fn in ("group", "rolling"):
        by = args.get("by")
        for i, key in enumerate(by if isinstance(by, list) else [by]):
            name("by" if not isinstance(by, list) else f"by.{i}", "input", key)
        aggs = args.get("aggregates")
        for i, agg in enumerate(aggs if isinstance(aggs, list) else []):
            if isinstance(agg, dict):
                name(f"aggregates.{i}.field", "input", agg.get("field"))
    if fn == "join":
        on = args.get("on")
        for i, (ka, kb) in enumerate(join_keys(on) or []):
            where = "on" if not isinstance(on, list) else f"on.{i}"
            name(where, "a", ka)
            name(where, "b", kb)
    return out


def _expr_names(e: Any, where: str, name: Any) -> None:
    """A derive expression's operands that are strings (field names), each at its path."""
    if isinstance(e, str):
        name(where, "input", e, True)
    elif isinstance(e, dict):
        for key in ("left", "right", "arg"):
            if key in e:
                _expr_names(e[key], f"{where}.{key}", name)
