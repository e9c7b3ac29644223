"""compute's group, quantile and distinct (issue 27): fast path == oracle on random calls, plus hand cases
with known answers, every refusal with its code and field, and the traits (list-reducing)."""

from __future__ import annotations

import copy
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, counter_clock
from tgms.engine.canonical import dumps
from tgms.engine.errors import TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.operators.registry import get_operator
from tgms.engine.store import Store

KEYS: list[Any] = ["n9", "n10", "n1", "a", 1, 1.0, 2, 0.1 + 0.2, 0.3, None, True, [1]]
VALUES: list[Any] = [3, -2, 0, 0.1, 0.2, 1 / 3, 2.5, 7.0, None, "s", True, "n2", [1]]
AGG_FNS = ("count", "count_distinct", "sum", "min", "max", "mean", "median", "quantile", "first", "last")


def _rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    return [
        {"k": rng.choice(KEYS), "k2": rng.choice(["x", "y", None]), "v": rng.choice(VALUES),
         "w": rng.choice([1, 2, 2.0, 5, 0.5, None])}
        for _ in range(n)
    ]  # fmt: skip


def _agg(rng: random.Random) -> dict[str, Any]:
    fn = rng.choice(AGG_FNS)
    spec: dict[str, Any] = {"fn": fn}
    if fn != "count" or rng.random() < 0.4:  # count with a field: its non-null values
        spec["field"] = rng.choice(["v", "w", "k", "k2"])
    if fn == "quantile":
        spec["q"] = rng.choice([0, 0.1, 0.5, 0.7, 0.9, 1, 1 / 3])
    return spec


def _valid(rng: random.Random) -> dict[str, Any]:
    fn = rng.choice(["group", "group", "group", "quantile", "distinct"])
    n = rng.randint(0, 12)
    if fn == "quantile":
        nums = [rng.choice([3, -2, 0, 0.1, 0.2, 1 / 3, 2.5, 7.0, 10**12]) for _ in range(n)]
        q = rng.choice([0, 0.01, 0.1, 0.5, 0.7, 0.9, 0.99, 1, 1 / 3])
        if rng.random() < 0.5:
            return {"fn": fn, "input": [{"d": x} for x in nums], "field": "d", "q": q}
        return {"fn": fn, "input": nums, "q": q}
    if fn == "distinct":
        pool = rng.choice([["b", "a", "n10", "n9", None], [1, 1.0, 0.3, 0.1 + 0.2, -2, None]])
        vals = [rng.choice(pool) for _ in range(n)]
        if rng.random() < 0.5:
            return {"fn": fn, "input": [{"x": v} for v in vals], "field": "x"}
        return {"fn": fn, "input": vals}
    args: dict[str, Any] = {"fn": "group", "input": _rows(rng, n)}
    args["by"] = rng.choice(["k", ["k"], ["k2", "k"], ["k", "k2", "w"], "k2"])
    if rng.random() < 0.8:
        aggs = [_agg(rng) for _ in range(rng.randint(1, 4))]
        names: set[str] = set()
        for i, a in enumerate(aggs):  # rename clashes, sometimes by choice
            default = a["fn"] if "field" not in a else f"{a['fn']}_{a['field']}"
            if default in names or default in ("k", "k2", "w") or rng.random() < 0.2:
                a["as"] = f"a{i}"
            names.add(a.get("as", default))
        args["aggregates"] = aggs
    if rng.random() < 0.5:
        fields = [*([args["by"]] if isinstance(args["by"], str) else args["by"])]
        fields += [a.get("as") or (a["fn"] if "field" not in a else f"{a['fn']}_{a['field']}")
                   for a in args.get("aggregates", [{"fn": "count"}])]  # fmt: skip
        args["order_by"] = [
            {"field": rng.choice(fields), **({"desc": rng.choice([True, False, None])} if rng.random() < 0.7
                                             else {})}
            for _ in range(rng.randint(0, 2))
        ]  # fmt: skip
    return args


