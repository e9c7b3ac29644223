"""compute: fast path == brute-force oracle (randomized), plus hand cases.

Randomized cases compare ``envelope.call(...)["payload"]`` with the oracle's paged payload (same canonical
payload, or the same error code), ≥ TGMS_ORACLE_CASES calls; arguments are valid most of the time and
otherwise carry exactly one fault, so that error codes are compared case by case.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, counter_clock
from tgms.engine.errors import TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.operators.oracle.evolution import ALLEN_RELATIONS, allen
from tgms.engine.store import Store
from tgms.engine.timeutil import OPEN_END

# ----------------------------------------------------------------------------------- random compute

FNS = ("count", "sum", "min", "max", "mean", "median", "topk", "filter", "interval_relation",
       "ratio", "diff", "percent", "pct_change", "union", "intersection", "difference", "record")  # fmt: skip


def _num(rng: random.Random) -> int | float:
    r = rng.random()
    if r < 0.4:
        return rng.randint(-5, 9)
    if r < 0.8:
        return round(rng.uniform(-5, 9), rng.choice([1, 2, 3]))
    return rng.choice([0.1, 0.2, 0.3, 0.1 + 0.2, 1 / 3, 2.0, -0.0, 1e-10, 123456789.123456789])


def _interval(rng: random.Random) -> Any:
    s = rng.randint(0, 8)
    e = s + rng.randint(1, 5)
    return rng.choice([s, [s, e], {"vt_s": s, "vt_e": e, "eid": 1}, {"t_a": s, "t_b": e}])


def _compute_valid(rng: random.Random) -> dict[str, Any]:
    fn = rng.choice(FNS)
    n = rng.randint(0, 7)
    use_field = rng.random() < 0.4
    nums = [_num(rng) for _ in range(n)]
    items: list[Any] = [{"v": x, "i": i} for i, x in enumerate(nums)] if use_field else nums
    args: dict[str, Any] = {"fn": fn}
    if fn in ("count", "sum", "min", "max", "mean", "median", "topk", "filter"):
        args["input"] = items
        if use_field:
            args["field"] = "v"
        if fn == "count" and rng.random() < 0.5:
            args["input"] = [rng.choice(["a", None, {}, [1], True]) for _ in range(n)]
            args.pop("field", None)
        if fn == "topk" and rng.random() < 0.7:
            args["k"] = rng.randint(1, 8)
        elif fn == "topk" and rng.random() < 0.5:
            args["fraction"] = rng.choice([0.01, 0.25, 1 / 3, 0.5, 1])
        if fn == "topk" and rng.random() < 0.4:
            args["order"] = rng.choice(["asc", "desc"])
        if fn == "topk" and use_field and rng.random() < 0.5:
            names = ["n9", "n10", "n1", "x2y10", "x2y9", "", "n09", 3, 2.5, None]
            args["input"] = [{**it, "u": rng.choice(names)} for it in items]
            args["tie_by"] = "u"
        if fn == "filter":
            args["cmp"] = rng.choice(["==", "!=", "<", "<=", ">", ">=", "eq", "ne", "lt", "le", "gt", "ge"])
            args["value"] = _num(rng)
            if rng.random() < 0.25:  # strings: equality and code-point order
                words = ["a", "b", "B", "ab", "é", "1"]
                args["input"] = [{"v": rng.choice(words)} for _ in range(n)]
                args["field"] = "v"
                args["value"] = rng.choice(words)
            if rng.random() < 0.1 and args["cmp"] in ("==", "!=", "eq", "ne"):
                args["input"] = [rng.choice([1, "1", True, None, {"a": 0.3}, [1]]) for _ in range(n)]
                args.pop("field", None)
                args["value"] = rng.choice([1, "1", {"a": 0.1 + 0.2}, [1.0]])
            if rng.random() < 0.15 and "field" not in args:  # nulls among numbers: an ordering drops them
                args["input"] = [rng.choice([it, None]) for it in args["input"]]
            if rng.random() < 0.1:  # null tests: no value; a row without the field counts as null
                args["cmp"] = rng.choice(["exists", "missing"])
                del args["value"]
                if "field" in args:
                    args["input"] = [rng.choice([it, {}, {args["field"]: None}]) for it in args["input"]]
    elif fn == "interval_relation":
        a, b = _interval(rng), _interval(rng)
        args.update({"a": a, "b": b} if rng.random() < 0.7 else {"input": [a, b]})
    elif fn == "record":
        pool = [_num(rng), _num(rng), "n9", True, None, 0.1 + 0.2]
        args["fields"] = {f"p{i}": rng.choice(pool) for i in range(rng.randint(1, 4))}
    elif fn in ("ratio", "diff", "percent", "pct_change"):
        a, b = _num(rng), rng.choice([_num(rng), 0])
        args.update({"a": a, "b": b} if rng.random() < 0.7 else {"input": [a, b]})
    else:
        pool: list[Any] = rng.choice([["n1", "n2", "n3", "a", "B"], [1, 2, 2.0, 0.5, 0.1 + 0.2, 0.3, -1]])
        a = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        b = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        if use_field:
            a, b = [{"v": x} for x in a], [{"v": x} for x in b]
            args["field"] = "v"
        args.update({"a": a, "b": b} if rng.random() < 0.7 else {"input": [a, b]})
    if rng.random() < 0.2:
        args["limit"] = rng.randint(1, 3)
    return args


def _compute_fault(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Inject one fault appropriate to the fn."""
    fn = args["fn"]
    takes_input = fn in ("count", "sum", "min", "max", "mean", "median", "topk", "filter")
    pairwise = fn in ("ratio", "diff", "percent", "pct_change", "interval_relation")
    faults = ["unknown", "fn_missing", "fn_type", "fn_unknown", "not_taken", "field_type", "limit"]
    if takes_input:
        faults += ["input_type", "input_missing", "elem_field"] + (["elem_type"] if fn != "count" else [])
    if fn == "topk":
        faults += ["k_range", "k_type", "k_and_fraction", "fraction_range", "order_unknown", "tie_by_missing"]
    if fn == "filter":
        faults += ["cmp_unknown", "cmp_type", "cmp_missing", "value_missing", "order_types"]
    if pairwise:
        faults += ["only_a", "both_forms", "input_len", "operand"]
    if fn in ("union", "intersection", "difference"):
        faults += ["set_not_list", "set_mixed", "set_elem"]
    f = rng.choice(faults)
    a = dict(args)
    if f == "unknown":
        a["zz"] = 1
    elif f == "fn_missing":
        del a["fn"]
    elif f == "fn_type":
        a["fn"] = rng.choice([3, ["sum"], True])
    elif f == "fn_unknown":
        a["fn"] = rng.choice(["avg", "SUM", "", "stddev"])
    elif f == "not_taken":
        taken = {"topk": "k", "filter": "cmp"}.get(fn)
        a[rng.choice([k for k in ("k", "cmp", "value", "a", "field") if k != taken and k not in a])] = 1
    elif f == "field_type":
        a["field"] = 7
    elif f == "k_and_fraction":
        a.update(k=2, fraction=0.5)
    elif f == "fraction_range":
        a.pop("k", None)
        a["fraction"] = rng.choice([0, -0.5, 1.5])
    elif f == "order_unknown":
        a["order"] = rng.choice(["up", "DESC", 1])
    elif f == "tie_by_missing":
        a["tie_by"] = "nope"
    elif f == "limit":
        a["limit"] = rng.choice([0, 10_001])
    elif f == "input_type":
        a["input"] = rng.choice(["x", 3, {"v": 1}])
    elif f == "input_missing":
        a.pop("input", None)
    elif f == "elem_field":
        a["input"] = [*a["input"], {"w": 1}]
        a["field"] = "v"
    elif f == "elem_type":
        a["input"] = [*a["input"], rng.choice(["3", True, None, [1]])]
        a.pop("field", None)
    elif f == "k_range":
        a["k"] = rng.choice([0, -1, 10_001])
    elif f == "k_type":
        a["k"] = rng.choice(["3", 2.0, True])
    elif f == "cmp_unknown":
        a["cmp"] = rng.choice(["=", "~", "<>", "EQ"])
    elif f == "cmp_type":
        a["cmp"] = rng.choice([1, ["=="]])
    elif f == "cmp_missing":
        del a["cmp"]
    elif f == "value_missing":
        a["value"] = None
    elif f == "order_types":
        a.update(input=[1, "a"], cmp="<", value=rng.choice([0, "b"]))
        a.pop("field", None)
    elif f == "only_a":
        a.pop("input", None)
        a.pop("b", None)
        a["a"] = 1
    elif f == "both_forms":
        a.update(a=1, b=2, input=[1, 2])
    elif f == "input_len":
        a.pop("a", None)
        a.pop("b", None)
        a["input"] = rng.choice([[1], [1, 2, 3], "12"])
    elif f == "operand":
        a.pop("input", None)
        a["a"] = rng.choice(["1", True, None, [5, 5], [3, 1], {"vt_s": 1}, [1.5, 3]])
        a["b"] = 2
        if a["a"] is None:
            del a["a"]
    elif f == "set_not_list":
        a.pop("input", None)
        a.update(a=rng.choice(["n1", 1, {"v": 1}]), b=["n1"])
    elif f == "set_mixed":
        a.pop("input", None)
        a.pop("field", None)
        a.update(a=["n1", 1], b=[]) if rng.random() < 0.5 else a.update(a=["n1"], b=[2])
    else:  # set_elem
        a.pop("input", None)
        a.pop("field", None)
        a.update(a=["n1", rng.choice([True, None, [1], {"v": 1}])], b=["n2"])
    return a


