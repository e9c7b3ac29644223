"""Oracle of compute: the only place numbers are combined. Exact arithmetic throughout.

Numbers enter as their canonical decimal value (a float x is read as ``Fraction(repr(canon_float(x)))``, so
0.1 is exactly 1/10), are combined as ``Fraction``, and leave as an int when integral, else as a float
rounded to 9 decimals.
"""

from __future__ import annotations

import decimal
import itertools
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from tgms.engine.canonical import canon_float, canonicalize, dumps
from tgms.engine.errors import InvalidArgError, SchemaError
from tgms.engine.operators.oracle.compute_group import (
    oracle_distinct,
    oracle_group,
    oracle_q,
    oracle_quantile,
    oracle_rolling,
)
from tgms.engine.operators.oracle.evolution import allen
from tgms.engine.operators.oracle.store import (
    as_of_arg,
    check_keys,
    choice_arg,
    int_arg,
    is_int,
    is_number,
    str_arg,
)

REDUCERS = ("count", "sum", "min", "max", "mean", "median")
PAIRWISE = ("ratio", "diff", "percent", "pct_change", "mul", "add")
SET_OPS = ("union", "intersection", "difference")
FNS = (*REDUCERS, "topk", "filter", "interval_relation", "compare", *PAIRWISE, *SET_OPS, "join", "derive",
       "record", "quantile", "distinct", "group", "rolling")  # fmt: skip
#: which optional args each fn accepts (anything else is E_INVALID_ARG)
FN_ARGS: dict[str, frozenset[str]] = {
    **{f: frozenset({"input", "field"}) for f in REDUCERS},
    "topk": frozenset({"input", "field", "k", "fraction", "order", "tie_by"}),
    "filter": frozenset({"input", "field", "cmp", "value", "other"}),
    "interval_relation": frozenset({"input", "a", "b"}),
    "compare": frozenset({"input", "a", "b", "cmp"}),
    **{f: frozenset({"input", "a", "b"}) for f in PAIRWISE},
    **{f: frozenset({"input", "a", "b", "field"}) for f in SET_OPS},
    "join": frozenset({"input", "a", "b", "on", "how", "prefix"}),
    "derive": frozenset({"input", "expr", "as"}),
    "record": frozenset({"fields"}),
    "quantile": frozenset({"input", "field", "q"}),
    "distinct": frozenset({"input", "field"}),
    "group": frozenset({"input", "by", "aggregates", "order_by"}),
    "rolling": frozenset({"input", "by", "aggregates", "frame"}),
}
_ALL_ARGS = ("input", "field", "k", "fraction", "order", "tie_by", "cmp", "value", "other", "a", "b", "on",
             "how", "prefix", "expr", "as", "fields", "q", "by", "aggregates", "order_by",
             "frame")  # fmt: skip
CMP_ALIASES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
CMPS = ("==", "!=", "<", "<=", ">", ">=")


def frac(x: Any, what: str) -> Fraction:
    if not is_number(x):
        raise InvalidArgError(f"{what} must be a number", value=x)
    if is_int(x):
        return Fraction(x)
    return Fraction(repr(canon_float(x)))


def out_num(q: Fraction) -> int | float:
    if q.denominator == 1:
        return int(q)
    try:
        return canon_float(float(q))
    except OverflowError:
        raise InvalidArgError("result is too large for a JSON number", field="value") from None


def _items(args: dict[str, Any], name: str = "input") -> list[Any]:
    x = args.get(name)
    if not isinstance(x, list):
        raise SchemaError(f"{name} must be a list", field=name)
    return x


def _extract(items: list[Any], field: str | None, name: str = "input") -> list[Any]:
    if field is None:
        return list(items)
    out = []
    for i, it in enumerate(items):
        if not isinstance(it, dict) or field not in it:
            raise InvalidArgError(f"{name}[{i}] has no field {field!r}", field="field", index=i)
        out.append(it[field])
    return out


def _a_b(args: dict[str, Any], fn: str) -> tuple[Any, Any]:
    if args.get("a") is not None or args.get("b") is not None:
        if args.get("a") is None or args.get("b") is None:
            raise SchemaError(f"compute {fn} needs both a and b", field="a")
        if args.get("input") is not None:
            raise InvalidArgError(f"compute {fn}: give either a and b, or input = [a, b]", field="input")
        return args["a"], args["b"]
    x = args.get("input")
    if not isinstance(x, list) or len(x) != 2:
        raise SchemaError(f"compute {fn} needs a and b (or input = [a, b])", field="a")
    return x[0], x[1]