def _fault(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    a = copy.deepcopy(args)
    fn = a["fn"]
    if fn == "quantile":
        f = rng.choice(["q_missing", "q_type", "q_range", "not_taken", "value_type", "input_type"])
        if f == "q_missing":
            del a["q"]
        elif f == "q_type":
            a["q"] = rng.choice(["0.9", True, [0.9]])
        elif f == "q_range":
            a["q"] = rng.choice([-0.1, 1.5, 90])
        elif f == "not_taken":
            a["by"] = "k"
        elif f == "value_type":
            a["input"] = [*a["input"], {"d": "x"} if "field" in a else "x"]
        else:
            a["input"] = rng.choice(["rows", 3])
        return a
    if fn == "distinct":
        f = rng.choice(["mixed", "bad_value", "not_taken", "no_field"])
        if f == "mixed":
            a["input"] = [*a["input"], {"x": "s"} if "field" in a else "s", {"x": 1} if "field" in a else 1]
        elif f == "bad_value":
            a["input"] = [*a["input"], {"x": True} if "field" in a else [1]]
        elif f == "not_taken":
            a["q"] = 0.5
        else:
            a["input"] = [*a["input"], {"y": 1}]
            a["field"] = "x"
        return a
    f = rng.choice(["by_missing", "by_type", "by_empty", "by_many", "by_repeat", "aggs_type", "aggs_empty",
                    "agg_type", "agg_key", "agg_fn", "agg_fn_missing", "field_missing",
                    "q_not_quantile", "q_missing", "q_range", "name_bad", "name_taken", "order_type",
                    "order_field", "order_desc", "row_type", "row_no_key", "input_type",
                    "not_taken"])  # fmt: skip
    if f == "by_missing":
        del a["by"]
    elif f == "by_type":
        a["by"] = rng.choice([3, ["k", 1], {"k": 1}])
    elif f == "by_empty":
        a["by"] = []
    elif f == "by_many":
        a["by"] = ["k", "k2", "v", "w"]
    elif f == "by_repeat":
        a["by"] = ["k", "k"]
    elif f == "aggs_type":
        a["aggregates"] = rng.choice(["count", {"fn": "count"}])
    elif f == "aggs_empty":
        a["aggregates"] = rng.choice([[], [{"fn": "count", "as": f"c{i}"} for i in range(17)]])
    elif f == "agg_type":
        a["aggregates"] = ["count"]
    elif f == "agg_key":
        a["aggregates"] = [{"fn": "count", "where": 1}]
    elif f == "agg_fn":
        a["aggregates"] = [{"fn": rng.choice(["avg", "COUNT", "first_value"]), "field": "v"}]
    elif f == "agg_fn_missing":
        a["aggregates"] = [{"field": "v"}]
    elif f == "field_missing":
        a["aggregates"] = [{"fn": rng.choice(["sum", "first", "count_distinct"])}]
    elif f == "q_not_quantile":
        a["aggregates"] = [{"fn": "median", "field": "v", "q": 0.5}]
    elif f == "q_missing":
        a["aggregates"] = [{"fn": "quantile", "field": "v"}]
    elif f == "q_range":
        a["aggregates"] = [{"fn": "quantile", "field": "v", "q": rng.choice([-1, 1.01])}]
    elif f == "name_bad":
        a["aggregates"] = [{"fn": "count", "as": rng.choice(["1x", "a b", ""])}]
    elif f == "name_taken":
        a["by"] = "k"
        a["aggregates"] = rng.choice([[{"fn": "count", "as": "k"}], [{"fn": "count"}, {"fn": "count"}]])
    elif f == "order_type":
        a["order_by"] = rng.choice(["count", [["count"]], [{"field": "count", "up": 1}]])
    elif f == "order_field":
        a["order_by"] = [{"field": "nope"}]
    elif f == "order_desc":
        a["aggregates"] = [{"fn": "count"}]
        a["order_by"] = [{"field": "count", "desc": "yes"}]
    elif f in ("row_type", "row_no_key"):
        a["by"] = "k"
        a["aggregates"] = [{"fn": "count"}]
        a["input"] = [*a["input"], rng.choice(["x", 3, None, [1]]) if f == "row_type" else {"zz": 1}]
    elif f == "input_type":
        a["input"] = rng.choice(["rows", 3, {"k": 1}])
    else:
        a["field"] = "v"
    a.pop("order_by", None) if f not in ("order_type", "order_field", "order_desc") else None
    return a


def test_group_quantile_distinct_match_oracle(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "s", "duckdb", now=counter_clock())
    try:
        ctx = OpContext(store)
        rng = random.Random(27)
        outcomes: Counter[str] = Counter()
        fns: Counter[str] = Counter()
        for _ in range(max(N_CASES, 20) * 8):
            args = _valid(rng)
            fns[args["fn"]] += 1
            if rng.random() < 0.35:
                args = _fault(rng, args)
            outcomes[compare(ctx, OracleStore([], []), "compute", args)] += 1
    finally:
        store.close()
    assert set(fns) == {"group", "quantile", "distinct"}, fns
    assert outcomes["ok"] >= N_CASES and outcomes["E_SCHEMA"] and outcomes["E_INVALID_ARG"], outcomes


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory):
    store = Store.create(tmp_path_factory.mktemp("group") / "s", "duckdb", now=counter_clock())
    yield OpContext(store)
    store.close()


