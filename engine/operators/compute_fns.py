"""compute's functions: the arguments each fn takes and :func:`evaluate`, which checks a call's arguments
and computes its ``(value, rows)``; the operator around it (args model, schema rules, cost, traits) is
:mod:`engine.operators.compute`.

Numbers enter as their canonical decimal value (a float x is read as the decimal ``repr(canon_float(x))``,
so ``0.1`` is exactly 1/10 and ``0.1 + 0.2`` is exactly 3/10) and are combined as ``fractions.Fraction``;
a result leaves as an int when it is integral, else as a float rounded to 9 decimals. Semantics:
``docs/operators.md`` §14. Argument errors are raised as pydantic ``ValidationError``s with a location, so
that the args model's validator reports them like its own field errors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from contextlib import suppress
from fractions import Fraction
from typing import Any, NoReturn

import numpy as np
from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from tgms.engine.canonical import canon_float, dumps, int_array, list_kinds
from tgms.engine.operators.compute_instead import instead_of_fn

REDUCERS = ("count", "sum", "min", "max", "mean", "median")
SELECTORS = ("topk", "filter")
PAIRWISE = ("ratio", "diff", "percent", "pct_change", "mul", "add")
SET_OPS = ("union", "intersection", "difference")
ROW_FNS = ("join", "derive")  # engine.operators.compute_rows
GROUP_FNS = ("quantile", "distinct", "group", "rolling")  # engine.operators.compute_group
FNS = (*REDUCERS, "quantile", *SELECTORS, "interval_relation", "compare", *PAIRWISE, *SET_OPS, "distinct",
       *ROW_FNS, "group", "rolling", "record")  # fmt: skip
#: per-row fns: each output row depends on its own input row only, so over part of a list they give exactly
#: the rows of that part. They run over truncated input and their step stays tainted (docs/plans.md §3): the
#: result is itself a cut list, and its value (a row count) is read like any cut page's length.
PER_ROW = ("filter", "derive")
#: fns over a list whose result (a number, or rows and their count) is wrong on part of the list: a plan
#: may not apply them to truncated input (docs/plans.md §3). topk over a page is the page's top, a set op
#: misses the members past the cut, and a join against part of b is plainly wrong.
LIST_FNS = tuple(f for f in (*REDUCERS, *SELECTORS, *SET_OPS, *ROW_FNS, *GROUP_FNS) if f not in PER_ROW)
TWO_OPERANDS = ("interval_relation", "compare", *PAIRWISE, *SET_OPS, "join")  # a and b, or input = [a, b]
FN_ARGS = (
    "input",
    "field",
    "k",
    "fraction",
    "order",
    "tie_by",
    "cmp",
    "value",
    "other",
    "a",
    "b",
    "on",
    "how",
    "prefix",
    "expr",
    "as",
    "fields",
    "q",
    "by",
    "aggregates",
    "order_by",
    "frame",
)
#: the arguments (besides ``fn``) each fn takes; any other non-null argument is E_INVALID_ARG
TAKES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(REDUCERS, ("input", "field")),
    "topk": ("input", "field", "k", "fraction", "order", "tie_by"),
    "filter": ("input", "field", "cmp", "value", "other"),
    "interval_relation": ("input", "a", "b"),
    "compare": ("input", "a", "b", "cmp"),
    **dict.fromkeys(PAIRWISE, ("input", "a", "b")),
    **dict.fromkeys(SET_OPS, ("input", "a", "b", "field")),
    "join": ("input", "a", "b", "on", "how", "prefix"),
    "derive": ("input", "expr", "as"),
    "record": ("fields",),
    "quantile": ("input", "field", "q"),
    "distinct": ("input", "field"),
    "group": ("input", "by", "aggregates", "order_by"),
    "rolling": ("input", "by", "aggregates", "frame"),
}
#: arguments a fn cannot do without (besides its operands)
NEEDS: dict[str, tuple[str, ...]] = {
    "filter": ("cmp",),  # and value or other (checked by the fn)
    "compare": ("cmp",),
    "join": ("on",),
    "derive": ("expr", "as"),
    "record": ("fields",),
    "quantile": ("q",),
    "group": ("by",),
    "rolling": ("frame",),
}
COMMON = ("as_of_tt", "limit", "cursor")
CMP_ALIASES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
CMPS = ("==", "!=", "<", "<=", ">", ">=")
#: filter's null tests (no value): a non-null / a null value; a row without the field counts as null
NULL_TESTS = ("exists", "missing")
DEFAULT_K = 10
MAX_K = 10_000
#: a record's parts: how many, and their names (an answer's named parts, "the three counts")
MAX_RECORD_FIELDS = 16
RECORD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

Value = bool | int | float | str | None  # bool: compare's answer
Result = tuple[Value, list[Any]]

# -- errors: raised as pydantic errors with a location, mapped by base.validation_error ------------------


def _fail(kind: str, loc: str, message: str, value: Any) -> NoReturn:
    err = PydanticCustomError(kind, message)
    raise ValidationError.from_exception_data("compute", [{"type": err, "loc": (loc,), "input": value}])


def shape_error(loc: str, message: str, value: Any = None) -> NoReturn:
    """A missing argument or a wrong JSON type: E_SCHEMA."""
    _fail("missing" if value is None else "json_type", loc, message, value)


def value_error(loc: str, message: str, value: Any = None) -> NoReturn:
    """A well-typed value that is out of bounds or unusable: E_INVALID_ARG."""
    _fail("invalid_arg", loc, message, value)


def _show(x: Any, width: int = 60) -> str:
    """A value as JSON (null, true, "n9"), the way a plan writes it; Python's repr if it is not JSON."""
    try:
        text = dumps(x)
    except (TypeError, ValueError):
        text = repr(x)
    return text if len(text) <= width else text[: width - 3] + "..."