def _interval(x: Any, name: str) -> tuple[int, int]:
    if is_int(x):
        return x, x + 1  # an instant t is the instantaneous event [t, t+1)
    if isinstance(x, list) and len(x) == 2:
        s, e = x
    elif isinstance(x, dict) and "vt_s" in x and "vt_e" in x:
        s, e = x["vt_s"], x["vt_e"]
    elif isinstance(x, dict) and "t_a" in x and "t_b" in x:
        s, e = x["t_a"], x["t_b"]
    else:
        raise InvalidArgError(
            f"{name} must be an instant, [s, e], {{vt_s, vt_e}} or {{t_a, t_b}}", field=name, value=x
        )
    if not (is_int(s) and is_int(e)) or s >= e:
        raise InvalidArgError(f"{name} must be a non-empty half-open interval of ints", field=name, value=x)
    return s, e


def _compare(x: Any, cmp: str, y: Any) -> bool:
    if cmp in ("==", "!="):
        same = frac(x, "x") == frac(y, "y") if is_number(x) and is_number(y) else dumps(x) == dumps(y)
        return same if cmp == "==" else not same
    if is_number(x) and is_number(y):
        p, q = frac(x, "x"), frac(y, "y")
    elif isinstance(x, str) and isinstance(y, str):
        p, q = x, y  # type: ignore[assignment]
    else:
        raise InvalidArgError(f"cannot order {x!r} and {y!r} with {cmp}", field="cmp")
    ops: dict[str, Callable[[Any, Any], bool]] = {
        "<": lambda s, t: s < t,
        "<=": lambda s, t: s <= t,
        ">": lambda s, t: s > t,
        ">=": lambda s, t: s >= t,
    }
    return ops[cmp](p, q)


def _oracle_k(args: dict[str, Any], n: int) -> int:
    if args.get("fraction") is not None:
        if args.get("k") is not None:
            raise InvalidArgError("give k or fraction, not both", field="fraction")
        f = args["fraction"]
        if not is_number(f):
            raise SchemaError("fraction must be a number", field="fraction")
        share = frac(f, "fraction")
        if share <= 0 or share > 1:
            raise InvalidArgError("fraction must lie in (0, 1]", field="fraction", value=f)
        k = 0
        while Fraction(k, 1) < share * n:  # the least k with k >= share * n
            k += 1
        return max(k, 1) if n > 0 else 0
    k = int_arg(args, "k", 10, 1, 10_000)
    assert k is not None
    return k


def _natural(v: Any) -> tuple[Any, ...]:
    """Numbers first by value, then strings with their digit runs read as numbers, then the rest."""
    if is_number(v):
        return (0, frac(v, "tie_by"))
    if isinstance(v, str):
        parts: list[tuple[int, int, str]] = []
        for is_digit, group in itertools.groupby(v, key=str.isdecimal):
            text = "".join(group)
            parts.append((0, int(text), "") if is_digit else (1, 0, text))
        return (1, tuple(parts), v)
    return (2, dumps(v))


def _set_key(x: Any, name: str) -> tuple[int, Any]:
    if isinstance(x, str):
        return (1, x)
    if is_number(x):
        return (0, frac(x, name))
    raise InvalidArgError(f"{name}: set elements must be strings or numbers", field=name, value=x)


