"""Exact computation (O13): compute — the only place numbers are combined.

Numbers enter as their canonical decimal value (a float x is read as the decimal ``repr(canon_float(x))``,
so ``0.1`` is exactly 1/10 and ``0.1 + 0.2`` is exactly 3/10) and are combined as ``fractions.Fraction``;
a result leaves as an int when it is integral, else as a float rounded to 9 decimals. Semantics:
``docs/operators.md`` §14.

compute never reads the store, so every error it can raise is an argument error. The args model therefore
validates *by evaluating*: a wrap validator runs :func:`evaluate` on the raw arguments before pydantic's
own field checks (so errors come in the contract's order: unknown names, ``fn``, arguments the fn does
not take, then the fn's own arguments and values) and keeps the result for the operator to return.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Annotated, Any, Literal, NoReturn

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from engine.canonical import canon_float, dumps
from engine.operators.base import OpArgs, PagedOutput
from engine.operators.context import OpContext
from engine.operators.cost import CostEstimate, StoreProfile
from engine.operators.registry import operator
from engine.operators.traits import AllenCall, Loc, Operand, Traits, When

REDUCERS = ("count", "sum", "min", "max", "mean", "median")
SELECTORS = ("topk", "filter")
PAIRWISE = ("ratio", "diff", "percent", "pct_change")
SET_OPS = ("union", "intersection", "difference")
FNS = (*REDUCERS, *SELECTORS, "interval_relation", *PAIRWISE, *SET_OPS)
#: fns over a list whose result (a number, or rows and their count) is wrong on part of the list: a plan
#: may not apply them to truncated input (docs/plans.md §3)
LIST_FNS = (*REDUCERS, *SELECTORS, *SET_OPS)
TWO_OPERANDS = ("interval_relation", *PAIRWISE, *SET_OPS)  # a and b, or input = [a, b]
FN_ARGS = ("input", "field", "k", "cmp", "value", "a", "b")
#: the arguments (besides ``fn``) each fn takes; any other non-null argument is E_INVALID_ARG
TAKES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(REDUCERS, ("input", "field")),
    "topk": ("input", "field", "k"),
    "filter": ("input", "field", "cmp", "value"),
    "interval_relation": ("input", "a", "b"),
    **dict.fromkeys(PAIRWISE, ("input", "a", "b")),
    **dict.fromkeys(SET_OPS, ("input", "a", "b", "field")),
}
COMMON = ("as_of_tt", "limit", "cursor")
CMP_ALIASES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
CMPS = ("==", "!=", "<", "<=", ">", ">=")
DEFAULT_K = 10
MAX_K = 10_000

Value = int | float | str | None
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
    text = repr(x)
    return text if len(text) <= width else text[: width - 3] + "..."


# -- exact numbers ---------------------------------------------------------------------------------------


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def exact(x: Any, loc: str) -> Fraction:
    """The exact value of a JSON number (a float by its canonical decimal form)."""
    if not is_number(x):
        value_error(loc, f"{_show(x)} is not a number", x)
    if isinstance(x, int):
        return Fraction(x)
    if not math.isfinite(x):
        value_error(loc, f"{loc}: NaN and infinite numbers are not allowed", repr(x))
    c = canon_float(x)
    return Fraction(c) if isinstance(c, int) else Fraction(repr(c))


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
    """The elements themselves, or with ``field`` each element's value of that key."""
    if field is None:
        return list(items)
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


def _median(xs: list[Fraction]) -> Fraction:
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


_REDUCE: dict[str, Callable[[list[Fraction]], Fraction]] = {
    "sum": lambda xs: sum(xs, Fraction(0)),
    "min": min,
    "max": max,
    "mean": lambda xs: sum(xs, Fraction(0)) / len(xs),
    "median": _median,
}


def _reduce(fn: str, args: dict[str, Any], field: str | None) -> Result:
    values = _values(_list(args.get("input"), "input"), field, "input")
    if fn == "count":
        return len(values), []
    nums = _numbers(values, "input")
    if not nums and fn != "sum":
        return None, []  # min/max/mean/median of nothing
    return number_out(_REDUCE[fn](nums)), []