def test_compute_matches_oracle(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "s", "duckdb", now=counter_clock())
    try:
        ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
        rng = random.Random(7)
        outcomes: Counter[str] = Counter()
        fns: Counter[str] = Counter()
        for _ in range(max(N_CASES, 16) * 4):
            args = _compute_valid(rng)
            fns[args["fn"]] += 1
            if rng.random() < 0.35:
                args = _compute_fault(rng, args)
            outcomes[compare(ctx, oracle, "compute", args)] += 1
    finally:
        store.close()
    assert set(fns) == set(FNS), fns
    assert outcomes["ok"] >= N_CASES, outcomes
    assert outcomes["E_SCHEMA"] and outcomes["E_INVALID_ARG"], outcomes


# ---------------------------------------------------------------------------------------- hand cases


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory):
    store = Store.create(tmp_path_factory.mktemp("compute") / "s", "duckdb", now=counter_clock())
    yield OpContext(store)
    store.close()


def fast(ctx: OpContext, op: str, **args: Any) -> dict[str, Any]:
    return call(ctx, op, args)["payload"]


def both(ctx: OpContext, **args: Any) -> dict[str, Any]:
    """The compute payload from the fast path, checked against the oracle."""
    compare(ctx, OracleStore([], []), "compute", args)
    return fast(ctx, "compute", **args)


