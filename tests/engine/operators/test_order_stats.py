"""compute's order statistics (median, quantile; group's median and quantile) pick values from the raw
numbers' order instead of sorting Fractions (issue 27, item 2): fast path == oracle where that shortcut
could go wrong — all-int lists (numpy's partition), ints past int64 (the fallback), floats whose
canonical decimals tie with ints or with each other, mixed ints and floats, bad elements."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import counter_clock
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.store import Store

POOLS: dict[str, list[Any]] = {
    "small_ints": [-3, -1, 0, 1, 2, 7, 10**6],
    "int64_edges": [2**63 - 1, -(2**63), 0, 1, -1],
    "past_int64": [2**63, 2**70, -(2**64), 5, 0],
    # 1.0000000001 and 0.9999999999 are exactly 1 after rounding to 9 decimals: ties with the int 1
    "ties": [1, 1.0, 1.0000000001, 0.9999999999, 2, 0.5, 0.1 + 0.2, 0.3],
    "floats": [0.1, 0.2, 1 / 3, 2.5, -7.25, 1e-12, 123456.789],
}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpContext]:
    store = Store.create(Path(tmp_path_factory.mktemp("order")) / "s", "duckdb", now=counter_clock())
    yield OpContext(store)
    store.close()


@pytest.mark.parametrize("pool", sorted(POOLS))
def test_median_and_quantile_match_the_oracle(ctx: OpContext, pool: str) -> None:
    rng = random.Random(pool)
    ok = 0
    for _ in range(60):
        n = rng.randint(1, 40)
        xs = [rng.choice(POOLS[pool]) for _ in range(n)]
        q = rng.choice([0, 0.01, 0.5, 0.7, 0.9, 1, 1 / 3])
        for args in (
            {"fn": "median", "input": xs},
            {"fn": "quantile", "input": xs, "q": q},
            {"fn": "median", "input": [{"v": x} for x in xs], "field": "v"},
            {"fn": "group", "input": [{"k": i % 3, "v": x} for i, x in enumerate(xs)], "by": "k",
             "aggregates": [{"fn": "median", "field": "v"}, {"fn": "quantile", "field": "v", "q": q}]},
        ):  # fmt: skip
            ok += compare(ctx, OracleStore([], []), "compute", args) == "ok"
    assert ok == 240


@pytest.mark.parametrize("bad", [True, None, "7", [1]])
def test_a_bad_element_is_the_same_error(ctx: OpContext, bad: Any) -> None:
    for xs in ([1, 2, bad, 3], [bad], [0.5, bad]):
        for args in ({"fn": "median", "input": xs}, {"fn": "quantile", "input": xs, "q": 0.5}):
            assert compare(ctx, OracleStore([], []), "compute", args) == "E_INVALID_ARG", args


def test_a_large_int_median_is_exact(ctx: OpContext) -> None:
    """10^5 ints through numpy: the exact middle (and the mean of the middle two for an even count)."""
    rng = random.Random(5)
    xs = [rng.randrange(-(10**15), 10**15) for _ in range(100_001)]
    assert compare(ctx, OracleStore([], []), "compute", {"fn": "median", "input": xs}) == "ok"
    assert compare(ctx, OracleStore([], []), "compute", {"fn": "median", "input": xs[:-1]}) == "ok"
