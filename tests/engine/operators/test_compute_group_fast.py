"""compute group's vectorized path (engine/operators/compute_group_fast.py) against the oracle and the
general row-by-row loop, on many random inputs it takes (str / int / null keys, one to three of them;
ints, floats, negatives, ties, duplicates, single-row groups, nulls and stray strings among the numbers)
and on inputs it must hand back. Values are compared with their types (1 is not 1.0), rows in order."""

from __future__ import annotations

import copy
import math
import random
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, counter_clock
from tgms.engine.operators.compute_fns import evaluate
from tgms.engine.operators.compute_group import (
    _aggregates,
    _by,
    _key_part,
    _out,
    _value,
    general_rows,
)
from tgms.engine.operators.compute_group_fast import fast_rows
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.operators.oracle.compute_group import oracle_group
from tgms.engine.store import Store

AGG_FNS = ("count", "count_distinct", "sum", "min", "max", "mean", "median", "quantile", "first", "last")
STR_KEYS = ["n9", "n10", "n1", "a", "", "B", "n01", "x2y10", "x2y9"]
INT_KEYS = [0, 1, -1, 7, -7, 10**12, 2**62, -(2**63)]
INTS = [0, 1, -1, 2, 3, -5, 7, 10**9, -(10**9), 2**40, 2**53, -(2**53)]
FLOATS = [0.1, 0.2, 1 / 3, -2.5, 2.5, 7.0, -0.0, 1e-10, 1.5e-9, 1e20, 0.1 + 0.2, 0.3, 123456.789]


def typed(x: Any) -> Any:
    """A value with its types spelt out: 1 and 1.0 (and True) differ."""
    if isinstance(x, dict):
        return [(k, typed(v)) for k, v in x.items()]
    if isinstance(x, list):
        return [typed(v) for v in x]
    return (type(x).__name__, x)


def _value_pool(rng: random.Random) -> list[Any]:
    kind = rng.choice(["ints", "ints", "floats", "mixed", "big", "stray", "strs"])
    if kind == "ints":
        pool: list[Any] = rng.sample(INTS, rng.randint(1, 5))
    elif kind == "floats":
        pool = rng.sample(FLOATS, rng.randint(1, 5))
    elif kind == "mixed":
        pool = rng.sample(INTS[:9], 3) + rng.sample(FLOATS, 3)
    elif kind == "big":
        pool = [2**62, 2**62 - 1, -(2**62), 3, 2**64] if rng.random() < 0.5 else [2**62, 2**61, 5]
    elif kind == "stray":
        pool = [1, 2.5, "s", True, [1]]
    else:
        pool = rng.sample(STR_KEYS, 3)
    if rng.random() < 0.4:
        pool.append(None)
    return pool


def _case(rng: random.Random) -> dict[str, Any]:
    n = rng.choice([1, 2, 3, 5, 10, 30, 100, 300])
    n_keys = rng.choice([1, 1, 1, 2, 3])
    key_pools = []
    for _ in range(n_keys):
        kind = rng.choice(["str", "int", "mixed"])
        pool: list[Any] = (
            rng.sample(STR_KEYS, rng.randint(1, 6))
            if kind == "str"
            else rng.sample(INT_KEYS, rng.randint(1, 5))
            if kind == "int"
            else ["n2", 3, "n10", -1]
        )
        if rng.random() < 0.3:
            pool.append(None)
        key_pools.append(pool)
    v_pool, w_pool = _value_pool(rng), _value_pool(rng)
    rows = [
        {
            **{f"k{j}": rng.choice(p) for j, p in enumerate(key_pools)},
            "v": rng.choice(v_pool),
            "w": rng.choice(w_pool),
        }
        for _ in range(n)
    ]
    aggs = []
    for i in range(rng.randint(1, 5)):
        fn = rng.choice(AGG_FNS)
        spec: dict[str, Any] = {"fn": fn, "as": f"a{i}"}
        if fn != "count":
            spec["field"] = rng.choice(["v", "w", "k0"])
        if fn == "quantile":
            spec["q"] = rng.choice([0, 0.01, 0.1, 1 / 3, 0.5, 0.7, 0.9, 0.99, 1])
        aggs.append(spec)
    keys = [f"k{j}" for j in range(n_keys)]
    args: dict[str, Any] = {"fn": "group", "input": rows, "by": keys[0] if n_keys == 1 else keys}
    args["aggregates"] = aggs
    if rng.random() < 0.3:
        args["order_by"] = [{"field": rng.choice(["a0", *keys]), "desc": rng.choice([True, False])}]
    return args