ROWS = [{"id": "a", "v": 3}, {"id": "b", "v": 5}, {"id": "c", "v": 5}, {"id": "d", "v": 1}]

HAND: list[tuple[dict[str, Any], Any, list[Any] | None]] = [
    ({"fn": "count", "input": ROWS}, 4, []),
    ({"fn": "count", "input": ROWS, "field": "id"}, 4, []),
    ({"fn": "sum", "input": [0.1, 0.2]}, 0.3, []),  # exact: 1/10 + 2/10 = 3/10 (floats: 0.30000000000000004)
    ({"fn": "sum", "input": [0.1] * 10}, 1, []),  # exact 1, an int (floats: 0.9999999999999999)
    ({"fn": "sum", "input": [0.1 + 0.2, -0.3]}, 0, []),  # inputs enter canonicalized
    ({"fn": "sum", "input": []}, 0, []),
    ({"fn": "sum", "input": ROWS, "field": "v"}, 14, []),
    ({"fn": "min", "input": ROWS, "field": "v"}, 1, []),
    ({"fn": "max", "input": [2, 7.5, -1]}, 7.5, []),
    ({"fn": "max", "input": []}, None, []),
    ({"fn": "mean", "input": [1, 2, 2]}, 1.666666667, []),  # 5/3 rounded to 9 decimals
    ({"fn": "mean", "input": [0.1, 0.2]}, 0.15, []),
    ({"fn": "mean", "input": []}, None, []),
    ({"fn": "median", "input": ROWS, "field": "v"}, 4, []),  # sorted 1,3,5,5 -> (3+5)/2
    ({"fn": "median", "input": [3, 1, 2]}, 2, []),
    ({"fn": "median", "input": [1, 2]}, 1.5, []),
    ({"fn": "median", "input": []}, None, []),
    ({"fn": "topk", "input": ROWS, "field": "v", "k": 2}, 2, [ROWS[1], ROWS[2]]),  # tie kept in input order
    ({"fn": "topk", "input": [1, 9, 4]}, 3, [9, 4, 1]),  # k defaults to 10
    ({"fn": "topk", "input": [1, 9, 4], "order": "asc", "k": 2}, 2, [1, 4]),  # bottom-k
    ({"fn": "topk", "input": list(range(200)), "fraction": 0.01}, 2, [199, 198]),  # the top 1%, rounded up
    ({"fn": "topk", "input": [5, 6, 7], "fraction": 0.01}, 1, [7]),  # at least one of a non-empty input
    (
        {
            "fn": "topk",
            "input": [{"u": "n10", "v": 1}, {"u": "n9", "v": 1}, {"u": "n2", "v": 0}],
            "field": "v",
            "tie_by": "u",
            "k": 2,
        },
        2,
        [{"u": "n9", "v": 1}, {"u": "n10", "v": 1}],
    ),  # natural order: n9 < n10
    ({"fn": "topk", "input": [0.3, 0.1 + 0.2, 0.31], "k": 2}, 2, [0.31, 0.3]),
    ({"fn": "filter", "input": ROWS, "field": "v", "cmp": ">=", "value": 3}, 3, ROWS[:3]),
    ({"fn": "filter", "input": ROWS, "field": "id", "cmp": "eq", "value": "d"}, 1, [ROWS[3]]),
    ({"fn": "filter", "input": [1, 2.0, "2", True], "cmp": "==", "value": 2}, 1, [2]),
    ({"fn": "filter", "input": [1, "1", True], "cmp": "!=", "value": 1}, 2, ["1", True]),
    ({"fn": "filter", "input": [0.1 + 0.2], "cmp": ">", "value": 0.3}, 0, []),
    ({"fn": "filter", "input": ["b", "B", "é"], "cmp": "gt", "value": "a"}, 2, ["b", "é"]),  # code points
    ({"fn": "filter", "input": [{"a": [1, 0.1 + 0.2]}], "cmp": "==", "value": {"a": [1.0, 0.3]}}, 1, None),
    ({"fn": "ratio", "a": 1, "b": 3}, 0.333333333, []),
    ({"fn": "ratio", "input": [6, 3]}, 2, []),
    ({"fn": "ratio", "a": 1, "b": 0}, None, []),
    ({"fn": "diff", "a": 0.3, "b": 0.1}, 0.2, []),  # exact: 3/10 - 1/10 (floats: 0.19999999999999998)
    ({"fn": "diff", "input": [1, 0.1 + 0.2]}, 0.7, []),
    ({"fn": "percent", "a": 1, "b": 4}, 25, []),
    ({"fn": "percent", "a": 1, "b": 3}, 33.333333333, []),
    ({"fn": "percent", "a": 1, "b": 0.0}, None, []),
    ({"fn": "pct_change", "a": 150, "b": 100}, 50, []),
    ({"fn": "pct_change", "a": 90, "b": 120}, -25, []),
    ({"fn": "pct_change", "a": 5, "b": 0}, None, []),
    ({"fn": "union", "a": ["n3", "n1"], "b": ["n2", "n1"]}, 3, ["n1", "n2", "n3"]),
    ({"fn": "intersection", "a": ROWS, "b": [{"id": "b"}, {"id": "z"}], "field": "id"}, 1, ["b"]),
    ({"fn": "difference", "input": [[3, 1, 2], [2.0]]}, 2, [1, 3]),
    ({"fn": "union", "a": [1, 1.0, 0.5], "b": [0.1 + 0.2, 0.3]}, 3, [0.3, 0.5, 1]),  # 1 = 1.0, one 0.3
    ({"fn": "union", "a": [], "b": []}, 0, []),
    # record: one row of named single values (a tuple answer); numbers leave in their canonical form
    (
        {"fn": "record", "fields": {"sent": 3, "share": 0.1 + 0.2, "who": "n9", "ok": True, "none": None}},
        1,
        [{"sent": 3, "share": 0.3, "who": "n9", "ok": True, "none": None}],
    ),
    ({"fn": "record", "fields": {"n": 2.0}}, 1, [{"n": 2}]),
]


