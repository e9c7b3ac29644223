"""compute's grouping fns (issue 27): ``group`` (GROUP BY over rows), ``rolling`` (a window of rows
around each row), the ``quantile`` reducer and ``distinct``. Semantics: ``docs/operators.md`` §14.

- ``quantile``: nearest rank, the definition ``next_event``'s ``delay_quantile`` uses (§21): of the n values
  sorted ascending, the ``max(1, ceil(q·n))``-th smallest, ``q·n`` computed exactly from the decimal ``q``
  (``0.9 · 10`` is 9); ``q = 0`` is the least value, ``q = 1`` the greatest; null on an empty input.
- ``distinct``: the distinct values, ascending, as the set ops give them (strings or numbers, not mixed;
  numbers by exact value); null elements are skipped.
- ``group``: one row per distinct value of the ``by`` field(s) — the key fields, then one field per
  aggregate — in key order (each key ascending in :func:`~engine.operators.compute_fns.natural_key`'s
  order, null last), or by ``order_by``. Numeric aggregates read the numbers among the field's values and
  skip the rest, as ``aggregate_events`` does (§16).
- ``rolling``: SQL's ``agg(...) OVER (PARTITION BY by ROWS BETWEEN lo AND hi)``: every input row, in input
  order, with each aggregate over the rows at offsets ``frame = [lo, hi]`` from it among the rows of its
  ``by`` partition (all rows without ``by``), in input order. A frame cut by the partition's ends holds
  the rows there are; an empty one gives count 0, sum 0, and null for the rest (``[-1, -1]`` with
  ``last`` is the previous row's value: a lag).

Argument errors are raised through :mod:`engine.operators.compute_fns`' helpers, so the args model reports
them like its own field errors.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from tgms.engine.operators.compute_fns import (
    Result,
    _fail,
    _show,
    _values,
    exact,
    is_number,
    median_of,
    natural_key,
    number_out,
    order_stats,
    shape_error,
    value_error,
)
from tgms.engine.operators.compute_group_fast import fast_rows
from tgms.engine.operators.compute_instead import instead_of_aggregate
from tgms.engine.operators.compute_rolling import partition_values

#: group's aggregates: count; the distinct non-null values; numeric ones over the field's numbers; the
#: field's value at the group's first / last row in input order
NUMERIC_AGGS = ("sum", "min", "max", "mean", "median", "quantile")
GROUP_AGGS = ("count", "count_distinct", *NUMERIC_AGGS, "first", "last")
AGG_KEYS = ("fn", "field", "as", "q")
ORDER_KEYS = ("field", "desc")
MAX_BY = 3
MAX_AGGREGATES = 16
MAX_ORDER_BY = 8
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Key = tuple[Any, ...]


# -- quantile --------------------------------------------------------------------------------------------


def quantile_q(raw: Any, loc: str) -> Fraction:
    """``q`` as an exact fraction in [0, 1]: a missing or non-number q is E_SCHEMA, one outside is
    E_INVALID_ARG."""
    if raw is None:
        shape_error(loc, "quantile needs q, a number in [0, 1] (0.9 = the 90th percentile)")
    if not is_number(raw):
        shape_error(loc, "q must be a number in [0, 1]", raw)
    q = exact(raw, loc)
    if not 0 <= q <= 1:
        value_error(loc, "q must lie in [0, 1] (0.9 = the 90th percentile)", raw)
    return q


def nearest_rank(xs: list[Any], q: Fraction, loc: str = "input") -> Fraction | None:
    """The ``max(1, ceil(q·n))``-th smallest of the n numbers (null when there are none)."""
    if not xs:
        return None
    rank = max(1, math.ceil(q * len(xs)))
    return order_stats(xs, [rank - 1], loc)[0]


def _quantile(args: dict[str, Any], field: str | None) -> Result:
    q = quantile_q(args.get("q"), "q")
    items = args.get("input")
    if not isinstance(items, list):
        shape_error("input", "input must be a list", items)
    got = nearest_rank(_values(items, field, "input"), q)
    return (None if got is None else number_out(got)), []


# -- distinct --------------------------------------------------------------------------------------------


def _distinct(args: dict[str, Any], field: str | None) -> Result:
    items = args.get("input")
    if not isinstance(items, list):
        shape_error("input", "input must be a list", items)
    strings: set[str] = set()
    numbers: set[Fraction] = set()
    for i, v in enumerate(_values(items, field, "input")):
        if v is None:
            continue
        if isinstance(v, str):
            strings.add(v)
        elif is_number(v):
            numbers.add(exact(v, f"input[{i}]"))
        else:
            value_error(f"input[{i}]", f"distinct values are strings or numbers, not {_show(v)}", v)
        if strings and numbers:
            value_error(f"input[{i}]", "compute distinct: cannot mix strings and numbers", v)
    rows: list[Any] = sorted(strings) if strings else [number_out(q) for q in sorted(numbers)]
    return len(rows), rows


# -- group: the arguments ----------------------------------------------------------------------------------


def _by(raw: Any) -> list[str]:
    if raw is None:
        shape_error("by", "compute group needs by: a field name or a list of 1..3 field names")
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        shape_error("by", "by must be a field name or a list of field names", raw)
    if not 1 <= len(names) <= MAX_BY:
        value_error("by", f"by names 1..{MAX_BY} key fields", raw)
    if len(set(names)) != len(names):
        value_error("by", "by names a key field twice", raw)
    return names


def _default_name(fn: str, field: str | None) -> str:
    return fn if field is None else f"{fn}_" + re.sub(r"[^A-Za-z0-9_]", "_", field)


Agg = tuple[str, str | None, str, Fraction | None]  # fn, field, name, q


def _aggregate(i: int, spec: Any) -> Agg:
    at = f"aggregates.{i}"
    if not isinstance(spec, dict):
        shape_error(at, "an aggregate is an object {fn, field?, as?, q?}", spec)
    extra = sorted(set(spec) - set(AGG_KEYS))
    if extra:
        _fail("extra_forbidden", f"{at}.{extra[0]}", f"unknown key(s) {extra} in an aggregate {{fn, field?, "
              "as?, q?}", spec[extra[0]])  # fmt: skip
    fn, field, name, q = spec.get("fn"), spec.get("field"), spec.get("as"), spec.get("q")
    if fn is None:
        shape_error(f"{at}.fn", "an aggregate needs fn")
    if not isinstance(fn, str):
        shape_error(f"{at}.fn", "fn must be a string", fn)
    if fn not in GROUP_AGGS:
        value_error(
            f"{at}.fn", f"an aggregate's fn must be one of {list(GROUP_AGGS)}{instead_of_aggregate(fn)}", fn
        )
    if field is not None and not isinstance(field, str):
        shape_error(f"{at}.field", "field must be a field name", field)
    if name is not None and not isinstance(name, str):
        shape_error(f"{at}.as", "as must be a string", name)
    if fn != "count" and field is None:
        value_error(f"{at}.field", f"aggregate {fn} needs field", None)
    if fn != "quantile" and q is not None:
        value_error(f"{at}.q", f"only quantile takes q, not {fn}", q)
    if fn == "quantile" and q is None:
        value_error(f"{at}.q", "quantile needs q, a number in [0, 1]", None)
    fraction = quantile_q(q, f"{at}.q") if fn == "quantile" else None
    out = name if name is not None else _default_name(fn, field)
    if not NAME.match(out):
        value_error(f"{at}.as" if name is not None else f"{at}.field",
                    f"aggregate name {out!r} must match [A-Za-z_][A-Za-z0-9_]* (give as)", out)  # fmt: skip
    return fn, field, out, fraction


def _aggregates(raw: Any, keys: list[str]) -> list[Agg]:
    specs = [{"fn": "count"}] if raw is None else raw
    if not isinstance(specs, list):
        shape_error("aggregates", "aggregates must be a list of {fn, field?, as?, q?}", specs)
    if not 1 <= len(specs) <= MAX_AGGREGATES:
        value_error("aggregates", f"aggregates holds 1..{MAX_AGGREGATES} aggregates", len(specs))
    aggs = [_aggregate(i, s) for i, s in enumerate(specs)]
    seen = set(keys)
    for i, (_, _, name, _) in enumerate(aggs):
        if name in seen:
            what = "a key field" if name in keys else "another aggregate"
            value_error(f"aggregates.{i}", f"aggregate name {name!r} is also {what}'s: give as", name)
        seen.add(name)
    return aggs


def _order_by(raw: Any, fields: list[str]) -> list[tuple[str, bool]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        shape_error("order_by", "order_by must be a list of {field, desc?}", raw)
    if len(raw) > MAX_ORDER_BY:
        value_error("order_by", f"order_by holds at most {MAX_ORDER_BY} fields", len(raw))
    out = []
    for i, it in enumerate(raw):
        at = f"order_by.{i}"
        if not isinstance(it, dict):
            shape_error(at, "an order_by entry is an object {field, desc?}", it)
        extra = sorted(set(it) - set(ORDER_KEYS))
        if extra:
            _fail("extra_forbidden", f"{at}.{extra[0]}", f"unknown key(s) {extra} in {{field, desc?}}", it)
        field, desc = it.get("field"), it.get("desc")
        if not isinstance(field, str):
            shape_error(f"{at}.field", "order_by needs field, a field name", field)
        if desc is not None and not isinstance(desc, bool):
            shape_error(f"{at}.desc", "desc must be true or false", desc)
        if field not in fields:
            value_error(
                f"{at}.field", f"order_by field {field!r} is not one of the group's fields {fields}", field
            )
        out.append((field, bool(desc)))
    return out


def group_fields(args: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The fields of every row a group call gives (key fields, then aggregate names), or None when its
    ``by``/``aggregates`` are not literal and valid (the plan verifier reads rows' fields from here)."""
    if args.get("fn") != "group":
        return None
    try:
        keys = _by(args.get("by"))
        aggs = _aggregates(args.get("aggregates"), keys)
    except ValueError:  # pydantic's ValidationError: not a literal, valid group
        return None
    return (*keys, *(a[2] for a in aggs))