def _topk(args: dict[str, Any], field: str | None) -> Result:
    items = _list(args.get("input"), "input")
    values = _values(items, field, "input")
    k = args.get("k")
    if k is None:
        k = DEFAULT_K
    elif not isinstance(k, int) or isinstance(k, bool):
        shape_error("k", "k must be an integer", k)
    elif not 1 <= k <= MAX_K:
        value_error("k", f"k must lie in [1, {MAX_K}]", k)
    nums = _numbers(values, "input")
    order = sorted(range(len(items)), key=lambda i: -nums[i])  # stable: ties keep input order
    rows = [items[i] for i in order[:k]]
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


def _filter(args: dict[str, Any], field: str | None) -> Result:
    items = _list(args.get("input"), "input")
    values = _values(items, field, "input")
    cmp, target = args.get("cmp"), args.get("value")
    if cmp is not None and not isinstance(cmp, str):
        shape_error("cmp", "cmp must be a string", cmp)
    if cmp is None or target is None:
        shape_error("cmp" if cmp is None else "value", "compute filter needs cmp and value")
    cmp = CMP_ALIASES.get(cmp, cmp)
    if cmp not in CMPS:
        value_error("cmp", f"cmp must be one of {list(CMPS)} (or {sorted(CMP_ALIASES)})", cmp)
    rows = [it for it, v in zip(items, values, strict=True) if _holds(v, cmp, target)]
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


def evaluate(args: dict[str, Any]) -> Result:
    """``(value, rows)`` of a compute call given as a plain dict; argument errors raise ValidationError."""
    unknown = sorted(set(args) - {"fn", *FN_ARGS, *COMMON})
    if unknown:
        _fail("extra_forbidden", unknown[0], f"unknown argument(s) {unknown}", args[unknown[0]])
    fn = args.get("fn")
    if fn is None:
        shape_error("fn", "missing required argument fn")
    if not isinstance(fn, str):
        shape_error("fn", "fn must be a string", fn)
    if fn not in TAKES:
        value_error("fn", f"fn must be one of {list(FNS)}", fn)
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
    if fn in PAIRWISE:
        return _pairwise(fn, args)
    return _set_op(fn, args, field)


# -- the operator ----------------------------------------------------------------------------------------


def _takers(arg: str) -> str:
    fns = [f for f in FNS if arg in TAKES[f]]
    return "Taken by every fn." if len(fns) == len(FNS) else "Taken by: " + ", ".join(fns) + "."