@pytest.mark.parametrize(
    ("args", "value", "rows"), HAND, ids=[f"{a['fn']}-{i}" for i, (a, _, _) in enumerate(HAND)]
)
def test_compute_hand_cases(ctx: OpContext, args: dict[str, Any], value: Any, rows: list[Any] | None) -> None:
    out = both(ctx, **args)
    assert out["value"] == value and type(out["value"]) is type(value)
    if rows is not None:
        assert out["rows"] == rows
    assert out["rows_total"] == len(out["rows"])


def test_compute_exact_not_float(ctx: OpContext) -> None:
    assert 0.1 + 0.2 != 0.3 and sum([0.1] * 10) != 1  # the float trap the exact path avoids
    assert both(ctx, fn="sum", input=[0.1, 0.2])["value"] == 0.3
    assert both(ctx, fn="filter", input=[0.1 + 0.2], cmp="==", value=0.3)["value"] == 1
    big = 10**30 + 1  # ints stay exact beyond 2**53
    assert both(ctx, fn="sum", input=[big, 1])["value"] == big + 1
    assert both(ctx, fn="diff", a=big, b=10**30)["value"] == 1


def test_compute_pages_rows(ctx: OpContext) -> None:
    out = both(ctx, fn="topk", input=list(range(10)), k=5, limit=2)
    assert out["rows"] == [9, 8] and out["rows_total"] == 5 and out["value"] == 5 and out["truncated"]
    nxt = call(
        ctx, "compute", {"fn": "topk", "input": list(range(10)), "k": 5, "limit": 2, "cursor": out["cursor"]}
    )
    assert nxt["payload"]["rows"] == [7, 6]


