"""Exact computation (O13): compute — the only place numbers are combined.

The fns themselves (exact numbers, operands, :func:`~engine.operators.compute_fns.evaluate`) are in
:mod:`engine.operators.compute_fns`; this module declares the operator: its args model, the schema rules
saying which arguments each fn takes, its cost, its traits and its manual entry. Semantics:
``docs/operators.md`` §14.

compute never reads the store, so every error it can raise is an argument error. The args model therefore
validates *by evaluating*: a wrap validator runs :func:`evaluate` on the raw arguments before pydantic's
own field checks (so errors come in the contract's order: unknown names, ``fn``, arguments the fn does
not take, then the fn's own arguments and values) and keeps the result for the operator to return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from tgms.engine.operators.base import Model, OpArgs, PagedOutput
from tgms.engine.operators.compute_fields import compute_clashes, compute_reads, compute_row_fields
from tgms.engine.operators.compute_fns import (
    ALLEN,
    CMP_ALIASES,
    CMPS,
    DEFAULT_K,
    FN_ARGS,
    FNS,
    LIST_FNS,
    MAX_K,
    NEEDS,
    NULL_TESTS,
    TAKES,
    TWO_OPERANDS,
    Result,
    allen_relation,
    evaluate,
)
from tgms.engine.operators.compute_group import (
    GROUP_AGGS,
    MAX_AGGREGATES,
    MAX_BY,
    MAX_ORDER_BY,
    rolling_frame,
    rolling_reads,
)
from tgms.engine.operators.compute_rolling import constant_time
from tgms.engine.operators.compute_units import compute_units
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import CostEstimate, StoreProfile, values_estimate
from tgms.engine.operators.registry import operator
from tgms.engine.operators.traits import AllenCall, Loc, Operand, Traits, When

#: re-exported: what callers of compute read about its fns
__all__ = ["ALLEN", "FNS", "LIST_FNS", "ComputeArgs", "ComputeOut", "allen_relation", "compute", "evaluate"]

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
        needs = list(dict.fromkeys(k for f in fns for k in NEEDS.get(f, ())))
        if "a" in takes:
            then["anyOf"] = [
                {"required": ["a", "b"], "properties": {"a": not_null, "b": not_null}},
                {
                    "required": ["input"],
                    "properties": {"input": {"type": "array", "minItems": 2, "maxItems": 2}},
                },
            ]
            if needs:
                then["required"] = needs
                then["properties"].update({k: not_null for k in needs})
        else:  # record's operands are its fields, every other fn's its input
            needed = list(dict.fromkeys([*(["input"] if "input" in takes else []), *needs]))
            then["required"] = needed
            then["properties"].update({k: not_null for k in needed})
        rules.append({"if": {"properties": {"fn": {"enum": fns}}, "required": ["fn"]}, "then": then})
    return rules


if TYPE_CHECKING:  # built from the fn tables at import time: a type checker sees plain strings
    FnName = str
    CmpName = str
    AggName = str
else:
    FnName = Literal[FNS]
    CmpName = Literal[(*CMPS, *NULL_TESTS, *CMP_ALIASES)]
    AggName = Literal[GROUP_AGGS]

Quantile = Annotated[float, Field(ge=0, le=1)]


class GroupAggregate(Model):
    """One aggregate of a group: its fn over each group's rows, the field it reads and its name."""

    fn: AggName
    field: Annotated[str | None, Field(description="every fn but count needs one")] = None
    as_: Annotated[str | None, Field(alias="as", description="default fn or fn_field")] = None
    q: Annotated[Quantile | None, Field(description="quantile only")] = None


class GroupOrder(Model):
    """A group's output order: a key field or an aggregate name, ascending unless desc (nulls last)."""

    field: str
    desc: bool | None = None


class JoinKey(Model):
    """A join key whose field is named differently in a and in b (a sender's src against a recipient's
    dst; a pair against the reversed pair)."""

    a: Annotated[str, Field(description="the key field in a's rows")]
    b: Annotated[str, Field(description="the key field in b's rows")]


