"""compute's row fns: ``join`` (two keyed row lists) and ``derive`` (per-row arithmetic over one list).

Both return whole rows; the fn's ``value`` is the number of rows. Semantics: ``docs/operators.md`` §14.

- ``join``: rows of ``a`` matched with rows of ``b`` on the ``on`` key(s): a field name (the same field on
  both sides) or ``{"a": FIELD_A, "b": FIELD_B}`` (differently named fields: a sender's ``src`` against a
  recipient's ``dst``, a pair against the reversed pair). Key values compare as
  compute's ``==`` (numbers by exact value, anything else by canonical JSON) except that a null key value
  never matches (as in SQL). Output order: ``a``'s order, then for an ``a`` row matching several ``b``
  rows, ``b``'s order. An output row holds ``a``'s fields, then every field some ``b`` row has (not one
  of ``b``'s key fields; in first-seen order), named ``<prefix><name>`` (``prefix`` default ``b_``) when
  the ``a`` row already has the name; a ``b`` field a matched ``b`` row lacks, and every ``b`` field of an
  unmatched ``left`` row, is null.
- ``derive``: each row with one more field ``as`` = ``expr`` evaluated exactly. ``expr`` is
  ``{op, left, right}`` (arithmetic ``add sub mul div min max``, comparisons ``lt le gt ge eq ne``, boolean
  ``and or``) or ``{op, arg}`` (``abs floor ceil sqrt not number``) over field names, numbers and nested
  expressions. ``number`` reads the number a string ends with (a uid ``n42`` → 42: ids compared as numbers,
  not as text, where ``n10`` < ``n9``).
  Arithmetic needs numbers: a field that is missing or not a number makes it null, and so does a division
  by zero. A comparison gives true/false: two numbers by value, two strings in code-point order (``eq``/
  ``ne`` also compare booleans, and a string never equals a number); a null side or an ordering of
  unlike values gives null. ``and``/``or``/``not`` take booleans with SQL's three-valued logic (false and
  null = false, true or null = true; any other operand counts as null).

Argument errors are raised through :mod:`engine.operators.compute_fns`' helpers, so the args model reports
them like its own field errors.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from tgms.engine.canonical import dumps
from tgms.engine.operators.compute_fns import (
    _a_and_b,
    exact,
    exact_num,
    is_number,
    number_out,
    shape_error,
    value_error,
)
from tgms.engine.operators.compute_instead import instead_of_op

HOWS = ("inner", "left", "anti")
ARITH_OPS = ("add", "sub", "mul", "div", "mod", "min", "max")  # numbers -> a number
#: coalesce: left, or right where left is null; when: right where left is true, else null (with coalesce:
#: a CASE, ``coalesce(when(c, a), b)``); any values
OTHER_OPS = ("coalesce", "when")
COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")  # -> true/false
LOGIC_OPS = ("and", "or")  # booleans -> a boolean
UNARY_OPS = ("abs", "floor", "ceil", "sqrt", "not", "number")  # {op, arg}
EXPR_OPS = (*ARITH_OPS, *OTHER_OPS, *COMPARE_OPS, *LOGIC_OPS, *UNARY_OPS)
EXPR_KEYS = ("op", "left", "right")
UNARY_KEYS = ("op", "arg")
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


def _prefix(raw: Any) -> str:
    """What a b field that a also has is renamed with (default ``b_``; a third list joined on gets its own,
    e.g. ``c_``, so its fields never collide with the first join's ``b_`` ones)."""
    if raw is None:
        return "b_"
    if not isinstance(raw, str):
        shape_error("prefix", "prefix must be a string", raw)
    if not raw:
        value_error("prefix", "prefix must not be empty (b's fields would take a's names)", raw)
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
        if type(v) is str:  # its canonical JSON is one-to-one with it: the string itself serves
            parts.append(("s", v))
        else:
            parts.append(("n", exact_num(v, loc)) if is_number(v) else ("j", dumps(v)))
    return tuple(parts)


def _join(args: dict[str, Any]) -> tuple[int, list[Any]]:
    a, b = _a_and_b(args, "join")
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, list):
            shape_error(name, "compute join needs two lists of rows", x)
    on, how, prefix = _on(args.get("on")), _how(args.get("how")), _prefix(args.get("prefix"))
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
    unmatched: list[int | None] = [None] if how == "left" else []  # a left join keeps an unmatched a row
    for r, m in zip(a, matches, strict=True):
        for match in m or unmatched:
            rows.append(_merge(r, None if match is None else b[match], b_fields, prefix))
    return len(rows), rows


def _merge(ra: dict[str, Any], rb: dict[str, Any] | None, b_fields: list[str], prefix: str) -> dict[str, Any]:
    out = dict(ra)
    for f in b_fields:
        name = f"{prefix}{f}" if f in ra else f
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
    op = e.get("op")
    if op is None:
        shape_error(f"{loc}.op", "an expression needs op")
    if not isinstance(op, str):
        shape_error(f"{loc}.op", "op must be a string", op)
    keys = UNARY_KEYS if op in UNARY_OPS else EXPR_KEYS
    extra = sorted(set(e) - set(keys))
    if extra:
        shape_error(f"{loc}.{extra[0]}", f"unknown key(s) {extra} in an expression {{{', '.join(keys)}}}", e)
    for k in keys:
        if e.get(k) is None:
            shape_error(f"{loc}.{k}", f"an expression needs {k}")
    if op not in EXPR_OPS:
        value_error(f"{loc}.op", f"op must be one of {list(EXPR_OPS)}{instead_of_op(op)}", op)
    if depth >= MAX_EXPR_DEPTH:
        value_error(loc, f"expressions nest at most {MAX_EXPR_DEPTH} deep", None)
    for k in keys[1:]:
        _check_expr(e[k], f"{loc}.{k}", depth + 1)