# -- exact numbers ---------------------------------------------------------------------------------------


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def exact(x: Any, loc: str) -> Fraction:
    """The exact value of a JSON number (a float by its canonical decimal form)."""
    if not is_number(x):  # a null: a lag's first row, a left join's unmatched one
        hint = " (drop the nulls first: filter cmp exists)" if x is None else ""
        value_error(loc, f"{_show(x)} is not a number{hint}", x)
    if isinstance(x, int):
        return Fraction(x)
    if not math.isfinite(x):
        value_error(loc, f"{loc}: NaN and infinite numbers are not allowed", repr(x))
    c = canon_float(x)
    return Fraction(c) if isinstance(c, int) else Fraction(repr(c))


def exact_num(x: Any, loc: str) -> int | Fraction:
    """:func:`exact`, but an int as itself: ints compare, hash and add exactly with Fractions, and keys and
    sums of 10^5 ints are ~10-50x faster than of their Fractions."""
    return x if type(x) is int else exact(x, loc)


def number_out(q: Fraction) -> int | float:
    """An int when integral, else the float rounded to 9 decimals (docs/operators.md §1)."""
    if q.denominator == 1:
        return q.numerator
    try:
        return canon_float(float(q))
    except OverflowError:
        value_error("value", "result is too large for a JSON number", str(q))


# -- operands --------------------------------------------------------------------------------------------


def _list(x: Any, loc: str) -> list[Any]:
    if not isinstance(x, list):
        shape_error(loc, f"{loc} must be a list", x)
    return x


def _values(items: list[Any], field: str | None, loc: str) -> list[Any]:
    """The elements themselves (the very list: no fn mutates it), or with ``field`` each element's value
    of that key."""
    if field is None:
        return items
    out = []
    for i, it in enumerate(items):
        if not isinstance(it, dict) or field not in it:
            value_error("field", f"{loc}[{i}] is not an object with the key {field!r}", it)
        out.append(it[field])
    return out


def _numbers(values: list[Any], loc: str) -> list[Fraction]:
    return [exact(v, f"{loc}[{i}]") for i, v in enumerate(values)]


def _a_and_b(args: dict[str, Any], fn: str) -> tuple[Any, Any]:
    """The two operands: ``a`` and ``b``, or ``input = [a, b]``."""
    a, b, pair = args.get("a"), args.get("b"), args.get("input")
    if a is not None or b is not None:
        if a is None or b is None:
            shape_error("a" if a is None else "b", f"compute {fn} needs both a and b")
        if pair is not None:
            value_error("input", f"compute {fn}: give either a and b, or input = [a, b]", pair)
        return a, b
    if not isinstance(pair, list) or len(pair) != 2:
        shape_error("a", f"compute {fn} needs a and b (or input = [a, b])", pair)
    return pair[0], pair[1]


# -- the fns ---------------------------------------------------------------------------------------------


_INT = frozenset({int})


