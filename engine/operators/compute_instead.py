"""What to write instead of a compute fn, group aggregate or derive expression op that does not exist but
that a planner reaches for by its name elsewhere (SQL, pandas): ``sort`` is a ``topk`` of every row,
``avg`` is ``mean``. The refusal names the way, so a repair turn writes it instead of guessing again.
"""

from __future__ import annotations

_FN = {
    "sort": "topk with fraction: 1 orders every row (order: asc|desc, tie_by: a field)",
    "order_by": "topk with fraction: 1 orders every row (order: asc|desc, tie_by: a field)",
    "rank": "topk (k, fraction, order, tie_by)",
    "top": "topk",
    "bottom": "topk with order: asc",
    "avg": "mean",
    "average": "mean",
    "len": "count",
    "size": "count",
    "unique": "distinct",
    "count_distinct": "distinct, then count (or group's count_distinct)",
    "nunique": "distinct, then count (or group's count_distinct)",
    "group_by": "group (by, aggregates)",
    "groupby": "group (by, aggregates)",
    "aggregate": "group (by, aggregates)",
    "where": "filter",
    "select": "filter, or derive (a field name alone as expr copies it)",
    "map": "derive (expr, as)",
    "apply": "derive (expr, as)",
    "abs": "derive with expr {op: abs, arg: FIELD}",
    "merge": "join (a, b, on, how)",
    "lookup": "join (a, b, on, how: left)",
    "lag": "rolling with frame: [-1, -1] and a last aggregate",
    "lead": "rolling with frame: [1, 1] and a first aggregate",
    "cumsum": "rolling with frame: [null, 0] and a sum aggregate",
    "running_sum": "rolling with frame: [null, 0] and a sum aggregate",
    "row_number": "rolling with frame: [null, 0] and a count aggregate",
    "cumcount": "rolling with frame: [null, 0] and a count aggregate",
    "percentile": "quantile (q in [0, 1])",
    "subtract": "diff",
    "minus": "diff",
    "divide": "ratio",
    "eq": "compare (cmp: ==)",
    "equal": "compare (cmp: ==)",
    "append": "union for distinct values; rows of two lists: none (filter each, or join)",
    "concat": "union for distinct values; rows of two lists: none (filter each, or join)",
}
_AGG = {
    "avg": "mean",
    "average": "mean",
    "nunique": "count_distinct",
    "distinct": "count_distinct",
    "distinct_count": "count_distinct",
    "percentile": "quantile (q in [0, 1])",
    "p50": "median",
    "n": "count",
    "size": "count",
}

_OP = {
    "if": "{op: coalesce, left: {op: when, left: COND, right: A}, right: B}",
    "case": "{op: coalesce, left: {op: when, left: COND, right: A}, right: B}",
    "iif": "{op: coalesce, left: {op: when, left: COND, right: A}, right: B}",
    "ifnull": "coalesce",
    "nvl": "coalesce",
    "fillna": "coalesce",
    "isnull": "coalesce with a stand-in value, or filter with cmp exists or missing",
    "modulo": "mod",
    "rem": "mod",
    "%": "mod",
    "pow": "mul (x·x)",
    "power": "mul (x·x)",
    "neg": "sub with left 0",
    "round": "floor of add 0.5",
    "+": "add",
    "-": "sub",
    "*": "mul",
    "/": "div",
    "<": "lt",
    "<=": "le",
    ">": "gt",
    ">=": "ge",
    "==": "eq",
    "=": "eq",
    "!=": "ne",
    "<>": "ne",
}


def instead_of_fn(fn: str) -> str:
    """`` (for <fn>: use ...)`` when ``fn`` is a name taken from elsewhere, else empty."""
    way = _FN.get(fn.strip().lower())
    return f" (for {fn}: {way})" if way else ""


def instead_of_aggregate(fn: str) -> str:
    way = _AGG.get(fn.strip().lower())
    return f" (for {fn}: {way})" if way else ""


def instead_of_op(op: str) -> str:
    way = _OP.get(op.strip().lower())
    return f" (for {op}: {way})" if way else ""