def test_topk_fraction_one_sorts_past_ten_thousand(ctx: OpContext) -> None:
    """ "fraction: 1" is the way to sort (the answer to a ``sort`` fn): over 25,000 rows it orders them all,
    paged, where a literal k stops at 10,000 (a bitcoin-otc plan sorted 35,592 events this way)."""
    rows = [{"u": f"n{i % 97}", "v": (i * 7919) % 1000} for i in range(25_000)]
    out = both(ctx, fn="topk", input=rows, field="v", order="asc", tie_by="u", fraction=1, limit=3)
    assert out["value"] == out["rows_total"] == 25_000 and out["truncated"]
    assert [r["v"] for r in out["rows"]] == [0, 0, 0]
    assert [r["u"] for r in out["rows"]] == sorted(
        {r["u"] for r in rows if r["v"] == 0}, key=lambda u: int(u[1:])
    )[:3]


ALLEN_CASES = {  # A = [0, 10) against B
    "before": [20, 30],
    "after": {"t_a": -9, "t_b": -1},
    "meets": [10, 20],
    "met_by": [-5, 0],
    "overlaps": [5, 15],
    "overlapped_by": [-5, 5],
    "starts": [0, 20],
    "started_by": [0, 5],
    "during": [-1, 11],
    "contains": {"vt_s": 2, "vt_e": 8},
    "finishes": [-10, 10],
    "finished_by": [5, 10],
    "equals": [0, 10],
}