def both(ctx: OpContext, **args: Any) -> dict[str, Any]:
    assert compare(ctx, OracleStore([], []), "compute", args) == "ok"
    return call(ctx, "compute", args)["payload"]


DELAYS = [
    {"src": "n10", "dst": "n1", "delay": 30},
    {"src": "n9", "dst": "n1", "delay": 5},
    {"src": "n10", "dst": "n2", "delay": 10},
    {"src": "n10", "dst": "n1", "delay": None},  # a left join's unmatched row: skipped by the numbers
    {"src": "n9", "dst": "n3", "delay": 7.5},
    {"src": None, "dst": "n3", "delay": 1},
    {"src": "n10", "dst": "n3", "delay": "late"},
]


def test_group_known_answers(ctx: OpContext) -> None:
    aggs = [
        {"fn": "count"},
        {"fn": "count_distinct", "field": "dst"},
        {"fn": "sum", "field": "delay"},
        {"fn": "min", "field": "delay"},
        {"fn": "max", "field": "delay"},
        {"fn": "mean", "field": "delay"},
        {"fn": "median", "field": "delay"},
        {"fn": "quantile", "field": "delay", "q": 0.9, "as": "p90"},
        {"fn": "first", "field": "dst"},
        {"fn": "last", "field": "delay"},
    ]
    out = both(ctx, fn="group", input=DELAYS, by="src", aggregates=aggs)
    # natural key order (n9 before n10), the null group last; 4 rows of n10, one null and one string delay
    assert out["value"] == out["rows_total"] == 3
    assert out["rows"] == [
        {"src": "n9", "count": 2, "count_distinct_dst": 2, "sum_delay": 12.5, "min_delay": 5,
         "max_delay": 7.5, "mean_delay": 6.25, "median_delay": 6.25, "p90": 7.5, "first_dst": "n1",
         "last_delay": 7.5},
        {"src": "n10", "count": 4, "count_distinct_dst": 3, "sum_delay": 40, "min_delay": 10,
         "max_delay": 30, "mean_delay": 20, "median_delay": 20, "p90": 30, "first_dst": "n1",
         "last_delay": "late"},
        {"src": None, "count": 1, "count_distinct_dst": 1, "sum_delay": 1, "min_delay": 1, "max_delay": 1,
         "mean_delay": 1, "median_delay": 1, "p90": 1, "first_dst": "n3", "last_delay": 1},
    ]  # fmt: skip


def test_group_keys_default_count_and_two_keys(ctx: OpContext) -> None:
    rows = [{"k": 1}, {"k": 1.0}, {"k": "1"}, {"k": 0.1 + 0.2}, {"k": 0.3}, {"k": True}, {"k": None}]
    out = both(ctx, fn="group", input=rows, by=["k"])
    # 1 and 1.0 are one group (the int), 0.1 + 0.2 is 0.3; numbers, then strings, then the rest, null last
    assert out["rows"] == [{"k": 0.3, "count": 2}, {"k": 1, "count": 2}, {"k": "1", "count": 1},
                           {"k": True, "count": 1}, {"k": None, "count": 1}]  # fmt: skip
    out = both(ctx, fn="group", input=DELAYS, by=["dst", "src"], aggregates=[{"fn": "count", "as": "n"}])
    assert [(r["dst"], r["src"], r["n"]) for r in out["rows"]] == [
        ("n1", "n9", 1), ("n1", "n10", 2), ("n2", "n10", 1), ("n3", "n9", 1), ("n3", "n10", 1),
        ("n3", None, 1),
    ]  # fmt: skip
    empty = both(ctx, fn="group", input=[], by="k")
    assert (empty["value"], empty["rows"], empty["rows_total"]) == (0, [], 0)