def _fn_rules() -> list[dict[str, Any]]:
    """JSON Schema ``if fn in group then ...`` rules: which arguments each group of fns needs and takes."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for f in FNS:
        groups.setdefault(TAKES[f], []).append(f)
    not_null = {"not": {"type": "null"}}
    rules = []
    for takes, fns in groups.items():
        then: dict[str, Any] = {"properties": {k: {"type": "null"} for k in FN_ARGS if k not in takes}}
        if "a" in takes:
            then["anyOf"] = [
                {"required": ["a", "b"], "properties": {"a": not_null, "b": not_null}},
                {
                    "required": ["input"],
                    "properties": {"input": {"type": "array", "minItems": 2, "maxItems": 2}},
                },
            ]
        else:
            needed = ["input", *(k for k in ("cmp", "value") if k in takes)]
            then["required"] = needed
            then["properties"].update({k: not_null for k in needed})
        rules.append({"if": {"properties": {"fn": {"enum": fns}}, "required": ["fn"]}, "then": then})
    return rules


class ComputeArgs(OpArgs):
    model_config = ConfigDict(json_schema_extra={"allOf": _fn_rules()})

    fn: Annotated[Literal[FNS], Field(description="the function; see the manual for each fn's arguments")]
    input: Annotated[
        list[Any] | None,
        Operand(),
        Field(
            description="the elements (usually a $ref projection); for a/b fns input = [a, b]. "
            + _takers("input")
        ),
    ] = None
    field: Annotated[
        str | None, Field(description="use each element's value of this key. " + _takers("field"))
    ] = None
    k: Annotated[
        Annotated[int, Field(ge=1, le=MAX_K)] | None,
        Field(description=f"how many elements (default {DEFAULT_K}). " + _takers("k")),
    ] = None
    cmp: Annotated[
        Literal[(*CMPS, *CMP_ALIASES)] | None,
        Field(description="comparison of each value with `value`. " + _takers("cmp")),
    ] = None
    value: Annotated[Any, Operand(), Field(description="the value compared against. " + _takers("value"))] = (
        None
    )
    a: Annotated[
        Any, Operand(), Field(description="first operand (number, interval or list). " + _takers("a"))
    ] = None
    b: Annotated[
        Any, Operand(), Field(description="second operand (number, interval or list). " + _takers("b"))
    ] = None

    _result: Result | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _evaluate(cls, raw: Any, handler: Callable[[Any], ComputeArgs]) -> ComputeArgs:
        result = evaluate(raw) if isinstance(raw, dict) else None
        args = handler(raw)
        args._result = result
        return args

    def result(self) -> Result:
        if self._result is None:  # built without validation (model_construct)
            self._result = evaluate(self.model_dump())
        return self._result


class ComputeOut(PagedOutput):
    value: Annotated[int | float | str | None, Field(description="the fn's result (see the manual)")]
    rows: Annotated[list[Any], Field(description="selected elements or set members; [] for scalar fns")]
    rows_total: int


def _size(x: Any) -> int:
    return len(x) if isinstance(x, list) else int(x is not None)


def _compute_cost(p: StoreProfile, a: ComputeArgs) -> CostEstimate:
    del p  # compute never reads the store
    n = _size(a.input) + _size(a.a) + _size(a.b)
    return CostEstimate({"scan_row": 20 * n, "row_out": n}, ["compute over fewer elements"])


def keeps_empty(args: Mapping[str, Any], loc: Loc) -> bool:
    """Whether an empty producer read at argument position ``loc`` leaves the result trivially empty or
    zero (the plan verifier's vacuous rule, docs/plans.md §2): the call's whole input being empty gives the
    count 0, the sum 0, no rows; an empty intersection operand or minuend empties the result, and an
    interval read from nothing cannot be related. An empty *term* (one element of a literal list, an
    operand of a union or of a pairwise fn, a subtrahend) is a legitimate zero or empty set: the result
    still depends on the other terms."""
    if not loc or loc == ("input",):
        return True
    fn = args.get("fn")
    operand: Any = None
    if len(loc) == 1 and loc[0] in ("a", "b"):
        operand = loc[0]
    elif len(loc) == 2 and loc[0] == "input" and fn in TWO_OPERANDS:
        operand = {0: "a", 1: "b"}.get(loc[1])  # type: ignore[call-overload]
    if operand is None:
        return False  # a term of a literal list
    return fn in ("interval_relation", "intersection") or (fn == "difference" and operand == "a")


@operator(
    name="compute",
    edge_arrays=False,  # no store data at all
    family="compute",
    traits=Traits(
        reduces=When("fn", LIST_FNS),
        keeps_empty=keeps_empty,
        allen=AllenCall(When("fn", ("interval_relation",)), a="a", b="b", pair="input"),
    ),
    args=ComputeArgs,
    output=ComputeOut,
    cost=_compute_cost,
    manual=(
        "Combines values from earlier steps with exact arithmetic (0.1 + 0.2 = 0.3); it is the only "
        "place numbers are combined and never reads the store. Reducers count, sum, min, max, mean, "
        "median take `input` (a list, e.g. a $ref projection) and optionally `field` (use each element's "
        "value of that key); topk (k, default 10) and filter (cmp ==, !=, <, <=, >, >= against `value`) "
        "return whole elements in `rows`; ratio, diff, percent, pct_change (100·(a−b)/b) and "
        "interval_relation (the Allen relation of interval a to b) take `a` and `b` or input = [a, b]; "
        "union, intersection, difference return sorted distinct values. The result is in `value` (for "
        "row-returning fns, the number of rows); a division by zero gives null; arguments a fn does not "
        "take are refused."
    ),
    example={
        "args": {"fn": "pct_change", "a": 150, "b": 120},
        "outputs": ["value"],
        "note": 'value = 25; in a plan, a and b are usually refs such as {"$ref": "s2.count"}',
    },
)
def compute(ctx: OpContext, a: ComputeArgs) -> dict[str, Any]:
    del ctx  # compute never reads the store
    value, rows = a.result()
    return {"value": value, "rows": rows, "rows_total": len(rows)}