@pytest.mark.parametrize("relation", ALLEN_RELATIONS)
def test_every_allen_relation(ctx: OpContext, relation: str) -> None:
    out = both(ctx, fn="interval_relation", a=[0, 10], b=ALLEN_CASES[relation])
    assert out["value"] == relation and out["rows"] == []


def test_allen_instants_and_exhaustive(ctx: OpContext) -> None:
    from tgms.engine.operators.compute import allen_relation

    assert both(ctx, fn="interval_relation", a=5, b=6)["value"] == "meets"  # [5,6) and [6,7)
    assert both(ctx, fn="interval_relation", a=5, b=7)["value"] == "before"
    assert both(ctx, fn="interval_relation", input=[5, [0, 9]])["value"] == "during"
    assert both(ctx, fn="interval_relation", a=[0, OPEN_END], b=[3, OPEN_END])["value"] == "finished_by"
    ivs = [(s, e) for s in range(5) for e in range(s + 1, 6)]
    seen = Counter(allen_relation(a, b) for a, b in itertools.product(ivs, ivs))
    for a, b in itertools.product(ivs, ivs):
        assert allen_relation(a, b) == allen(a[0], a[1], b[0], b[1])
    assert set(seen) == set(ALLEN_RELATIONS)


BAD: list[tuple[dict[str, Any], str]] = [
    ({"input": [1]}, "E_SCHEMA"),  # fn missing
    ({"fn": None, "input": [1]}, "E_SCHEMA"),
    ({"fn": 3}, "E_SCHEMA"),
    ({"fn": "avg", "input": [1]}, "E_INVALID_ARG"),
    ({"fn": "avg", "zz": 1}, "E_SCHEMA"),  # unknown names come first
    ({"fn": "sum", "input": [1], "k": 3}, "E_INVALID_ARG"),  # k is not an argument of sum
    ({"fn": "ratio", "a": 1, "b": 2, "field": 5}, "E_INVALID_ARG"),  # not taken beats wrong type
    ({"fn": "sum", "input": [1], "field": 5}, "E_SCHEMA"),
    ({"fn": "sum"}, "E_SCHEMA"),
    ({"fn": "sum", "input": "1,2"}, "E_SCHEMA"),
    ({"fn": "sum", "input": ["x"]}, "E_INVALID_ARG"),
    ({"fn": "sum", "input": [True]}, "E_INVALID_ARG"),  # bool is not a number
    ({"fn": "mean", "input": [None]}, "E_INVALID_ARG"),  # null is not a number
    ({"fn": "sum", "input": ROWS, "field": "missing"}, "E_INVALID_ARG"),
    ({"fn": "count", "input": [1], "field": "v"}, "E_INVALID_ARG"),
    ({"fn": "topk", "input": [1], "k": 0}, "E_INVALID_ARG"),
    ({"fn": "topk", "input": [1], "k": "2"}, "E_SCHEMA"),
    ({"fn": "topk", "input": [{"w": 1}], "field": "v", "k": "2"}, "E_INVALID_ARG"),  # the oracle's order
    ({"fn": "topk", "input": ["a"]}, "E_INVALID_ARG"),
    ({"fn": "filter", "input": [1], "cmp": "=", "value": 1}, "E_INVALID_ARG"),
    ({"fn": "filter", "input": [1], "cmp": 1, "value": 1}, "E_SCHEMA"),
    ({"fn": "filter", "input": [1], "value": 1}, "E_SCHEMA"),
    ({"fn": "filter", "input": [1], "cmp": "<"}, "E_SCHEMA"),
    ({"fn": "filter", "input": ["a"], "cmp": "<", "value": 1}, "E_INVALID_ARG"),
    ({"fn": "filter", "input": [[1]], "cmp": "<", "value": [2]}, "E_INVALID_ARG"),
    ({"fn": "ratio", "a": 1}, "E_SCHEMA"),
    ({"fn": "ratio"}, "E_SCHEMA"),
    ({"fn": "ratio", "input": [1, 2, 3]}, "E_SCHEMA"),
    ({"fn": "ratio", "a": 1, "b": 2, "input": [1, 2]}, "E_INVALID_ARG"),
    ({"fn": "diff", "a": "3", "b": 1}, "E_INVALID_ARG"),
    ({"fn": "percent", "a": 1, "b": False}, "E_INVALID_ARG"),
    ({"fn": "interval_relation", "a": [5, 5], "b": [0, 1]}, "E_INVALID_ARG"),
    ({"fn": "interval_relation", "a": [0.5, 2], "b": [0, 1]}, "E_INVALID_ARG"),
    ({"fn": "interval_relation", "a": "yesterday", "b": 1}, "E_INVALID_ARG"),
    ({"fn": "interval_relation", "a": {"vt_s": 1}, "b": 1}, "E_INVALID_ARG"),
    ({"fn": "union", "a": ["x"], "b": [1]}, "E_INVALID_ARG"),
    ({"fn": "union", "a": "x", "b": ["x"]}, "E_SCHEMA"),
    ({"fn": "union", "a": [True], "b": []}, "E_INVALID_ARG"),
    ({"fn": "intersection", "a": [{"id": 1}], "b": [], "field": "v"}, "E_INVALID_ARG"),
    ({"fn": "union", "a": ["x"], "b": [], "k": 1}, "E_INVALID_ARG"),
    ({"fn": "sum", "input": [1], "limit": 0}, "E_INVALID_ARG"),
    ({"fn": "sum", "input": [1], "as_of_tt": -1}, "E_INVALID_ARG"),  # checked though compute ignores it
    ({"fn": "sum", "input": [1], "as_of_tt": "now"}, "E_SCHEMA"),
    ({"fn": "mean", "input": [10**400, 1]}, "E_INVALID_ARG"),  # exact, but no JSON number holds it
    ({"fn": "ratio", "a": 10**400, "b": 3}, "E_INVALID_ARG"),
    ({"fn": "record"}, "E_SCHEMA"),
    ({"fn": "record", "fields": {}}, "E_SCHEMA"),
    ({"fn": "record", "fields": {"a": [1, 2]}}, "E_INVALID_ARG"),  # a list: reduce it first
    ({"fn": "record", "fields": {"a": {"b": 1}}}, "E_INVALID_ARG"),
    ({"fn": "record", "fields": {"2nd": 1}}, "E_INVALID_ARG"),
    ({"fn": "record", "fields": {f"p{i}": i for i in range(17)}}, "E_INVALID_ARG"),
    ({"fn": "record", "fields": {"a": 1}, "input": [1]}, "E_INVALID_ARG"),
    ({"fn": "count", "input": [1], "fields": {"a": 1}}, "E_INVALID_ARG"),
]


@pytest.mark.parametrize(("args", "code"), BAD, ids=[f"{i}-{c}" for i, (_, c) in enumerate(BAD)])
def test_compute_bad_arguments(ctx: OpContext, args: dict[str, Any], code: str) -> None:
    assert compare(ctx, OracleStore([], []), "compute", args) == code
    with pytest.raises(TGMSError) as err:
        call(ctx, "compute", args)
    assert err.value.to_dict()["details"]["field"]  # every refusal names the offending argument


def test_a_null_where_a_number_is_needed_is_named_as_json_with_the_way_round(ctx: OpContext) -> None:
    """A lag's first row holds null: a topk over it says "null" (not Python's None) and how to drop it."""
    with pytest.raises(TGMSError) as err:
        fast(ctx, "compute", fn="topk", input=[{"v": 1}, {"v": None}], field="v", k=1)
    assert err.value.code == "E_INVALID_ARG"
    assert "null is not a number" in err.value.message and "filter cmp exists" in err.value.message
    assert "None" not in err.value.message