def test_group_order_by_nulls_last_and_ties_by_key(ctx: OpContext) -> None:
    aggs = [{"fn": "count"}, {"fn": "max", "field": "delay"}]
    desc = [{"field": "count", "desc": True}]
    down = both(ctx, fn="group", input=DELAYS, by="dst", aggregates=aggs, order_by=desc)
    assert [(r["dst"], r["count"]) for r in down["rows"]] == [("n1", 3), ("n3", 3), ("n2", 1)]  # ties: keys
    up = both(ctx, fn="group", input=[*DELAYS, {"src": "x", "dst": "n4", "delay": None}], by="dst",
              aggregates=aggs, order_by=[{"field": "max_delay", "desc": True}])  # fmt: skip
    assert [r["dst"] for r in up["rows"]] == ["n1", "n2", "n3", "n4"]  # 30, 10, 7.5, then null
    up = both(ctx, fn="group", input=[*DELAYS, {"src": "x", "dst": "n4", "delay": None}], by="dst",
              aggregates=aggs, order_by=[{"field": "max_delay"}])  # fmt: skip
    assert [r["dst"] for r in up["rows"]] == ["n3", "n2", "n1", "n4"]  # null last ascending too


def test_quantile_is_the_nearest_rank(ctx: OpContext) -> None:
    ten = [5, 1, 2, 3, 4, 6, 7, 8, 9, 10]
    for q, want in ((0.9, 9), (0.7, 7), (0.5, 5), (0.95, 10), (0.01, 1), (0, 1), (1, 10), (1 / 3, 4)):
        assert both(ctx, fn="quantile", input=ten, q=q)["value"] == want, q
    assert both(ctx, fn="quantile", input=[], q=0.9)["value"] is None
    assert both(ctx, fn="quantile", input=[{"d": 0.1}, {"d": 0.2}], field="d", q=0.5)["value"] == 0.1
    assert both(ctx, fn="quantile", input=[0.1 + 0.2], q=1)["value"] == 0.3


def test_distinct_values_ascending(ctx: OpContext) -> None:
    out = both(ctx, fn="distinct", input=[{"x": "n9"}, {"x": "n10"}, {"x": None}, {"x": "n9"}], field="x")
    assert (out["value"], out["rows"]) == (2, ["n10", "n9"])  # code-point order, as the set ops
    out = both(ctx, fn="distinct", input=[1, 1.0, 0.1 + 0.2, 0.3, -2])
    assert out["rows"] == [-2, 0.3, 1] and out["value"] == 3


def test_per_sender_median_delay_join_derive_group(ctx: OpContext) -> None:
    """The manual's example: per sender, the median reply delay of its reciprocated pairs."""
    first = [{"src": "a", "dst": "b", "first_t": 10}, {"src": "b", "dst": "a", "first_t": 40},
             {"src": "a", "dst": "c", "first_t": 20}, {"src": "c", "dst": "a", "first_t": 21},
             {"src": "a", "dst": "d", "first_t": 5}, {"src": "d", "dst": "a", "first_t": 105}]  # fmt: skip
    joined = both(ctx, fn="join", a=first, b=first, on=[{"a": "src", "b": "dst"}, {"a": "dst", "b": "src"}])
    delay = {"op": "sub", "left": "b_first_t", "right": "first_t"}
    derived = both(ctx, fn="derive", input=joined["rows"], expr=delay, **{"as": "delay"})
    median = [{"fn": "median", "field": "delay"}]
    out = both(ctx, fn="group", input=derived["rows"], by="src", aggregates=median)
    assert out["rows"] == [{"src": "a", "median_delay": 30}, {"src": "b", "median_delay": -30},
                           {"src": "c", "median_delay": -1}, {"src": "d", "median_delay": -100}]  # fmt: skip
    p90 = both(ctx, fn="quantile", input=[r["delay"] for r in derived["rows"]], q=0.9)
    assert p90["value"] == 100