def oracle_compute(store: Any, args: dict[str, Any]) -> dict[str, Any]:
    del store  # compute never reads the store
    check_keys(args, ["fn"], _ALL_ARGS, "compute")
    fn = str_arg(args, "fn")
    if fn not in FNS:
        raise InvalidArgError(f"fn must be one of {list(FNS)}", field="fn", value=fn, legal=list(FNS))
    given = {k for k, v in args.items() if v is not None and k not in ("fn", "as_of_tt", "limit", "cursor")}
    extra = sorted(given - FN_ARGS[fn])
    if extra:
        raise InvalidArgError(
            f"compute {fn} does not take {extra}", field=extra[0], legal=sorted(FN_ARGS[fn])
        )
    field = str_arg(args, "field")
    value: Any = None
    rows: list[Any] = []

    if fn in REDUCERS or fn in ("topk", "filter"):
        items = _items(args)
        null_test = fn == "filter" and args.get("cmp") in ("exists", "missing")
        vals = [] if null_test else _extract(items, field)  # a null test reads a missing key as null
        if fn == "count":
            value = len(vals)
        elif fn in ("sum", "min", "max", "mean", "median"):
            nums = [frac(v, f"input value {v!r}") for v in vals]
            if fn == "sum":
                value = out_num(sum(nums, Fraction(0)))
            elif nums and fn == "min":
                value = out_num(min(nums))
            elif nums and fn == "max":
                value = out_num(max(nums))
            elif nums and fn == "mean":
                value = out_num(sum(nums, Fraction(0)) / len(nums))
            elif nums:  # median
                s = sorted(nums)
                m = len(s) // 2
                value = out_num(s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2)
        elif fn == "topk":
            k = _oracle_k(args, len(items))
            order = choice_arg(args, "order", ("desc", "asc"), "desc")
            tie_by = str_arg(args, "tie_by")
            keyed = []
            for i, v in enumerate(vals):
                q = frac(v, f"input value {v!r}")
                if tie_by is None:
                    tie: tuple[Any, ...] = ()
                elif isinstance(items[i], dict) and tie_by in items[i]:
                    tie = _natural(items[i][tie_by])
                else:
                    raise InvalidArgError(f"input[{i}] has no field {tie_by!r}", field="tie_by", index=i)
                keyed.append((q if order == "asc" else -q, tie, i))
            keyed.sort()  # by value, then the tie-break, then input position
            rows = [items[i] for _q, _t, i in keyed[:k]]
            value = len(rows)
        elif null_test:  # filter's null tests: no value, no other
            for name in ("value", "other"):
                if args.get(name) is not None:
                    raise InvalidArgError(f"a null test takes no {name}", field=name)
            keep = []
            for i, it in enumerate(items):
                if field is not None and not isinstance(it, dict):
                    raise InvalidArgError(f"input[{i}] is not an object", field="field", index=i)
                v = it if field is None else it.get(field)  # no such key: null
                if (v is None) == (args["cmp"] == "missing"):
                    keep.append(it)
            rows, value = keep, len(keep)
        else:  # filter: against value, or against each element's own `other` field
            other = args.get("other")
            if other is not None and not isinstance(other, str):
                raise SchemaError("other must be a string", field="other")
            if other is not None and args.get("value") is not None:
                raise InvalidArgError("give value or other, not both", field="other")
            cmp = str_arg(args, "cmp")
            if cmp is None or (other is None and args.get("value") is None):
                raise SchemaError("compute filter needs cmp and value", field="cmp")
            cmp = CMP_ALIASES.get(cmp, cmp)
            if cmp not in CMPS:
                raise InvalidArgError(f"cmp must be one of {list(CMPS)}", field="cmp", value=cmp)
            ordering = cmp not in ("==", "!=")  # an ordering with a null side keeps no row (SQL, where)
            if other is None:
                rows = [
                    it
                    for it, v in zip(items, vals, strict=True)
                    if not (ordering and v is None) and _compare(v, cmp, args["value"])
                ]
            else:
                if field is None:
                    raise InvalidArgError("other needs field", field="other")
                rows = []
                for i, it in enumerate(items):
                    if other not in it:
                        raise InvalidArgError(f"input[{i}] has no field {other!r}", field="other", index=i)
                    if ordering and (vals[i] is None or it[other] is None):
                        continue
                    if _compare(vals[i], cmp, it[other]):
                        rows.append(it)
            value = len(rows)
    elif fn == "compare":
        x, y = _a_b(args, fn)
        cmp = str_arg(args, "cmp")
        if cmp is None:
            raise SchemaError("compute compare needs cmp", field="cmp")
        cmp = CMP_ALIASES.get(cmp, cmp)
        if cmp not in CMPS:
            raise InvalidArgError(f"cmp must be one of {list(CMPS)}", field="cmp", value=cmp)
        value = _compare(x, cmp, y)
    elif fn == "interval_relation":
        x, y = _a_b(args, fn)
        (a_s, a_e), (b_s, b_e) = _interval(x, "a"), _interval(y, "b")
        value = allen(a_s, a_e, b_s, b_e)
    elif fn in PAIRWISE:
        x, y = _a_b(args, fn)
        p, q = frac(x, "a"), frac(y, "b")
        if fn == "diff":
            value = out_num(p - q)
        elif fn == "add":
            value = out_num(p + q)
        elif fn == "mul":
            value = out_num(p * q)
        elif q != 0:
            value = out_num({"ratio": p / q, "percent": 100 * p / q, "pct_change": 100 * (p - q) / q}[fn])
    elif fn == "join":
        x, y = _a_b(args, fn)
        rows = _oracle_join(x, y, args.get("on"), args.get("how"), args.get("prefix"))
        value = len(rows)
    elif fn == "derive":
        rows = _oracle_derive(args)
        value = len(rows)
    elif fn == "record":
        rows, value = [_oracle_record(args.get("fields"))], 1
    elif fn == "quantile":
        oracle_q(args.get("q"), "q")  # q is checked before the input
        value = oracle_quantile(_extract(_items(args), field), args.get("q"))
    elif fn == "distinct":
        rows = oracle_distinct(_extract(_items(args), field))
        value = len(rows)
    elif fn == "group":
        rows = oracle_group(args)
        value = len(rows)
    elif fn == "rolling":
        rows = oracle_rolling(args)
        value = len(rows)
    else:  # set operations
        x, y = _a_b(args, fn)
        if not isinstance(x, list) or not isinstance(y, list):
            raise SchemaError(f"compute {fn} needs two lists", field="a")
        left = {_set_key(v, "a"): v for v in _extract(x, field, "a")}
        right = {_set_key(v, "b"): v for v in _extract(y, field, "b")}
        if {t for t, _ in left} | {t for t, _ in right} == {0, 1}:
            raise InvalidArgError(f"compute {fn}: cannot mix strings and numbers", field="a")
        if fn == "union":
            keys = set(left) | set(right)
        elif fn == "intersection":
            keys = set(left) & set(right)
        else:
            keys = set(left) - set(right)
        rows = [out_num(kv[1]) if kv[0] == 0 else kv[1] for kv in sorted(keys)]
        value = len(rows)
    as_of_arg(args)  # accepted and checked like every operator's (docs/operators.md §1), though unused
    return canonicalize({"value": value, "rows": rows, "rows_total": len(rows)})


