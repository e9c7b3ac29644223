"""compute's row fns: ``join`` (two keyed row lists) and ``derive`` (per-row arithmetic over one list).

Both return whole rows; the fn's ``value`` is the number of rows. Semantics: ``docs/operators.md`` §14.

- ``join``: rows of ``a`` matched with rows of ``b`` on the ``on`` key(s): a field name (the same field on
  both sides) or ``{"a": FIELD_A, "b": FIELD_B}`` (differently named fields: a sender's ``src`` against a
  recipient's ``dst``, a pair against the reversed pair). Key values compare as
  compute's ``==`` (numbers by exact value, anything else by canonical JSON) except that a null key value
  never matches (as in SQL). Output order: ``a``'s order, then for an ``a`` row matching several ``b``
  rows, ``b``'s order. An output row holds ``a``'s fields, then every field some ``b`` row has (not one
  of ``b``'s key fields; in first-seen order), named ``b_<name>`` when the ``a`` row already has the
  name; a ``b`` field a matched ``b`` row lacks, and every ``b`` field of an unmatched ``left`` row, is
  null.
- ``derive``: each row with one more field ``as`` = ``expr`` evaluated exactly; a field that is missing or
  not a number makes the result null, and so does a division by zero.

Argument errors are raised through :mod:`engine.operators.compute_fns`' helpers, so the args model reports
them like its own field errors.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from engine.canonical import dumps
from engine.operators.compute_fns import (
    _a_and_b,
    exact,
    is_number,
    number_out,
    shape_error,
    value_error,
)

HOWS = ("inner", "left", "anti")
EXPR_OPS = ("add", "sub", "mul", "div")
EXPR_KEYS = ("op", "left", "right")
MAX_EXPR_DEPTH = 8
#: a join's output is at most |a|·|b| rows: past this it is refused before any row is built
MAX_JOIN_ROWS = 100_000
MAX_ON = 8

# -- join ------------------------------------------------------------------------------------------------


Key = tuple[str, str]  # (a's field, b's field)


def _on_item(item: Any) -> Key:
    if isinstance(item, str):
        return item, item
    if isinstance(item, dict) and set(item) == {"a", "b"} and all(isinstance(v, str) for v in item.values()):
        return item["a"], item["b"]
    shape_error("on", 'an on key is a field name or {"a": FIELD_A, "b": FIELD_B} (two field names)', item)


def _on(raw: Any) -> list[Key]:
    if raw is None:
        shape_error("on", "compute join needs on (a key, or a list of keys)")
    items = raw if isinstance(raw, list) else [raw]
    keys = list(dict.fromkeys(_on_item(it) for it in items))  # a repeated key adds nothing
    if not keys or len(keys) > MAX_ON:
        value_error("on", f"on must name 1..{MAX_ON} keys", raw)
    return keys


def _how(raw: Any) -> str:
    if raw is None:
        return "inner"
    if not isinstance(raw, str):
        shape_error("how", "how must be a string", raw)
    if raw not in HOWS:
        value_error("how", f"how must be one of {list(HOWS)}", raw)
    return raw


def _key(row: Any, on: list[str], loc: str) -> tuple[Any, ...] | None:
    """The hashable join key of a row (None: a null key value, which matches nothing)."""
    if not isinstance(row, dict) or any(f not in row for f in on):
        value_error(loc, f"{loc} is not an object holding the key field(s) {on}", row)
    parts: list[Any] = []
    for f in on:
        v = row[f]
        if v is None:
            return None
        parts.append(("n", exact(v, loc)) if is_number(v) else ("j", dumps(v)))
    return tuple(parts)


def _join(args: dict[str, Any]) -> tuple[int, list[Any]]:
    a, b = _a_and_b(args, "join")
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, list):
            shape_error(name, "compute join needs two lists of rows", x)
    on, how = _on(args.get("on")), _how(args.get("how"))
    on_a, on_b = [k[0] for k in on], [k[1] for k in on]
    a_keys = [_key(r, on_a, f"a[{i}]") for i, r in enumerate(a)]
    index: dict[tuple[Any, ...], list[int]] = {}
    for j, r in enumerate(b):
        k = _key(r, on_b, f"b[{j}]")
        if k is not None:
            index.setdefault(k, []).append(j)
    matches = [index.get(k, []) if k is not None else [] for k in a_keys]
    if how == "anti":
        rows = [dict(r) for r, m in zip(a, matches, strict=True) if not m]
        return len(rows), rows
    n_out = sum(len(m) if m else int(how == "left") for m in matches)
    if n_out > MAX_JOIN_ROWS:
        value_error("on", f"compute join would give {n_out} rows (at most {MAX_JOIN_ROWS}); join on a "
                    "more selective key or narrow a and b first", n_out)  # fmt: skip
    b_fields = list(dict.fromkeys(f for r in b for f in r if f not in on_b))
    rows = []
    for r, m in zip(a, matches, strict=True):
        for j in m or ([None] if how == "left" else []):
            rows.append(_merge(r, None if j is None else b[j], b_fields))
    return len(rows), rows


def _merge(ra: dict[str, Any], rb: dict[str, Any] | None, b_fields: list[str]) -> dict[str, Any]:
    out = dict(ra)
    for f in b_fields:
        name = f"b_{f}" if f in ra else f
        if name in out:
            value_error("b", f"compute join: b's field {f!r} would be named {name!r}, which a already has", f)
        out[name] = None if rb is None else rb.get(f)
    return out


# -- derive ----------------------------------------------------------------------------------------------


def _check_expr(e: Any, loc: str, depth: int) -> None:
    """Validate an expression tree once, before any row is evaluated."""
    if isinstance(e, str) or (is_number(e) and not isinstance(e, bool)):
        if not isinstance(e, str):
            exact(e, loc)  # NaN/inf refused here, not per row
        return
    if not isinstance(e, dict):
        shape_error(loc, f"{loc} must be a field name, a number or an expression object", e)
    extra = sorted(set(e) - set(EXPR_KEYS))
    if extra:
        shape_error(f"{loc}.{extra[0]}", f"unknown key(s) {extra} in an expression", e)
    for k in EXPR_KEYS:
        if e.get(k) is None:
            shape_error(f"{loc}.{k}", f"an expression needs {k}")
    if not isinstance(e["op"], str):
        shape_error(f"{loc}.op", "op must be a string", e["op"])
    if e["op"] not in EXPR_OPS:
        value_error(f"{loc}.op", f"op must be one of {list(EXPR_OPS)}", e["op"])
    if depth >= MAX_EXPR_DEPTH:
        value_error(loc, f"expressions nest at most {MAX_EXPR_DEPTH} deep", None)
    _check_expr(e["left"], f"{loc}.left", depth + 1)
    _check_expr(e["right"], f"{loc}.right", depth + 1)


def _eval(e: Any, row: dict[str, Any]) -> Fraction | None:
    if isinstance(e, str):
        v = row.get(e)
        return exact(v, e) if is_number(v) else None  # missing or not a number: null
    if not isinstance(e, dict):
        return exact(e, "expr")
    x, y = _eval(e["left"], row), _eval(e["right"], row)
    if x is None or y is None:
        return None
    op = e["op"]
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "mul":
        return x * y
    return None if y == 0 else x / y


def _derive(args: dict[str, Any]) -> tuple[int, list[Any]]:
    items = args.get("input")
    if not isinstance(items, list):
        shape_error("input", "input must be a list", items)
    expr, name = args.get("expr"), args.get("as")
    if expr is None:
        shape_error("expr", "compute derive needs expr")
    if name is None:
        shape_error("as", "compute derive needs as (the new field's name)")
    if not isinstance(name, str):
        shape_error("as", "as must be a string", name)
    if not name:
        value_error("as", "as must be a non-empty field name", name)
    if not isinstance(expr, dict):
        shape_error("expr", "expr must be an expression object {op, left, right}", expr)
    _check_expr(expr, "expr", 0)
    rows = []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            value_error(f"input[{i}]", f"input[{i}] is not an object", it)
        q = _eval(expr, it)
        rows.append({**it, name: None if q is None else number_out(q)})
    return len(rows), rows


def evaluate_rows(fn: str, args: dict[str, Any]) -> tuple[int, list[Any]]:
    return _join(args) if fn == "join" else _derive(args)