def test_a_field_a_row_lacks_is_null(ctx: OpContext) -> None:
    """As in derive: a left join against an empty b gives rows without b's fields, and a group over them
    reads those as null (a null key is one group, last; numeric aggregates skip it; count counts the row)."""
    rows = [{"year": 2011, "n": 3}, {"year": 2012}, {"year": 2011, "n": 4, "self": 1}]
    got = both(ctx, fn="group", input=rows, by="year", aggregates=[{"fn": "sum", "field": "self"},
               {"fn": "count"}, {"fn": "max", "field": "n"}, {"fn": "first", "field": "self"}])  # fmt: skip
    assert got["rows"] == [
        {"year": 2011, "sum_self": 1, "count": 2, "max_n": 4, "first_self": None},
        {"year": 2012, "sum_self": 0, "count": 1, "max_n": None, "first_self": None},
    ]
    by_missing = both(ctx, fn="group", input=rows, by="self")["rows"]
    assert by_missing == [{"self": 1, "count": 1}, {"self": None, "count": 2}]


def test_count_of_a_field_counts_its_non_null_values(ctx: OpContext) -> None:
    """SQL's COUNT(x): after a left join, per key the rows that matched (a missing or null field is not
    counted); in a group, in a rolling frame, and on the fast and general paths alike."""
    rows = [{"k": "a", "m": 1}, {"k": "a"}, {"k": "a", "m": None}, {"k": "b", "m": "x"}, {"k": "b", "m": 0}]
    got = both(
        ctx, fn="group", input=rows, by="k", aggregates=[{"fn": "count"}, {"fn": "count", "field": "m"}]
    )
    assert got["rows"] == [{"k": "a", "count": 3, "count_m": 1}, {"k": "b", "count": 2, "count_m": 2}]
    full = [{**r, "m": r.get("m")} for r in rows]  # every row has the field: the vectorized path
    assert both(ctx, fn="group", input=full, by="k", aggregates=[{"fn": "count", "field": "m"}])["rows"] == [
        {"k": "a", "count_m": 1},
        {"k": "b", "count_m": 2},
    ]
    rolled = both(ctx, fn="rolling", input=rows, frame=[None, 0], aggregates=[{"fn": "count", "field": "m"}])
    assert [r["count_m"] for r in rolled["rows"]] == [1, 1, 1, 2, 3]


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"fn": "group", "input": DELAYS}, "E_SCHEMA", "by"),
    ({"fn": "group", "input": DELAYS, "by": 3}, "E_SCHEMA", "by"),
    ({"fn": "group", "input": DELAYS, "by": []}, "E_INVALID_ARG", "by"),
    ({"fn": "group", "input": DELAYS, "by": ["src", "dst", "delay", "x"]}, "E_INVALID_ARG", "by"),
    ({"fn": "group", "input": DELAYS, "by": ["src", "src"]}, "E_INVALID_ARG", "by"),
    ({"fn": "group", "input": [*DELAYS, 3], "by": "src"}, "E_INVALID_ARG", "input[7]"),
    ({"fn": "group", "input": "rows", "by": "src"}, "E_SCHEMA", "input"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": []}, "E_INVALID_ARG", "aggregates"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": {"fn": "count"}}, "E_SCHEMA", "aggregates"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": ["count"]}, "E_SCHEMA", "aggregates.0"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "count", "x": 1}]},
     "E_SCHEMA", "aggregates.0.x"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"field": "delay"}]},
     "E_SCHEMA", "aggregates.0.fn"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "avg", "field": "delay"}]},
     "E_INVALID_ARG", "aggregates.0.fn"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "sum"}]},
     "E_INVALID_ARG", "aggregates.0.field"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "sum", "field": 3}]},
     "E_SCHEMA", "aggregates.0.field"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "quantile", "field": "delay"}]},
     "E_INVALID_ARG", "aggregates.0.q"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "quantile", "field": "delay",
                                                                   "q": 2}]},
     "E_INVALID_ARG", "aggregates.0.q"),
    ({"fn": "group", "input": DELAYS, "by": "src",
      "aggregates": [{"fn": "mean", "field": "delay", "q": 0.5}]}, "E_INVALID_ARG", "aggregates.0.q"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "count", "as": "src"}]},
     "E_INVALID_ARG", "aggregates.0"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "count"}, {"fn": "count"}]},
     "E_INVALID_ARG", "aggregates.1"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "count", "as": "n-1"}]},
     "E_INVALID_ARG", "aggregates.0.as"),
    ({"fn": "group", "input": DELAYS, "by": "src", "aggregates": [{"fn": "count", "as": 1}]},
     "E_SCHEMA", "aggregates.0.as"),
    ({"fn": "group", "input": DELAYS, "by": "src", "order_by": [{"field": "nope"}]},
     "E_INVALID_ARG", "order_by.0.field"),
    ({"fn": "group", "input": DELAYS, "by": "src", "order_by": [{"field": "count", "desc": "yes"}]},
     "E_SCHEMA", "order_by.0.desc"),
    ({"fn": "group", "input": DELAYS, "by": "src", "order_by": "count"}, "E_SCHEMA", "order_by"),
    ({"fn": "group", "input": DELAYS, "by": "src", "field": "delay"}, "E_INVALID_ARG", "field"),
    ({"fn": "count", "input": DELAYS, "by": "src"}, "E_INVALID_ARG", "by"),
    ({"fn": "quantile", "input": [1, 2]}, "E_SCHEMA", "q"),
    ({"fn": "quantile", "input": [1, 2], "q": "0.9"}, "E_SCHEMA", "q"),
    ({"fn": "quantile", "input": [1, 2], "q": True}, "E_SCHEMA", "q"),
    ({"fn": "quantile", "input": [1, 2], "q": 1.5}, "E_INVALID_ARG", "q"),
    ({"fn": "quantile", "input": [1, "x"], "q": 0.5}, "E_INVALID_ARG", "input[1]"),
    ({"fn": "median", "input": [1, 2], "q": 0.5}, "E_INVALID_ARG", "q"),
    ({"fn": "distinct", "input": ["a", 1]}, "E_INVALID_ARG", "input[1]"),
    ({"fn": "distinct", "input": [True]}, "E_INVALID_ARG", "input[0]"),
    ({"fn": "distinct", "input": [{"x": 1}], "field": "y"}, "E_INVALID_ARG", "field"),
    ({"fn": "distinct", "input": [1], "q": 0.5}, "E_INVALID_ARG", "q"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "field"), BAD, ids=[f"{i}-{c}" for i, (_, c, _) in enumerate(BAD)])