def _oracle_record(fields: Any) -> dict[str, Any]:
    """The one row of a record: each named part as given, numbers in their canonical form."""
    if fields is None:
        raise SchemaError("compute record needs fields", field="fields")
    if not isinstance(fields, dict) or not 1 <= len(fields) <= 16:
        raise (SchemaError if not isinstance(fields, dict) or not fields else InvalidArgError)(
            "fields must be an object of 1..16 named values", field="fields"
        )
    row = {}
    for name in fields:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name) is None:
            raise InvalidArgError(f"bad part name {name!r}", field="fields")
        v = fields[name]
        if isinstance(v, (list, dict)):
            raise InvalidArgError(f"part {name!r} is not a single value", field=f"fields.{name}")
        row[name] = v if isinstance(v, bool) or not isinstance(v, (int, float)) else out_num(frac(v, name))
    return row


# -- join and derive (brute force: every a row against every b row; expressions by recursion) ------------


def _same_key(x: Any, y: Any) -> bool:
    """Join key equality: compute's == (numbers by exact value, else canonical JSON); null matches nothing."""
    if x is None or y is None:
        return False
    if is_number(x) and is_number(y):
        return frac(x, "key") == frac(y, "key")
    if is_number(x) or is_number(y):
        return False
    return dumps(x) == dumps(y)