def _fast(args: dict[str, Any]) -> list[dict[str, Any]] | None:
    keys = _by(args["by"])
    aggs = _aggregates(args["aggregates"], keys)
    return fast_rows(args["input"], keys, aggs, _key_part, _value, _out)


def _general(args: dict[str, Any]) -> list[dict[str, Any]]:
    keys = _by(args["by"])
    return general_rows(args["input"], keys, _aggregates(args["aggregates"], keys))


def test_fast_group_equals_oracle_and_general_loop() -> None:
    rng = random.Random(2027)
    taken = 0
    cases = max(N_CASES, 50) * 8
    for _ in range(cases):
        args = _case(rng)
        before = copy.deepcopy(args)
        fast = _fast(args)
        general = _general(args)
        if fast is not None:
            taken += 1
            assert typed(fast) == typed(general), args
        value, rows = evaluate(args)  # the operator's own fn: fast path when it applies, then order_by
        assert typed(rows) == typed(oracle_group(args)), args
        assert value == len(rows)
        assert args == before  # the input is read, never changed
    assert taken >= cases // 2, taken  # the vectorized path is what these inputs exercise


def test_fast_group_big_groups_and_ties() -> None:
    """Few groups of many rows: even and odd counts, many equal values, odd sums of the middle two."""
    rng = random.Random(7)
    for _ in range(20):
        n = rng.randint(1, 3000)
        spread = rng.choice([3, 50, 10**6, 2**40])
        rows = [{"src": f"n{rng.randint(0, 20)}", "t": rng.randint(-spread, spread)} for _ in range(n)]
        aggs = [{"fn": f, "field": "t", "as": f} for f in ("sum", "mean", "median", "min", "max")]
        aggs += [{"fn": "quantile", "field": "t", "q": 0.9, "as": "p90"}, {"fn": "count"}]
        args = {"fn": "group", "input": rows, "by": "src", "aggregates": aggs}
        fast = _fast(args)
        assert fast is not None
        assert typed(fast) == typed(_general(args)) == typed(oracle_group(args))


@pytest.mark.parametrize(
    "rows",
    [
        [{"k": "a", "v": 1}, {"k": 1.5, "v": 2}],  # a float key: numbers by exact value
        [{"k": True, "v": 1}, {"k": 1, "v": 2}],  # a boolean key is not the number 1
        [{"k": [1], "v": 1}],  # a container key
        [{"k": "a", "v": float("nan")}],  # a NaN read: the general loop's error
        [{"k": "a", "v": 1}, {"v": 2}],  # a row without the key: the general loop's error
        [{"k": "a", "v": 1}, ["k"]],  # not an object
    ],
)
def test_fast_group_hands_back(rows: list[Any]) -> None:
    args = {"fn": "group", "input": rows, "by": "k", "aggregates": [{"fn": "sum", "field": "v"}]}
    assert _fast(args) is None


def test_fast_group_errors_match_oracle(tmp_path: Path) -> None:
    """Bad rows refuse, and sums past float or int64 range agree, as the oracle's, through the operator."""
    store = Store.create(tmp_path / "s", "duckdb", now=counter_clock())
    try:
        ctx = OpContext(store)
        sums = [{"fn": "sum", "field": "v"}]
        for rows, code in (
            ([{"k": "a", "v": 1}, {"k": "b", "v": math.inf}], "E_INVALID_ARG"),
            ([{"k": "a", "v": 1}, {"k": "b"}], "ok"),  # a field a row lacks is null: skipped
            ([{"k": "a", "v": 1e308}, {"k": "a", "v": 1e308}], "ok"),  # an integral exact sum
            ([{"k": "a", "v": 2**63}, {"k": "a", "v": 2**63}, {"k": None, "v": -1}], "ok"),
        ):
            assert compare(ctx, OracleStore([], []), "compute", {"fn": "group", "input": rows, "by": "k",
                                                                 "aggregates": sums}) == code  # fmt: skip
    finally:
        store.close()