def test_refusals_with_code_and_field(ctx: OpContext, args: dict[str, Any], code: str, field: str) -> None:
    before = copy.deepcopy(args)
    assert compare(ctx, OracleStore([], []), "compute", args) == code
    with pytest.raises(TGMSError) as err:
        call(ctx, "compute", args)
    assert err.value.code == code and err.value.to_dict()["details"]["field"] == field
    assert args == before  # a malformed call changes nothing, its arguments included


def test_calls_change_nothing_and_are_deterministic(ctx: OpContext) -> None:
    rows = copy.deepcopy(DELAYS)
    args = {"fn": "group", "input": rows, "by": "src", "aggregates": [{"fn": "last", "field": "delay"}],
            "order_by": [{"field": "src", "desc": True}]}  # fmt: skip
    first = dumps(call(ctx, "compute", copy.deepcopy(args))["payload"])
    assert dumps(call(ctx, "compute", copy.deepcopy(args))["payload"]) == first  # same input, same bytes
    call(ctx, "compute", args)
    assert rows == DELAYS  # the input rows are read, never changed
    with pytest.raises(TGMSError):
        call(ctx, "compute", {**args, "by": "zz"})
    assert rows == DELAYS and dumps(call(ctx, "compute", copy.deepcopy(args))["payload"]) == first


def test_new_fns_reduce_lists() -> None:
    traits = get_operator("compute").traits
    for fn in ("group", "quantile", "distinct"):
        assert traits.reduces_list({"fn": fn}), fn
    assert traits.rows_fields({"fn": "group", "by": ["src", "dst"], "aggregates": [{"fn": "count", "as": "n"},
                              {"fn": "quantile", "field": "delay", "q": 0.9}]}) == (
        "src", "dst", "n", "quantile_delay")  # fmt: skip
    assert traits.rows_fields({"fn": "group", "by": "src"}) == ("src", "count")
    assert traits.rows_fields({"fn": "group", "by": {"$ref": "s1.value"}}) is None
    assert traits.rows_fields({"fn": "derive", "as": "x"}) is None