def order_stats(values: list[Any], ranks: list[int], loc: str) -> list[Fraction]:
    """The exact values at the 0-based ``ranks`` of the ascending order of ``values`` (numbers, checked
    as :func:`exact` checks them, the first bad one reported).

    Only the picked values become Fractions: Python compares ints and floats exactly, and a float's exact
    value (its canonical decimal, ``round(x, 9)``) is monotone in it, so an ascending order of the raw
    numbers is an ascending order of their exact values (values it may swap are exactly equal). A list
    of ints that fit int64 is ordered by numpy's partition: a median of 10^6 in tens of milliseconds
    instead of seconds of Fraction sorting."""
    column = int_array(values)  # a list the executor read from an int64 column: that column
    if column is None and list_kinds(values) <= _INT:  # bool is not int here; a C-level pass (remembered)
        with suppress(OverflowError):  # an int past int64: sorted as Python ints below
            column = np.fromiter(values, np.int64, len(values))
    if column is not None:  # np.partition copies: the column stays as it is
        picked = np.partition(column, ranks)[ranks] if ranks else column[:0]
        return [Fraction(int(v)) for v in picked]
    for i, v in enumerate(values):
        if type(v) is not int:
            exact(v, f"{loc}[{i}]")  # a number, finite
    ordered = sorted(values)
    return [exact(ordered[r], loc) for r in ranks]