def _oracle_join(x: Any, y: Any, on: Any, how: Any, prefix: Any = None) -> list[Any]:
    if not isinstance(x, list) or not isinstance(y, list):
        raise SchemaError("compute join needs two lists", field="a" if not isinstance(x, list) else "b")
    if on is None:
        raise SchemaError("compute join needs on", field="on")
    # each key is a pair (field in a, field in b); a bare name is the same field on both sides
    keys: list[tuple[str, str]] = []
    for item in on if isinstance(on, list) else [on]:
        if isinstance(item, str):
            pair = (item, item)
        elif (
            isinstance(item, dict)
            and sorted(item) == ["a", "b"]
            and isinstance(item["a"], str)
            and isinstance(item["b"], str)
        ):
            pair = (item["a"], item["b"])
        else:
            raise SchemaError("an on key is a string or {a, b} of strings", field="on")
        if pair not in keys:
            keys.append(pair)
    if not 1 <= len(keys) <= 8:
        raise InvalidArgError("on must name 1..8 keys", field="on")
    how = "inner" if how is None else how
    if not isinstance(how, str):
        raise SchemaError("how must be a string", field="how")
    if how not in ("inner", "left", "anti"):
        raise InvalidArgError("how must be inner, left or anti", field="how")
    tag = "b_" if prefix is None else prefix
    if not isinstance(tag, str):
        raise SchemaError("prefix must be a string", field="prefix")
    if tag == "":
        raise InvalidArgError("prefix must not be empty", field="prefix")
    a_fields = [ka for ka, _kb in keys]
    b_keys = [kb for _ka, kb in keys]
    for name, rows, fields in (("a", x, a_fields), ("b", y, b_keys)):
        for i, r in enumerate(rows):
            if not isinstance(r, dict) or any(k not in r for k in fields):
                raise InvalidArgError(f"{name}[{i}] lacks a key field", field=f"{name}[{i}]")
            for k in fields:
                if is_number(r[k]):
                    frac(r[k], "key")  # NaN / inf keys are refused like any number
    pairs = [(ra, [rb for rb in y if all(_same_key(ra[ka], rb[kb]) for ka, kb in keys)]) for ra in x]
    if how == "anti":
        return [dict(ra) for ra, ms in pairs if not ms]
    total = sum(max(len(ms), 1 if how == "left" else 0) for _ra, ms in pairs)
    if total > 100_000:
        raise InvalidArgError("compute join would give too many rows", field="on", n=total)
    b_names: list[str] = []
    for rb in y:
        b_names += [f for f in rb if f not in b_keys and f not in b_names]
    out = []
    for ra, ms in pairs:
        for rb in ms if ms else ([None] if how == "left" else []):
            row = dict(ra)
            for f in b_names:
                name = tag + f if f in ra else f
                if name in row:
                    raise InvalidArgError(f"join output field {name!r} collides", field="b")
                row[name] = rb.get(f) if rb is not None else None
            out.append(row)
    return out


_BINARY = frozenset(("add", "sub", "mul", "div", "mod", "min", "max", "coalesce", "when"))
_BINARY |= {"lt", "le", "gt", "ge", "eq", "ne", "and", "or"}
_UNARY = frozenset({"abs", "floor", "ceil", "sqrt", "not", "number"})


def _check_expr(e: Any, where: str, depth: int) -> None:
    if isinstance(e, str):
        return
    if is_number(e):
        frac(e, where)
        return
    if not isinstance(e, dict):
        raise SchemaError(f"{where} must be a field, a number or an expression", field=where)
    op = e.get("op")
    if op is None:
        raise SchemaError(f"{where} needs op", field=f"{where}.op")
    if not isinstance(op, str):
        raise SchemaError(f"{where}.op must be a string", field=f"{where}.op")
    wanted = {"op", "arg"} if op in _UNARY else {"op", "left", "right"}
    if set(e) - wanted:
        raise SchemaError(f"unknown key in {where}", field=where)
    for k in sorted(wanted):
        if e.get(k) is None:
            raise SchemaError(f"{where} needs {k}", field=f"{where}.{k}")
    if op not in _BINARY | _UNARY:
        raise InvalidArgError(f"{where}.op is not an expression op", field=f"{where}.op")
    if depth >= 8:
        raise InvalidArgError("expression nested too deep", field=where)
    for k in sorted(wanted - {"op"}):
        _check_expr(e[k], f"{where}.{k}", depth + 1)


# A value inside an expression, tagged: ("num", Fraction), ("bool", bool), ("str", str); None is null.
Tagged = tuple[str, Any] | None