def aggregate_names(args: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The names of a group's or rolling's aggregates, or None when its ``by``/``aggregates`` are not
    literal and valid."""
    try:
        by = args.get("by")
        keys = [] if by is None and args.get("fn") == "rolling" else _by(by)
        return tuple(a[2] for a in _aggregates(args.get("aggregates"), keys))
    except ValueError:  # pydantic's ValidationError
        return None


# -- group: the rows ----------------------------------------------------------------------------------------


def _key_part(v: Any) -> Key:
    """One key value's identity and place: numbers by exact value, strings in natural order, then the
    rest by canonical JSON (natural_key); null its own group, last."""
    return (1,) if v is None else (0, natural_key(v))


def _out(v: Any) -> Any:
    return number_out(exact(v, "input")) if is_number(v) else v


def _value(fn: str, q: Fraction | None, values: list[Any]) -> Any:
    if fn == "count":  # the rows (no field: values are the rows) or a field's non-null values (SQL COUNT(x))
        return len(values) - values.count(None)
    if fn == "count_distinct":
        return len({natural_key(v) for v in values if v is not None})
    if fn in ("first", "last"):  # an empty rolling frame has neither
        return _out(values[0] if fn == "first" else values[-1]) if values else None
    raw = [v for v in values if is_number(v)]  # anything else is skipped
    if not raw:
        return 0 if fn == "sum" else None
    if fn in ("quantile", "median"):  # order statistics: no Fraction per value
        got = nearest_rank(raw, q) if q is not None else median_of(raw, "input")
        assert got is not None
        return number_out(got)
    if all(type(v) is int for v in raw):  # exact as they are: no Fraction per value
        if fn == "sum":
            return sum(raw)
        if fn == "mean":
            return number_out(Fraction(sum(raw), len(raw)))
        return min(raw) if fn == "min" else max(raw)
    nums = [exact(v, "input") for v in raw]
    if fn == "sum":
        return number_out(sum(nums, Fraction(0)))
    if fn == "mean":
        return number_out(sum(nums, Fraction(0)) / len(nums))
    return number_out(min(nums) if fn == "min" else max(nums))


def _sort(rows: list[dict[str, Any]], order: list[tuple[str, bool]]) -> list[dict[str, Any]]:
    """Stable passes, the last order_by field first: each ascending or descending in natural order, nulls
    last either way; rows equal on every order_by field keep the key order they came in."""
    for name, desc in reversed(order):
        present = [r for r in rows if r[name] is not None]
        present.sort(key=lambda r: natural_key(r[name]), reverse=desc)  # reverse=True is stable too
        rows = present + [r for r in rows if r[name] is None]
    return rows


def _group(args: dict[str, Any]) -> Result:
    keys = _by(args.get("by"))
    aggs = _aggregates(args.get("aggregates"), keys)
    order = _order_by(args.get("order_by"), [*keys, *(a[2] for a in aggs)])
    items = args.get("input")
    if not isinstance(items, list):
        shape_error("input", "input must be a list", items)
    rows = fast_rows(items, keys, aggs, _key_part, _value, _out)
    if rows is None:
        rows = general_rows(items, keys, aggs)
    rows = _sort(rows, order)
    return len(rows), rows


def general_rows(items: list[Any], keys: list[str], aggs: list[Agg]) -> list[dict[str, Any]]:
    """The group's rows in key order, row by row: any input (the vectorized path's fallback, and the
    reference it is tested against); every bad row is reported here, the first one in input order."""
    needed = list(dict.fromkeys([*keys, *(a[1] for a in aggs if a[1] is not None)]))
    groups: dict[Key, list[dict[str, Any]]] = {}
    memo: dict[str, Key] = {}

    def part(v: Any) -> Key:
        """A key value's part, a string's computed once (its natural order splits it into runs)."""
        if type(v) is not str:
            return _key_part(v)
        got = memo.get(v)
        if got is None:
            got = memo[v] = _key_part(v)
        return got

    for i, row in enumerate(items):
        if not isinstance(row, dict):
            value_error(f"input[{i}]", f"input[{i}] is not an object", row)
        for f in needed:  # a number must be finite wherever it is read (an int always is)
            if type(row.get(f)) is float:
                exact(row[f], f"input[{i}]")
        # a field a row lacks is null, as in derive (a left join's rows hold no b field when b was empty)
        groups.setdefault(tuple(part(row.get(k)) for k in keys), []).append(row)
    rows = []
    for key in sorted(groups):
        members = groups[key]
        out = {k: _out(members[0].get(k)) for k in keys}
        for fn, field, name, q in aggs:
            out[name] = _value(fn, q, [m.get(field) for m in members] if field is not None else members)
        rows.append(out)
    return rows


# -- rolling ------------------------------------------------------------------------------------------------

#: the farthest offset a rolling frame's numbered side reaches (rows before or after)
MAX_FRAME = 10_000
#: a side written null (unbounded, SQL's UNBOUNDED PRECEDING / FOLLOWING): past any partition's end, and
#: small enough that frame arithmetic on it stays inside int64
UNBOUNDED = 1 << 40


def rolling_frame(raw: Any) -> tuple[int, int]:
    """``frame`` as ``(lo, hi)``: two whole numbers, ``lo <= hi``, each within ``MAX_FRAME``, or null for
    an unbounded side (``[null, 0]``: a running total, however long the partition)."""
    if raw is None:
        shape_error("frame", "compute rolling needs frame: [lo, hi] row offsets around each row ([-6, 0]: "
                    "the row and the 6 before it; [-1, -1]: the previous row; [null, 0]: every row up to "
                    "it)")  # fmt: skip
    if not isinstance(raw, list) or len(raw) != 2 or not all(x is None or type(x) is int for x in raw):
        shape_error("frame", "frame must be [lo, hi]: two whole numbers, or null for an unbounded side", raw)
    lo, hi = raw
    if lo is not None and hi is not None and lo > hi:
        value_error("frame", f"frame [lo, hi] needs lo <= hi, got [{lo}, {hi}]", raw)
    if any(x is not None and abs(x) > MAX_FRAME for x in (lo, hi)):
        value_error("frame", f"a frame's numbered side reaches at most {MAX_FRAME} rows either way (null: "
                    "unbounded, [null, 0] a running total)", raw)  # fmt: skip
    return (-UNBOUNDED if lo is None else lo), (UNBOUNDED if hi is None else hi)


def rolling_reads(items: Any, by: Any, lo: int, hi: int) -> int:
    """How many (row, frame row) pairs a rolling call reads: each row's frame clipped to its ``by``
    partition (the cost of a running sum is its partitions' sizes, not the input's length times the
    frame's width). Keys are read as given (1 and 1.0, or true and 1, fall together: more, never fewer,
    reads than the call makes); input that is not a list of objects is priced as one partition."""
    n = len(items) if isinstance(items, list) else 0
    keys = [by] if isinstance(by, str) else list(by) if isinstance(by, list) else []
    sizes: Counter[int] = Counter()
    try:
        if not keys or not all(isinstance(r, dict) for r in items):
            raise TypeError
        sizes.update(Counter(tuple(r.get(k) for k in keys) for r in items).values())
    except TypeError:  # no partitions, or a key that is not hashable: one partition
        sizes = Counter({n: 1}) if n else Counter()
    total = 0
    for p, times in sizes.items():
        pos = np.arange(p)
        width = np.clip(pos + hi + 1, 0, p) - np.clip(pos + lo, 0, p)
        total += int(np.maximum(width, 0).sum()) * times
    return total


def _rolling(args: dict[str, Any]) -> Result:
    lo, hi = rolling_frame(args.get("frame"))
    keys = [] if args.get("by") is None else _by(args.get("by"))
    aggs = _aggregates(args.get("aggregates"), keys)
    items = args.get("input")
    if not isinstance(items, list):
        shape_error("input", "input must be a list", items)
    needed = list(dict.fromkeys([*keys, *(a[1] for a in aggs if a[1] is not None)]))
    partitions: dict[Key, list[int]] = {}
    for i, row in enumerate(items):
        if not isinstance(row, dict):
            value_error(f"input[{i}]", f"input[{i}] is not an object", row)
        for j, (_, _, name, _) in enumerate(aggs):
            if name in row:
                value_error(f"aggregates.{j}", f"aggregate name {name!r} is also a field of input[{i}]: give "
                            "as", name)  # fmt: skip
        for f in needed:  # a number must be finite wherever it is read (an int always is)
            if type(row.get(f)) is float:
                exact(row[f], f"input[{i}]")
        partitions.setdefault(tuple(_key_part(row.get(k)) for k in keys), []).append(i)  # lacking: null
    out: list[Any] = [None] * len(items)
    for members in partitions.values():
        rows = [items[m] for m in members]
        # an aggregate computed for the whole partition at once where that is exact (compute_rolling)
        fast = [partition_values(fn, field, rows, lo, hi, _out) for fn, field, _, _ in aggs]
        for pos, i in enumerate(members):
            frame = rows[max(0, pos + lo) : max(0, pos + hi + 1)]
            row = dict(items[i])
            for (fn, field, name, q), vec in zip(aggs, fast, strict=True):
                if vec is not None:
                    row[name] = vec[pos]
                else:
                    row[name] = _value(fn, q, [m.get(field) for m in frame] if field is not None else frame)
            out[i] = row
    return len(out), out


def evaluate_group(fn: str, args: dict[str, Any], field: str | None) -> Result:
    if fn == "quantile":
        return _quantile(args, field)
    if fn == "distinct":
        return _distinct(args, field)
    if fn == "rolling":
        return _rolling(args)
    return _group(args)
