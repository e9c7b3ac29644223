"""Oracle of compute's group, quantile and distinct (docs/operators.md §14), written apart from the fast
path (engine/operators/compute_group.py): plain loops, a first-seen list of groups, and sorts by explicit
comparison functions.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Any

from tgms.engine.canonical import dumps
from tgms.engine.errors import InvalidArgError, SchemaError
from tgms.engine.operators.oracle.store import is_int, is_number

AGG_FNS = ("count", "count_distinct", "sum", "min", "max", "mean", "median", "quantile", "first", "last")
NUMERIC = ("sum", "min", "max", "mean", "median", "quantile")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _frac(x: Any) -> Fraction:
    from tgms.engine.operators.oracle.compute import frac  # the oracle's own exact numbers

    return frac(x, "input")


def _out(q: Fraction) -> int | float:
    from tgms.engine.operators.oracle.compute import out_num

    return out_num(q)


def _natural(v: Any) -> tuple[Any, ...]:
    from tgms.engine.operators.oracle.compute import _natural as natural

    return natural(v)


def oracle_q(x: Any, name: str) -> Fraction:
    if x is None:
        raise SchemaError("quantile needs q", field=name)
    if not is_number(x):
        raise SchemaError("q must be a number", field=name, value=x)
    q = _frac(x)
    if q < 0 or q > 1:
        raise InvalidArgError("q must lie in [0, 1]", field=name, value=x)
    return q


def oracle_rank(values: list[Fraction], q: Fraction) -> Fraction | None:
    """Nearest rank: the least k >= 1 with k >= q·n; the k-th smallest value."""
    if not values:
        return None
    ordered = sorted(values)
    k = 1
    while k < q * len(ordered):
        k += 1
    return ordered[k - 1]


def oracle_quantile(vals: list[Any], q_raw: Any) -> Any:
    q = oracle_q(q_raw, "q")
    nums = []
    for v in vals:
        if not is_number(v):
            raise InvalidArgError(f"input value {v!r} is not a number", field="input")
        nums.append(_frac(v))
    got = oracle_rank(nums, q)
    return None if got is None else _out(got)


def oracle_distinct(vals: list[Any]) -> list[Any]:
    strings: list[str] = []
    numbers: list[Fraction] = []
    for i, v in enumerate(vals):
        if v is None:
            continue
        if isinstance(v, str):
            if v not in strings:
                strings.append(v)
        elif is_number(v):
            if _frac(v) not in numbers:
                numbers.append(_frac(v))
        else:
            raise InvalidArgError("distinct values are strings or numbers", field=f"input[{i}]", value=v)
    if strings and numbers:
        raise InvalidArgError("compute distinct: cannot mix strings and numbers", field="input")
    if strings:
        return sorted(strings)
    return [_out(q) for q in sorted(numbers)]


# -- group ---------------------------------------------------------------------------------------------------


def _same(x: Any, y: Any) -> bool:
    """Group-key and count_distinct identity: numbers by exact value, the rest by canonical JSON (so a
    boolean is never a number, and null only equals null)."""
    if is_number(x) and is_number(y):
        return _frac(x) == _frac(y)
    if is_number(x) or is_number(y):
        return False
    return bool(dumps(x) == dumps(y))


def _cmp_values(x: Any, y: Any) -> int:
    """Ascending natural order, null after everything."""
    if x is None or y is None:
        return (x is None) - (y is None)
    kx, ky = _natural(x), _natural(y)
    return -1 if kx < ky else (1 if kx > ky else 0)


def _check_by(by: Any) -> list[str]:
    if by is None:
        raise SchemaError("compute group needs by", field="by")
    if isinstance(by, str):
        return [by]
    if not isinstance(by, list) or any(not isinstance(b, str) for b in by):
        raise SchemaError("by must be a field name or a list of them", field="by", value=by)
    if len(by) < 1 or len(by) > 3:
        raise InvalidArgError("by names 1..3 fields", field="by", value=by)
    for i in range(len(by)):
        if by[i] in by[:i]:
            raise InvalidArgError("by repeats a field", field="by", value=by)
    return list(by)


def _check_aggs(aggs: Any, keys: list[str]) -> list[dict[str, Any]]:
    if aggs is None:
        aggs = [{"fn": "count"}]
    if not isinstance(aggs, list):
        raise SchemaError("aggregates must be a list", field="aggregates")
    if len(aggs) < 1 or len(aggs) > 16:
        raise InvalidArgError("aggregates holds 1..16 entries", field="aggregates")
    out: list[dict[str, Any]] = []
    names = list(keys)
    for i, a in enumerate(aggs):
        where = f"aggregates.{i}"
        if not isinstance(a, dict):
            raise SchemaError("an aggregate is an object", field=where)
        for key in a:
            if key not in ("fn", "field", "as", "q"):
                raise SchemaError(f"unknown key {key!r}", field=f"{where}.{key}")
        fn, field, name, q = a.get("fn"), a.get("field"), a.get("as"), a.get("q")
        if not isinstance(fn, str):
            raise SchemaError("an aggregate needs fn, a string", field=f"{where}.fn")
        if fn not in AGG_FNS:
            raise InvalidArgError(f"unknown aggregate {fn!r}", field=f"{where}.fn")
        if field is not None and not isinstance(field, str):
            raise SchemaError("field must be a string", field=f"{where}.field")
        if name is not None and not isinstance(name, str):
            raise SchemaError("as must be a string", field=f"{where}.as")
        if fn != "count" and field is None:
            raise InvalidArgError("every aggregate but count needs a field", field=f"{where}.field")
        if (fn == "quantile") != (q is not None):
            raise InvalidArgError("quantile, and only quantile, takes q", field=f"{where}.q")
        qq = oracle_q(q, f"{where}.q") if fn == "quantile" else None
        if name is None:
            name = fn if field is None else fn + "_" + "".join(c if c.isascii() and (c.isalnum() or c == "_")
                                                               else "_" for c in field)  # fmt: skip
        if not _NAME.fullmatch(name):
            raise InvalidArgError(f"bad aggregate name {name!r}", field=where)
        if name in names:
            raise InvalidArgError(f"aggregate name {name!r} is taken", field=where)
        names.append(name)
        out.append({"fn": fn, "field": field, "name": name, "q": qq})
    return out


def _check_order(order: Any, names: list[str]) -> list[tuple[str, bool]]:
    if order is None:
        return []
    if not isinstance(order, list):
        raise SchemaError("order_by must be a list", field="order_by")
    if len(order) > 8:
        raise InvalidArgError("order_by holds at most 8 entries", field="order_by")
    out = []
    for i, o in enumerate(order):
        if not isinstance(o, dict) or any(k not in ("field", "desc") for k in o):
            raise SchemaError("an order_by entry is {field, desc?}", field=f"order_by.{i}")
        if not isinstance(o.get("field"), str):
            raise SchemaError("order_by needs field", field=f"order_by.{i}.field")
        if o.get("desc") is not None and not isinstance(o.get("desc"), bool):
            raise SchemaError("desc must be a boolean", field=f"order_by.{i}.desc")
        if o["field"] not in names:
            raise InvalidArgError("order_by field is not a group field", field=f"order_by.{i}.field")
        out.append((o["field"], o.get("desc") is True))
    return out


def _aggregate(a: dict[str, Any], rows: list[dict[str, Any]]) -> Any:
    fn = a["fn"]
    if fn == "count" and a["field"] is None:
        return len(rows)
    vals = [r.get(a["field"]) for r in rows]  # a field a row lacks: null
    if fn == "count":  # SQL's COUNT(field)
        return sum(1 for v in vals if v is not None)
    if fn in ("first", "last") and not vals:  # an empty rolling frame
        return None
    if fn == "first":
        return _out(_frac(vals[0])) if is_number(vals[0]) else vals[0]
    if fn == "last":
        return _out(_frac(vals[-1])) if is_number(vals[-1]) else vals[-1]
    if fn == "count_distinct":
        seen: list[Any] = []
        for v in vals:
            if v is not None and not any(_same(v, s) for s in seen):
                seen.append(v)
        return len(seen)
    nums = [_frac(v) for v in vals if is_number(v)]
    if fn == "sum":
        total = Fraction(0)
        for x in nums:
            total += x
        return _out(total)
    if not nums:
        return None
    ordered = sorted(nums)
    if fn == "min":
        return _out(ordered[0])
    if fn == "max":
        return _out(ordered[-1])
    if fn == "mean":
        return _out(sum(nums, Fraction(0)) / len(nums))
    if fn == "median":
        n = len(ordered)
        return _out(ordered[n // 2] if n % 2 == 1 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2)
    got = oracle_rank(nums, a["q"])
    return None if got is None else _out(got)


def oracle_group(args: dict[str, Any]) -> list[dict[str, Any]]:
    keys = _check_by(args.get("by"))
    aggs = _check_aggs(args.get("aggregates"), keys)
    order = _check_order(args.get("order_by"), keys + [a["name"] for a in aggs])
    items = args.get("input")
    if not isinstance(items, list):
        raise SchemaError("input must be a list", field="input")
    groups: list[tuple[list[Any], list[dict[str, Any]]]] = []  # (key values of the first row, rows)
    for i, row in enumerate(items):
        if not isinstance(row, dict):
            raise InvalidArgError(f"input[{i}] is not an object", field=f"input[{i}]")
        values = [row.get(k) for k in keys]  # a field a row lacks: null, as in derive
        for key_values, members in groups:
            if all(_same(x, y) for x, y in zip(key_values, values, strict=True)):
                members.append(row)
                break
        else:
            groups.append((values, [row]))

    def by_key(g: tuple[list[Any], Any], h: tuple[list[Any], Any]) -> int:
        for x, y in zip(g[0], h[0], strict=True):
            c = _cmp_values(x, y)
            if c:
                return c
        return 0

    groups.sort(key=functools.cmp_to_key(by_key))
    out = []
    for rank, (key_values, members) in enumerate(groups):
        made: dict[str, Any] = {}
        for k, v in zip(keys, key_values, strict=True):
            made[k] = _out(_frac(v)) if is_number(v) else v
        for a in aggs:
            made[a["name"]] = _aggregate(a, members)
        out.append((rank, made))

    def by_order(p: tuple[int, dict[str, Any]], r: tuple[int, dict[str, Any]]) -> int:
        for name, desc in order:
            x, y = p[1][name], r[1][name]
            if x is None or y is None:
                c = _cmp_values(x, y)  # nulls last in either direction
            else:
                c = -_cmp_values(x, y) if desc else _cmp_values(x, y)
            if c:
                return c
        return p[0] - r[0]  # then key order

    out.sort(key=functools.cmp_to_key(by_order))
    return [row for _, row in out]


# -- rolling -------------------------------------------------------------------------------------------------


def _check_frame(frame: Any) -> tuple[float, float]:
    if frame is None:
        raise SchemaError("compute rolling needs frame", field="frame")
    if not isinstance(frame, list) or len(frame) != 2 or any(x is not None and not is_int(x) for x in frame):
        raise SchemaError("frame must be [lo, hi], two integers or null", field="frame", value=frame)
    lo, hi = frame
    for side in (lo, hi):
        if side is not None and not -10_000 <= side <= 10_000:
            raise InvalidArgError("a frame's side is within 10,000", field="frame", value=frame)
    if lo is not None and hi is not None and hi < lo:
        raise InvalidArgError("frame needs lo <= hi", field="frame", value=frame)
    # null: unbounded on that side (every row of the partition before, or after)
    return (-math.inf if lo is None else lo), (math.inf if hi is None else hi)


def oracle_rolling(args: dict[str, Any]) -> list[dict[str, Any]]:
    """Each row with its frame's aggregates: for row i, the rows j of i's partition whose position among
    the partition's rows differs from i's by an offset in [lo, hi], found by scanning every row."""
    lo, hi = _check_frame(args.get("frame"))
    keys = [] if args.get("by") is None else _check_by(args.get("by"))
    aggs = _check_aggs(args.get("aggregates"), keys)
    items = args.get("input")
    if not isinstance(items, list):
        raise SchemaError("input must be a list", field="input")
    for i, row in enumerate(items):
        if not isinstance(row, dict):
            raise InvalidArgError(f"input[{i}] is not an object", field=f"input[{i}]")
        for a in aggs:
            if a["name"] in row:
                raise InvalidArgError(f"aggregate {a['name']!r} is a field of input[{i}]", field="aggregates")

    def same_partition(x: dict[str, Any], y: dict[str, Any]) -> bool:
        return all(_same(x.get(k), y.get(k)) for k in keys)

    out = []
    for i, row in enumerate(items):
        mates = [j for j in range(len(items)) if same_partition(items[j], row)]
        me = mates.index(i)
        frame = [items[j] for p, j in enumerate(mates) if lo <= p - me <= hi]
        made = dict(row)
        for a in aggs:
            made[a["name"]] = _aggregate(a, frame)
        out.append(made)
    return out