def _lookup(row: dict[str, Any], name: str) -> Any:
    """The row's own key ``name``; failing that, the dot-separated keys walked one object at a time."""
    if name in row:
        return row[name]
    parts = name.split(".")
    cur: Any = row
    for part in parts:
        cur = cur.get(part) if isinstance(cur, dict) and len(parts) > 1 else None
    return cur


def _value(e: Any, row: dict[str, Any]) -> Tagged:
    if isinstance(e, str):
        v = _lookup(row, e)
        if is_number(v):
            return ("num", frac(v, e))
        if isinstance(v, bool):
            return ("bool", v)
        if isinstance(v, str):
            return ("str", v)
        return None
    if is_number(e):
        return ("num", frac(e, "expr"))
    op = e["op"]
    if op in _UNARY:
        a = _value(e["arg"], row)
        if op == "not":
            return ("bool", not a[1]) if a is not None and a[0] == "bool" else None
        if op == "number":  # the digits a string ends with, as an integer; a number as it is; true 1, false 0
            if a is None:
                return None
            if a[0] == "bool":
                return ("num", Fraction(1 if a[1] else 0))
            if a[0] == "num":
                return a
            text = a[1]
            start = len(text)
            while start > 0 and text[start - 1] in "0123456789":
                start -= 1
            return ("num", Fraction(int(text[start:]))) if start < len(text) else None
        if a is None or a[0] != "num":
            return None
        q: Fraction = a[1]
        if op == "abs":
            return ("num", -q if q < 0 else q)
        if op == "sqrt":  # by decimal arithmetic at 60 digits; of a negative: null
            if q < 0:
                return None
            with decimal.localcontext() as dec:
                dec.prec = 60
                root = (decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)).sqrt()
            return ("num", Fraction(root))
        down = Fraction(q.numerator // q.denominator)  # floor division rounds toward -inf
        return ("num", down if op == "floor" or down == q else down + 1)
    left, right = _value(e["left"], row), _value(e["right"], row)
    if op == "coalesce":  # the first of the two that is not null
        return right if left is None else left
    if op == "when":  # the right side where the left is true; null otherwise (false, null, not a boolean)
        return right if left == ("bool", True) else None
    if op in ("eq", "ne"):
        if left is None or right is None:
            return None
        return ("bool", (left == right) == (op == "eq"))  # tags differ: a string never equals a number
    if op in ("lt", "le", "gt", "ge"):
        if left is None or right is None or left[0] != right[0] or left[0] == "bool":
            return None
        x, y = left[1], right[1]
        return ("bool", {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[op])
    if op in ("and", "or"):
        truth = [t[1] if t is not None and t[0] == "bool" else None for t in (left, right)]
        if op == "and":
            return ("bool", False) if False in truth else None if None in truth else ("bool", True)
        return ("bool", True) if True in truth else None if None in truth else ("bool", False)
    if left is None or right is None or left[0] != "num" or right[0] != "num":
        return None
    x, y = left[1], right[1]
    if op == "div":
        return ("num", x / y) if y != 0 else None
    if op == "mod":  # x − y·⌊x/y⌋, the floor by integer division of the exact quotient
        if y == 0:
            return None
        quotient = x / y
        return ("num", x - y * (quotient.numerator // quotient.denominator))
    return ("num", {"add": x + y, "sub": x - y, "mul": x * y, "min": min(x, y), "max": max(x, y)}[op])


def _shown(t: Tagged) -> Any:
    if t is None:
        return None
    return out_num(t[1]) if t[0] == "num" else t[1]


def _oracle_derive(args: dict[str, Any]) -> list[Any]:
    expr, name = args.get("expr"), args.get("as")
    if expr is None or name is None:
        raise SchemaError("compute derive needs expr and as", field="expr" if expr is None else "as")
    if not isinstance(name, str):
        raise SchemaError("as must be a string", field="as")
    if name == "":
        raise InvalidArgError("as must not be empty", field="as")
    _check_expr(expr, "expr", 0)
    items = _items(args)
    out = []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise InvalidArgError(f"input[{i}] is not an object", field=f"input[{i}]")
        row = dict(it)
        if isinstance(expr, str):  # a bare field name: the field's value copied unchanged (a rename)
            row[name] = _lookup(it, expr)
        else:
            row[name] = _shown(_value(expr, it))
        out.append(row)
    return out