class ComputeArgs(OpArgs):
    # list(): a new list, typed by the context as pydantic's list[JsonValue] (a list is invariant)
    model_config = ConfigDict(json_schema_extra={"allOf": list(_fn_rules())})

    fn: Annotated[FnName, Field(description="the function; see the manual for each fn's arguments")]
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
    fraction: Annotated[
        Annotated[float, Field(gt=0, le=1)] | None,
        Field(description="instead of k: this share of the elements, rounded up (0.01 = the top 1%). "
                          + _takers("fraction")),
    ] = None  # fmt: skip
    order: Annotated[
        Literal["desc", "asc"] | None,
        Field(description="desc (default): the greatest first; asc: the least first (bottom-k). "
                          + _takers("order")),
    ] = None  # fmt: skip
    tie_by: Annotated[
        str | None,
        Field(description="break ties by this field, ascending, in natural order (n9 before n10); "
                          "default: input order. " + _takers("tie_by")),
    ] = None  # fmt: skip
    cmp: Annotated[
        CmpName | None,
        Field(description="filter: each value against `value`; compare: a against b. " + _takers("cmp")),
    ] = None
    value: Annotated[Any, Operand(), Field(description="the value compared against. " + _takers("value"))] = (
        None
    )
    other: Annotated[
        str | None,
        Field(description="instead of value: compare `field` with this field of the same element. "
                          + _takers("other")),
    ] = None  # fmt: skip
    a: Annotated[
        Any, Operand(), Field(description="first operand (number, interval or list). " + _takers("a"))
    ] = None
    b: Annotated[
        Any, Operand(), Field(description="second operand (number, interval or list). " + _takers("b"))
    ] = None
    on: Annotated[
        str | JoinKey | list[str | JoinKey] | None,
        Field(
            description="join key, or a list of keys (all must match): a field name both lists have, or "
            '{"a": FIELD_A, "b": FIELD_B} for differently named fields. ' + _takers("on")
        ),
    ] = None
    how: Annotated[
        Literal["inner", "left", "anti"] | None,
        Field(description="join kind (default inner). " + _takers("how")),
    ] = None
    prefix: Annotated[
        str | None,
        Field(description="renames b's fields that a already has (default b_; c_ for a third list). "
                          + _takers("prefix")),
    ] = None  # fmt: skip
    expr: Annotated[
        dict[str, Any] | str | int | float | None,
        Field(
            description="per-row expression (ops: see derive above): {op, left, right} or {op, arg} over "
            "field names, numbers and nested expressions; a lone field name: a copy. " + _takers("expr")
        ),
    ] = None
    as_: Annotated[
        str | None, Field(alias="as", description="name of the derived field. " + _takers("as"))
    ] = None
    fields: Annotated[
        dict[str, Any] | None,
        Operand(),
        Field(
            description="named single values, each a number, string, boolean, null or a $ref to one: "
            "one row of them (a tuple answer). " + _takers("fields")
        ),
    ] = None
    q: Annotated[
        Quantile | None,
        Field(
            description="the quantile in [0, 1] (nearest rank; 0.9 = the 90th percentile). " + _takers("q")
        ),
    ] = None
    by: Annotated[
        str | Annotated[list[str], Field(min_length=1, max_length=MAX_BY)] | None,
        Field(description=f"key field(s), 1..{MAX_BY}. " + _takers("by")),
    ] = None
    aggregates: Annotated[
        Annotated[list[GroupAggregate], Field(min_length=1, max_length=MAX_AGGREGATES)] | None,
        Field(description='default [{"fn": "count"}]. ' + _takers("aggregates")),
    ] = None
    order_by: Annotated[
        Annotated[list[GroupOrder], Field(max_length=MAX_ORDER_BY)] | None,
        Field(description="default: key order. " + _takers("order_by")),
    ] = None
    frame: Annotated[
        Annotated[list[int | None], Field(min_length=2, max_length=2)] | None,
        Field(description="[lo, hi] row offsets around each row (null: unbounded). " + _takers("frame")),
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
            self._result = evaluate(self.model_dump(by_alias=True))
        return self._result


class ComputeOut(PagedOutput):
    value: Annotated[bool | int | float | str | None, Field(description="the fn's result (see the manual)")]
    rows: Annotated[list[Any], Field(description="selected elements or set members; [] for scalar fns")]
    rows_total: int


def _size(x: Any) -> int:
    return len(x) if isinstance(x, list) else int(x is not None)


#: units of ``scan_row`` (36 ns as shipped) per aggregate value a rolling frame reads again (~200 ns)
FRAME_READ_UNITS = 8


def _compute_cost(p: StoreProfile, a: ComputeArgs) -> CostEstimate:
    del p  # compute never reads the store
    # priced per JSON value, not per element: a whole list_events row (~15 values) read past a page costs
    # ~15 times a number
    parts = [values_estimate(_size(x), _first(x), []).work for x in (a.input, a.a, a.b)]
    work = {k: sum(w[k] for w in parts) for k in ("scan_row", "row_out")}
    if a.fn == "rolling" and a.frame is not None and len(a.frame) == 2:
        # an aggregate computed frame by frame reads each row's frame again, within its partition: ~200 ns
        # a value (FRAME_READ_UNITS; min over 50,000 rows in 100 partitions, frame [-10000, 0], 12.5 M
        # reads in 2.5 s); count, first, last and sums of ints take O(1) a row (compute_rolling)
        slow = sum(not _rolls_fast(g, _first(a.input)) for g in a.aggregates or ())
        if slow:
            reads = rolling_reads(a.input, a.by, *rolling_frame(a.frame))
            work["scan_row"] += FRAME_READ_UNITS * reads * slow
        return CostEstimate(work, ["compute over fewer elements", "a narrower frame, or partitions (by)"])
    return CostEstimate(work, ["compute over fewer elements"])


def _rolls_fast(agg: GroupAggregate, first: Any) -> bool:
    """Whether a rolling aggregate is taken in O(1) a row (compute_rolling), its field judged by the first
    row's value."""
    value = first.get(agg.field) if isinstance(first, dict) and agg.field else None
    return constant_time(agg.fn, type(value) is float)


def _first(x: Any) -> Any:
    """What a list argument is priced by: its first element (a scalar argument: itself)."""
    return (x[0] if x else None) if isinstance(x, list) else x


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
        operand = {0: "a", 1: "b"}.get(loc[1]) if isinstance(loc[1], int) else None
    if operand is None:
        return False  # a term of a literal list
    if fn == "join":  # no a rows: no output; no b rows empties an inner join only (left/anti keep a)
        return operand == "a" or args.get("how") in (None, "inner")
    return fn in ("interval_relation", "intersection") or (fn == "difference" and operand == "a")


@operator(
    name="compute",
    edge_arrays=False,  # no store data at all
    family="compute",
    traits=Traits(
        reduces=When("fn", LIST_FNS),
        keeps_empty=keeps_empty,
        allen=AllenCall(When("fn", ("interval_relation",)), a="a", b="b", pair="input"),
        units=compute_units,
        units_doc="count → count; sum keeps a count, duration or ratio (a sum of time points or ids is "
        "refused); mean of time points → time point, of counts → ratio; min, max, median, quantile keep "
        "the unit; "
        "diff: time − time → duration, time − duration → time; ratio: count ÷ count → ratio, duration ÷ "
        "count → duration; percent, pct_change → ratio; topk, filter, set ops, distinct, join, derive: rows "
        "keep their fields' units, value is a count; group: keys keep their units, count and "
        "count_distinct are counts, the other aggregates are their field's reducer; record: each part "
        "keeps its value's unit",
        row_fields=compute_row_fields,
        reads_fields=compute_reads,
        clashes=compute_clashes,
        full_input=True,
    ),
    args=ComputeArgs,
    output=ComputeOut,
    cost=_compute_cost,
    manual=(
        "Exact arithmetic over earlier steps' values (0.1 + 0.2 = 0.3); never reads the store. Reducers "
        "count, sum, min, max, mean, median take `input` (a list, e.g. a $ref projection) and optionally "
        "`field` (use each element's value of that key); topk (k, default 10, or fraction: a share rounded "
        "up, any number: fraction 1 sorts every element; order desc or asc for bottom-k; tie_by: a field "
        "breaking ties in natural order) and filter (cmp ==, !=, <, <=, >, >= against `value`, or against "
        "the element's own field `other`; exists/missing: non-null/null) return whole elements in `rows`; "
        "compare gives true/false for `a cmp b` (a yes/no answer); ratio, diff, add, mul, percent, "
        "pct_change (100·(a−b)/b) and interval_relation (the Allen relation of interval a to b) take `a` "
        "and `b` or input = [a, b]; union, intersection, difference return sorted distinct values. join "
        "matches the rows of list a with those of list b on the key(s) `on` (a field name both have, or "
        "{a: FIELD_A, b: FIELD_B} for differently named fields, e.g. a sender's src against a recipient's "
        "dst; `how`: inner, left or anti; at most 100,000 joined rows; a's order, then b's; b's key fields "
        "are dropped, and its fields that a also has are renamed b_<name>, or <prefix><name>); derive adds "
        "the field `as` to every row of `input`, computed by `expr` {op, left, right} with op "
        "add|sub|mul|div|mod|min|max, coalesce (left unless null), when (right if left is true, else "
        "null), lt|le|gt|ge|eq|ne (true/false) or and|or, or {op, arg} with op abs|floor|ceil|sqrt|not or "
        "number (a uid's number, n42 → 42: ids as numbers, not text; true → 1), over field names "
        "(props.rating reads into an object), numbers or nested expressions, or a lone field name: a copy, "
        "a rename (arithmetic on a missing or non-numeric field, or a division by zero, gives null; a "
        "comparison with a null side gives null); record makes one row of named single values `fields` "
        "{name: value or $ref} (a tuple answer: the three counts; answer it as rows). quantile: `q` in [0, "
        "1], nearest rank (the ⌈q·n⌉-th smallest; null if empty): the 90th-percentile delay is {fn: "
        "quantile, input: {$ref: s2.rows[*].delay}, q: 0.9}. distinct: the distinct values, ascending "
        "(nulls skipped); value = how many. group: one row per distinct value of `by` (a field or 1..3 "
        "fields; null is a group, last) in key order (natural: n9 before n10), holding the keys then each "
        "of `aggregates` [{fn, field, as?, q?}] (fn count (of a field: its non-nulls), count_distinct, "
        "sum, min, max, mean, median, quantile, first, last; named fn or fn_field, or `as`; numeric ones "
        "skip non-numbers); `order_by` [{field, desc?}]; filter its rows for a having. rolling: each "
        "`input` row, in order, plus `aggregates` (as group's) over the rows at offsets `frame` [lo, hi] "
        "from it, within its `by` partition if given ([0, 5]: it and the next 5; [-1, -1] with last: the "
        "previous row's value; [null, 0]: every row up to it, a running total). Per sender the median "
        "reply delay: join the pairs' first times, derive delay = b_first_t − first_t, then {fn: group, "
        "input: {$ref: s3.rows}, by: src, aggregates: [{fn: median, field: delay}]} → rows {src, "
        "median_delay}. `value` is the result (row fns: the row count). In a plan, input reads the "
        "producer's whole result even when its page was cut (every row, not the page); only compute's own "
        "result is paged. Over input resting on a cut page (a step seeded by a page) only the per-row fns "
        "filter and derive run (their result stays marked truncated); the other list fns are refused."
    ),
    example={
        "args": {"fn": "pct_change", "a": 150, "b": 120},
        "outputs": ["value"],
        "note": 'in a plan, a and b are usually refs: {"$ref": "s2.count"}',
    },
)
def compute(ctx: OpContext, a: ComputeArgs) -> dict[str, Any]:
    del ctx  # compute never reads the store
    value, rows = a.result()
    return {"value": value, "rows": rows, "rows_total": len(rows)}