def median_of(values: list[Any], loc: str) -> Fraction | None:
    """The median of numbers (the mean of the middle two of an even count; None if empty)."""
    n = len(values)
    if not n:
        return None
    if n % 2:
        return order_stats(values, [n // 2], loc)[0]
    lo, hi = order_stats(values, [n // 2 - 1, n // 2], loc)
    return (lo + hi) / 2


_REDUCE: dict[str, Callable[[list[Fraction]], Fraction]] = {
    "sum": lambda xs: sum(xs, Fraction(0)),
    "min": min,
    "max": max,
    "mean": lambda xs: sum(xs, Fraction(0)) / len(xs),
}


def _reduce(fn: str, args: dict[str, Any], field: str | None) -> Result:
    values = _values(_list(args.get("input"), "input"), field, "input")
    if fn == "count":
        return len(values), []
    if fn == "median":  # an order statistic: no Fraction per element
        got = median_of(values, "input")
        return (None if got is None else number_out(got)), []
    nums = _numbers(values, "input")
    if not nums and fn != "sum":
        return None, []  # min/max/mean/median of nothing
    return number_out(_REDUCE[fn](nums)), []


def natural_key(v: Any) -> tuple[Any, ...]:
    """A tie-break key: numbers by value, then strings in natural order (digit runs by their number, so
    "n9" < "n10"; equal runs fall back to the plain string), then anything else by canonical JSON."""
    if is_number(v):
        return (0, exact_num(v, "tie_by"))
    if isinstance(v, str):
        runs = tuple((0, int(r), "") if r[0].isdecimal() else (1, 0, r) for r in _RUNS.findall(v))
        return (1, runs, v)
    return (2, dumps(v))


_RUNS = re.compile(r"\d+|\D+")


def _k(args: dict[str, Any], n: int) -> int:
    """topk's k: the literal k (default 10), or ⌈fraction · n⌉ (at least 1 of a non-empty input)."""
    k, fraction = args.get("k"), args.get("fraction")
    if k is not None and fraction is not None:
        value_error("fraction", "give k or fraction, not both", fraction)
    if fraction is not None:
        if not is_number(fraction):
            shape_error("fraction", "fraction must be a number", fraction)
        f = exact(fraction, "fraction")
        if not 0 < f <= 1:
            value_error("fraction", "fraction must lie in (0, 1] (0.01 = the top 1%)", fraction)
        # any number of rows: they are compute's own result, paged like any other ("fraction: 1" sorts)
        return max(1, math.ceil(f * n)) if n else 0
    if k is None:
        return DEFAULT_K
    if not isinstance(k, int) or isinstance(k, bool):
        shape_error("k", "k must be an integer", k)
    if not 1 <= k <= MAX_K:
        value_error("k", f"k must lie in [1, {MAX_K}]", k)
    return k


def _topk(args: dict[str, Any], field: str | None) -> Result:
    items = _list(args.get("input"), "input")
    values = _values(items, field, "input")
    k = _k(args, len(items))
    order, tie_by = args.get("order"), args.get("tie_by")
    if order is not None and not isinstance(order, str):  # a wrong JSON type, as everywhere: E_SCHEMA
        shape_error("order", "order must be the string desc or asc", order)
    if order is not None and order not in ("desc", "asc"):
        value_error("order", "order must be desc (the greatest first) or asc (the least first)", order)
    if tie_by is not None and not isinstance(tie_by, str):
        shape_error("tie_by", "tie_by must be a field name", tie_by)
    nums = _numbers(values, "input")
    sign = 1 if order == "asc" else -1
    ties = None
    if tie_by is not None:
        ties = []
        for i, it in enumerate(items):
            if not isinstance(it, dict) or tie_by not in it:
                value_error("tie_by", f"input[{i}] is not an object with the key {tie_by!r}", it)
            ties.append(natural_key(it[tie_by]))
    # stable: without tie_by, ties keep input order; with it, by its value in natural order, then input
    chosen = sorted(range(len(items)), key=lambda i: (sign * nums[i], ties[i] if ties else ()))
    rows = [items[i] for i in chosen[:k]]
    return len(rows), rows


def _equal(x: Any, y: Any) -> bool:
    if is_number(x) and is_number(y):
        return exact(x, "input") == exact(y, "value")
    return dumps(x) == dumps(y)  # canonical JSON equality: a string never equals a number


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda p, q: p < q,
    "<=": lambda p, q: p <= q,
    ">": lambda p, q: p > q,
    ">=": lambda p, q: p >= q,
}


def _holds(x: Any, cmp: str, y: Any) -> bool:
    if cmp == "==":
        return _equal(x, y)
    if cmp == "!=":
        return not _equal(x, y)
    if is_number(x) and is_number(y):
        return _ORDER[cmp](exact(x, "input"), exact(y, "value"))
    if isinstance(x, str) and isinstance(y, str):
        return _ORDER[cmp](x, y)  # code-point order
    value_error("cmp", f"cannot order {_show(x)} and {_show(y)} with {cmp} (two numbers or two strings)", x)


def _kept(x: Any, cmp: str, y: Any) -> bool:
    """filter's test of one row: as :func:`_holds`, except that an ordering with a null side keeps no row
    (SQL's rule, and ``where``'s: a lag's first row or a left join's unmatched one is dropped, not an
    error); ``==`` / ``!=`` compare null as a value."""
    if cmp not in ("==", "!=") and (x is None or y is None):
        return False
    return _holds(x, cmp, y)


def _cmp_arg(args: dict[str, Any], fn: str, *, with_value: bool) -> str:
    cmp = args.get("cmp")
    if cmp is not None and not isinstance(cmp, str):
        shape_error("cmp", "cmp must be a string", cmp)
    needs = "cmp and value (or other)" if with_value else "cmp"
    if cmp is None or (with_value and args.get("value") is None):
        shape_error("cmp" if cmp is None else "value", f"compute {fn} needs {needs}")
    cmp = CMP_ALIASES.get(cmp, cmp)
    if cmp not in CMPS:
        value_error("cmp", f"cmp must be one of {list(CMPS)} (or {sorted(CMP_ALIASES)})", cmp)
    return cmp


def _filter_fields(
    args: dict[str, Any], items: list[Any], values: list[Any], field: str | None, other: Any
) -> Result:
    """filter with ``other``: each element's ``field`` against its own ``other`` field (``where``'s
    field-vs-field test, for rows a plan computed)."""
    if not isinstance(other, str):
        shape_error("other", "other must be a field name", other)
    if args.get("value") is not None:
        value_error("other", "give value or other, not both", other)
    cmp = _cmp_arg(args, "filter", with_value=False)
    if field is None:
        value_error("other", "other compares two fields of each element: give field too", other)
    rows = []
    for i, (it, v) in enumerate(zip(items, values, strict=True)):
        if other not in it:
            value_error("other", f"input[{i}] is not an object with the key {other!r}", it)
        if _kept(v, cmp, it[other]):
            rows.append(it)
    return len(rows), rows


def _compare(args: dict[str, Any]) -> Result:
    """``a cmp b`` as true/false: a yes/no question's answer from two scalars."""
    a, b = _a_and_b(args, "compare")
    return _holds(a, _cmp_arg(args, "compare", with_value=False), b), []


def _filter_nulls(args: dict[str, Any], items: list[Any], field: str | None) -> Result:
    """filter ``cmp: exists`` / ``missing``: the elements whose value (with ``field``: whose value of that
    key, a row without the key counting as null, as a left join's unmatched row) is non-null / null."""
    cmp = args["cmp"]
    for name in ("value", "other"):
        if args.get(name) is not None:
            value_error(name, f"cmp {cmp} tests for null: it takes no {name}", args[name])
    want = cmp == "exists"
    if field is None:
        rows = [it for it in items if (it is not None) is want]
    else:
        rows = []
        for i, it in enumerate(items):
            if not isinstance(it, dict):
                value_error("field", f"input[{i}] is not an object", it)
            if (it.get(field) is not None) is want:
                rows.append(it)
    return len(rows), rows


def _filter(args: dict[str, Any], field: str | None) -> Result:
    items = _list(args.get("input"), "input")
    if args.get("cmp") in NULL_TESTS:
        return _filter_nulls(args, items, field)
    values = _values(items, field, "input")
    target, other = args.get("value"), args.get("other")
    if other is not None:
        return _filter_fields(args, items, values, field, other)
    cmp = _cmp_arg(args, "filter", with_value=True)
    rows = [it for it, v in zip(items, values, strict=True) if _kept(v, cmp, target)]
    return len(rows), rows


#: the 13 Allen relations of A = [as, ae) to B = [bs, be), as in docs/operators.md §12 (exactly one holds)
ALLEN: dict[str, Callable[[int, int, int, int], bool]] = {
    "before": lambda as_, ae, bs, be: ae < bs,
    "after": lambda as_, ae, bs, be: be < as_,
    "meets": lambda as_, ae, bs, be: ae == bs,
    "met_by": lambda as_, ae, bs, be: be == as_,
    "overlaps": lambda as_, ae, bs, be: as_ < bs < ae < be,
    "overlapped_by": lambda as_, ae, bs, be: bs < as_ < be < ae,
    "starts": lambda as_, ae, bs, be: as_ == bs and ae < be,
    "started_by": lambda as_, ae, bs, be: as_ == bs and be < ae,
    "during": lambda as_, ae, bs, be: bs < as_ and ae < be,
    "contains": lambda as_, ae, bs, be: as_ < bs and be < ae,
    "finishes": lambda as_, ae, bs, be: ae == be and bs < as_,
    "finished_by": lambda as_, ae, bs, be: ae == be and as_ < bs,
    "equals": lambda as_, ae, bs, be: as_ == bs and ae == be,
}


def allen_relation(a: tuple[int, int], b: tuple[int, int]) -> str:
    (holds,) = [name for name, rel in ALLEN.items() if rel(a[0], a[1], b[0], b[1])]
    return holds


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _interval(x: Any, loc: str) -> tuple[int, int]:
    """An instant t (= [t, t+1)), [s, e], {vt_s, vt_e} or {t_a, t_b}; ints with s < e."""
    if _is_int(x):
        return x, x + 1
    if isinstance(x, list) and len(x) == 2:
        s, e = x
    elif isinstance(x, dict) and "vt_s" in x and "vt_e" in x:
        s, e = x["vt_s"], x["vt_e"]
    elif isinstance(x, dict) and "t_a" in x and "t_b" in x:
        s, e = x["t_a"], x["t_b"]
    else:
        value_error(loc, f"{loc} must be an instant, [s, e], {{vt_s, vt_e}} or {{t_a, t_b}}", x)
    if not (_is_int(s) and _is_int(e) and s < e):
        value_error(loc, f"{loc} must be a non-empty half-open interval [s, e) of ints", x)
    return s, e


def _interval_relation(args: dict[str, Any]) -> Result:
    a, b = _a_and_b(args, "interval_relation")
    return allen_relation(_interval(a, "a"), _interval(b, "b")), []


def _pairwise(fn: str, args: dict[str, Any]) -> Result:
    a, b = _a_and_b(args, fn)
    p, q = exact(a, "a"), exact(b, "b")
    if fn == "diff":
        return number_out(p - q), []
    if fn == "add":
        return number_out(p + q), []
    if fn == "mul":
        return number_out(p * q), []
    if q == 0:
        return None, []  # a ratio with denominator 0 is null in compute
    if fn == "ratio":
        return number_out(p / q), []
    if fn == "percent":
        return number_out(100 * p / q), []
    return number_out(100 * (p - q) / q), []  # pct_change: change of a relative to the baseline b


def _set_members(x: Any, field: str | None, loc: str) -> tuple[set[str], set[Fraction]]:
    strings: set[str] = set()
    numbers: set[Fraction] = set()
    for i, v in enumerate(_values(x, field, loc)):
        if isinstance(v, str):
            strings.add(v)
        elif is_number(v):
            numbers.add(exact(v, f"{loc}[{i}]"))
        else:
            value_error(f"{loc}[{i}]", f"set elements must be strings or numbers, not {_show(v)}", v)
    return strings, numbers


def _set_op(fn: str, args: dict[str, Any], field: str | None) -> Result:
    a, b = _a_and_b(args, fn)
    if not isinstance(a, list) or not isinstance(b, list):
        bad = "a" if not isinstance(a, list) else "b"
        shape_error(bad, f"compute {fn} needs two lists", a if bad == "a" else b)
    sa, na = _set_members(a, field, "a")
    sb, nb = _set_members(b, field, "b")
    if (sa or sb) and (na or nb):
        value_error("a", f"compute {fn}: cannot mix strings and numbers", None)
    combine: dict[str, Callable[[set[Any], set[Any]], set[Any]]] = {
        "union": lambda x, y: x | y,
        "intersection": lambda x, y: x & y,
        "difference": lambda x, y: x - y,
    }
    if sa or sb:
        rows: list[Any] = sorted(combine[fn](sa, sb))
    else:
        rows = [number_out(q) for q in sorted(combine[fn](na, nb))]
    return len(rows), rows


def _record(args: dict[str, Any]) -> Result:
    """One row of named single values (a tuple answer: "how many sent, how many received"); value = 1."""
    fields = args.get("fields")
    if not isinstance(fields, dict) or not fields:
        # {} reads as missing: the verifier checks a record whose parts are all refs with the refs left out
        shape_error("fields", "record needs fields: an object of 1..16 named single values", fields or None)
    if len(fields) > MAX_RECORD_FIELDS:
        value_error(
            "fields", f"a record has at most {MAX_RECORD_FIELDS} parts, got {len(fields)}", len(fields)
        )
    row: dict[str, Any] = {}
    for name, v in fields.items():
        if not RECORD_NAME.match(name):
            value_error("fields", f"part name {name!r} must match [A-Za-z_][A-Za-z0-9_]* (<= 64 chars)", name)
        if isinstance(v, (list, dict)):
            value_error(
                f"fields.{name}",
                "a record's parts are single values (a number, string, boolean or null): reduce a list "
                f"first (count, sum, max ...), got {_show(v)}",
                v,
            )
        row[name] = number_out(exact(v, f"fields.{name}")) if is_number(v) else v
    return 1, [row]


def evaluate(args: dict[str, Any]) -> Result:
    """``(value, rows)`` of a compute call given as a plain dict; argument errors raise ValidationError."""
    unknown = sorted(set(args) - {"fn", *FN_ARGS, *COMMON}, key=str)  # a YAML key may be a boolean
    if unknown:
        _fail("extra_forbidden", unknown[0], f"unknown argument(s) {unknown}", args[unknown[0]])
    fn = args.get("fn")
    if fn is None:
        shape_error("fn", "missing required argument fn")
    if not isinstance(fn, str):
        shape_error("fn", "fn must be a string", fn)
    if fn not in TAKES:
        value_error("fn", f"fn must be one of {list(FNS)}{instead_of_fn(fn)}", fn)
    extra = sorted(k for k in FN_ARGS if args.get(k) is not None and k not in TAKES[fn])
    if extra:
        value_error(extra[0], f"compute {fn} does not take {extra} (it takes {list(TAKES[fn])})", extra)
    field = args.get("field")
    if field is not None and not isinstance(field, str):
        shape_error("field", "field must be a string", field)
    if fn in REDUCERS:
        return _reduce(fn, args, field)
    if fn == "topk":
        return _topk(args, field)
    if fn == "filter":
        return _filter(args, field)
    if fn == "interval_relation":
        return _interval_relation(args)
    if fn == "compare":
        return _compare(args)
    if fn in PAIRWISE:
        return _pairwise(fn, args)
    if fn == "record":
        return _record(args)
    if fn in ROW_FNS:
        from tgms.engine.operators.compute_rows import evaluate_rows  # it builds on this module's helpers

        return evaluate_rows(fn, args)
    if fn in GROUP_FNS:
        from tgms.engine.operators.compute_group import evaluate_group  # it builds on this module's helpers

        return evaluate_group(fn, args, field)
    return _set_op(fn, args, field)