#: a value inside an expression: an exact number (an int as itself: int arithmetic is exact and ~10x
#: faster than Fractions; anything else a Fraction), a boolean, a string (read from a field) or null
Num = int | Fraction
Term = Num | bool | str | None


def _is_num(x: Term) -> bool:
    return type(x) is int or isinstance(x, Fraction)  # a bool is not a number here


def _num(x: Term) -> Num | None:
    return x if _is_num(x) else None  # type: ignore[return-value]


def _logic(x: Term) -> bool | None:
    return x if isinstance(x, bool) else None


def _compare(op: str, x: Term, y: Term) -> bool | None:
    if x is None or y is None:
        return None
    numbers = _is_num(x) and _is_num(y)
    if op in ("eq", "ne"):
        same = (numbers or type(x) is type(y)) and x == y  # a string never equals a number, nor a bool one
        return same if op == "eq" else not same
    if not (numbers or (type(x) is str and type(y) is str)):
        return None  # only two numbers or two strings are ordered
    return {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[op]  # type: ignore[operator]


#: the decimal digits a string ends with
_TRAILING_DIGITS = re.compile(r"[0-9]+\Z")


def _number(x: Term) -> Num | None:
    """``number``: the number a string ends with (``n42`` → 42, ``s007`` → 7), a number itself, a boolean's
    1 or 0 (an indicator to sum or multiply by), else null."""
    if isinstance(x, bool):
        return int(x)
    if _is_num(x):
        return x  # type: ignore[return-value]
    if isinstance(x, str):
        m = _TRAILING_DIGITS.search(x)
        return int(m.group()) if m else None
    return None


def field_value(row: dict[str, Any], name: str) -> Any:
    """A row's value of field ``name``: its own key when it has one, else, for a dotted name, the path of
    keys the dots separate, into nested objects (``props.rating``); null where a step is missing or not an
    object."""
    if name in row or "." not in name:
        return row.get(name)
    head, _, rest = name.partition(".")
    inner = row.get(head)
    for key in rest.split("."):
        if not isinstance(inner, dict):
            return None
        inner = inner.get(key)
    return inner


def _eval(e: Any, row: dict[str, Any]) -> Term:
    if isinstance(e, str):
        v = field_value(row, e)
        if is_number(v):
            return exact_num(v, e)
        return v if isinstance(v, (bool, str)) else None  # missing, null, a list or an object: null
    if not isinstance(e, dict):
        return exact_num(e, "expr")
    op = e["op"]
    if op in UNARY_OPS:
        a = _eval(e["arg"], row)
        if op == "number":
            return _number(a)
        if op == "not":
            truth = _logic(a)
            return None if truth is None else not truth
        n = _num(a)
        if n is None:
            return None
        if op == "sqrt":  # 30 exact decimals (the result is rounded to 9); of a negative: null
            return None if n < 0 else Fraction(math.isqrt(n.numerator * 10**60 // n.denominator), 10**30)
        if op == "abs":
            return -n if n < 0 else n
        return math.floor(n) if op == "floor" else math.ceil(n)
    x, y = _eval(e["left"], row), _eval(e["right"], row)
    if op == "coalesce":
        return y if x is None else x
    if op == "when":
        return y if x is True else None
    if op in COMPARE_OPS:
        return _compare(op, x, y)
    if op in LOGIC_OPS:
        p, q = _logic(x), _logic(y)
        decisive = op == "or"  # or: any true is true; and: any false is false
        if p is decisive or q is decisive:
            return decisive
        return None if p is None or q is None else not decisive
    a, b = _num(x), _num(y)
    if a is None or b is None:
        return None
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if b == 0:  # div and mod by zero: null
        return None
    if op == "mod":
        return a % b  # int's and Fraction's % are a − b·⌊a/b⌋ (the divisor's sign)
    if type(a) is int and type(b) is int:  # exact: an int when b divides a, else the Fraction
        return a // b if a % b == 0 else Fraction(a, b)
    return Fraction(a) / b


def _out(q: Term) -> Any:
    return number_out(q) if isinstance(q, Fraction) else q  # an int, a bool, a string or null as it is


def _derive(args: dict[str, Any]) -> tuple[int, list[Any]]:
    # the literal arguments first: a plan's input is a ref the verifier leaves out, so an expression it
    # can check is checked before the missing input stops the call
    expr, name = args.get("expr"), args.get("as")
    if expr is None:
        shape_error("expr", "compute derive needs expr")
    if name is None:
        shape_error("as", "compute derive needs as (the new field's name)")
    if not isinstance(name, str):
        shape_error("as", "as must be a string", name)
    if not name:
        value_error("as", "as must be a non-empty field name", name)
    _check_expr(expr, "expr", 0)
    items = args.get("input")
    if not isinstance(items, list):
        shape_error("input", "input must be a list", items)
    rows = []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            value_error(f"input[{i}]", f"input[{i}] is not an object", it)
        # a field name alone is a copy of the field's value as it is (a rename), not a term of arithmetic
        rows.append({**it, name: field_value(it, expr) if isinstance(expr, str) else _out(_eval(expr, it))})
    return len(rows), rows


def evaluate_rows(fn: str, args: dict[str, Any]) -> tuple[int, list[Any]]:
    return _join(args) if fn == "join" else _derive(args)
