"""compute's rolling (issue 27: overlapping windows, a lag over grouped rows): fast path == oracle on random
calls and faults, hand cases with known answers (a 6-hour window over hourly counts, a year-on-year lag per
entity), the refusals with their code and field, the units, and the traits (list-reducing)."""

from __future__ import annotations

import copy
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, counter_clock
from tgms.engine.errors import TGMSError
from tgms.engine.operators.compute_units import compute_units
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.operators.registry import get_operator
from tgms.engine.operators.units import UNKNOWN, Unit, UnitEnv, UnitTree
from tgms.engine.store import Store

AGG_FNS = ("count", "count_distinct", "sum", "min", "max", "mean", "median", "quantile", "first", "last")
VALUES: list[Any] = [3, -2, 0, 0.1, 0.2, 1 / 3, 2.5, 7.0, None, "s", "n2", 10**12]


def _valid(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(0, 14)
    keys: list[Any] = ["n9", "n10", 1, 1.0, None]
    rows = [{"k": rng.choice(keys), "v": rng.choice(VALUES), "w": rng.choice([1, 2, 0.5])} for _ in range(n)]
    lo = rng.randint(-5, 3)
    frame: list[int | None] = [lo, lo + rng.randint(0, 5)]
    if rng.random() < 0.25:  # an unbounded side now and then: every row before, or after
        frame[rng.randrange(2)] = None
    args: dict[str, Any] = {"fn": "rolling", "input": rows, "frame": frame}
    if rng.random() < 0.5:
        args["by"] = rng.choice(["k", ["k"], ["k", "w"]])
    if rng.random() < 0.85:
        aggs = []
        for i in range(rng.randint(1, 3)):
            fn = rng.choice(AGG_FNS)
            spec: dict[str, Any] = {"fn": fn, "as": f"a{i}"}
            if fn != "count" or rng.random() < 0.4:  # count with a field: its non-null values
                spec["field"] = rng.choice(["v", "w", "k"])
            if fn == "quantile":
                spec["q"] = rng.choice([0, 0.5, 0.9, 1])
            aggs.append(spec)
        args["aggregates"] = aggs
    return args


def _fault(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    a = copy.deepcopy(args)
    f = rng.choice(["frame_missing", "frame_type", "frame_order", "frame_far", "by_type", "agg_fn",
                    "name_clash", "row_type", "row_no_field", "input_type", "not_taken"])  # fmt: skip
    if f == "frame_missing":
        del a["frame"]
    elif f == "frame_type":
        a["frame"] = rng.choice([3, [1], [0, 1, 2], [0.5, 1], ["0", 1], [True, 1], [None], ["x", None]])
    elif f == "frame_order":
        a["frame"] = [2, -1]
    elif f == "frame_far":
        a["frame"] = rng.choice([[-10_001, 0], [0, 20_000], [None, 10_001], [-20_000, None]])
    elif f == "by_type":
        a["by"] = rng.choice([3, [], ["k", "k"]])
    elif f == "agg_fn":
        a["aggregates"] = [{"fn": "avg", "field": "v"}]
    elif f == "name_clash":
        a["aggregates"] = [{"fn": "sum", "field": "v", "as": "w"}]
        a["input"] = [*a["input"], {"k": 1, "v": 1, "w": 1}]
    elif f == "row_type":
        a["input"] = [*a["input"], rng.choice(["x", 3, None])]
    elif f == "row_no_field":
        a["aggregates"] = [{"fn": "sum", "field": "v"}]
        a["input"] = [*a["input"], {"k": 1}]
    elif f == "input_type":
        a["input"] = rng.choice(["rows", 3])
    else:
        a[rng.choice(["order_by", "q", "k"])] = rng.choice([[{"field": "v"}], 0.5, 3])
    return a


def test_rolling_matches_the_oracle(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "s", "duckdb", now=counter_clock())
    try:
        ctx = OpContext(store)
        rng = random.Random(2712)
        outcomes: Counter[str] = Counter()
        for _ in range(max(N_CASES, 20) * 6):
            args = _valid(rng)
            if rng.random() < 0.3:
                args = _fault(rng, args)
            outcomes[compare(ctx, OracleStore([], []), "compute", args)] += 1
    finally:
        store.close()
    assert outcomes["ok"] >= N_CASES and outcomes["E_SCHEMA"] and outcomes["E_INVALID_ARG"], outcomes


def test_whole_partition_aggregates_match_the_oracle_on_long_partitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compute_rolling's O(1)-a-row aggregates (count, first, last, sums and means of ints, with nulls,
    strings and booleans skipped) against the oracle, on longer partitions and wider frames than the
    calls above; a float among the values sends a sum frame by frame. The fast path is taken (counted)."""
    import tgms.engine.operators.compute_group as cg

    taken: Counter[bool] = Counter()
    real = cg.partition_values

    def counting(*args: Any) -> Any:
        got = real(*args)
        taken[got is not None] += 1
        return got

    monkeypatch.setattr(cg, "partition_values", counting)
    store = Store.create(tmp_path / "s", "duckdb", now=counter_clock())
    try:
        ctx = OpContext(store)
        rng = random.Random(527)
        values: list[Any] = [3, -2, 0, 10**15, 7, None, "s", True, False]
        outcomes: Counter[str] = Counter()
        for _ in range(max(N_CASES, 20) * 3):
            pool = values + ([0.5] if rng.random() < 0.2 else [])
            rows = [
                {"k": rng.choice(["n9", "n10", None]), "v": rng.choice(pool)}
                for _ in range(rng.randint(0, 60))
            ]
            lo = rng.randint(-25, 5)
            aggs = [
                {"fn": fn, "as": f"a{i}", **({} if fn == "count" else {"field": rng.choice(["v", "v", "k"])})}
                for i, fn in enumerate(rng.sample(["count", "first", "last", "sum", "mean", "min"], 3))
            ]
            args: dict[str, Any] = {
                "fn": "rolling",
                "input": rows,
                "frame": rng.choice([[lo, lo + rng.randint(0, 30)], [None, lo], [lo, None], [None, None]]),
                "aggregates": aggs,
                "limit": 100,
            }
            if rng.random() < 0.6:
                args["by"] = "k"
            outcomes[compare(ctx, OracleStore([], []), "compute", args)] += 1
    finally:
        store.close()
    assert outcomes == Counter({"ok": outcomes["ok"]}) and outcomes["ok"] >= 60, outcomes
    assert taken[True] > 3 * taken[False] > 0, taken


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory):
    store = Store.create(tmp_path_factory.mktemp("rolling") / "s", "duckdb", now=counter_clock())
    yield OpContext(store)
    store.close()


def both(ctx: OpContext, **args: Any) -> dict[str, Any]:
    assert compare(ctx, OracleStore([], []), "compute", args) == "ok"
    return call(ctx, "compute", args)["payload"]


def test_the_busiest_six_hours_over_hourly_counts(ctx: OpContext) -> None:
    """A forward frame [0, 5] over hourly buckets: each hour's count of it and the next five (the last
    hours' frames are cut by the end: they hold the hours there are)."""
    counts = [1, 0, 3, 2, 5, 0, 0, 4, 1]
    hours = [{"t_a": 3600 * i, "value": c} for i, c in enumerate(counts)]
    out = both(ctx, fn="rolling", input=hours, frame=[0, 5],
               aggregates=[{"fn": "sum", "field": "value", "as": "n6"}])  # fmt: skip
    want = [sum(counts[i : i + 6]) for i in range(len(counts))]
    assert [r["n6"] for r in out["rows"]] == want == [11, 10, 14, 12, 10, 5, 5, 5, 1]
    assert out["rows"][0] == {"t_a": 0, "value": 1, "n6": 11} and out["value"] == out["rows_total"] == 9
    top = both(ctx, fn="topk", input=out["rows"], field="n6", k=1)
    assert top["rows"] == [{"t_a": 7200, "value": 3, "n6": 14}]


def test_a_lag_per_entity_and_trailing_means(ctx: OpContext) -> None:
    """[-1, -1] with last: the previous row of the same entity (null at its first); [-2, 0] with mean: a
    trailing three-row mean, cut at each entity's first rows."""
    rows = [
        {"acct": "n2", "year": 2011, "mean": 2},
        {"acct": "n10", "year": 2011, "mean": 1},
        {"acct": "n2", "year": 2012, "mean": 3},
        {"acct": "n2", "year": 2013, "mean": -1},
        {"acct": "n10", "year": 2013, "mean": 0.5},
    ]
    aggs = [{"fn": "last", "field": "mean", "as": "prev"}, {"fn": "count", "as": "had"}]
    out = both(ctx, fn="rolling", input=rows, by="acct", frame=[-1, -1], aggregates=aggs)
    assert [(r["acct"], r["year"], r["prev"], r["had"]) for r in out["rows"]] == [
        ("n2", 2011, None, 0), ("n10", 2011, None, 0), ("n2", 2012, 2, 1), ("n2", 2013, 3, 1),
        ("n10", 2013, 1, 1),
    ]  # fmt: skip
    means = [{"fn": "mean", "field": "mean", "as": "m3"}, {"fn": "sum", "field": "mean"}]
    trail = both(ctx, fn="rolling", input=rows, by="acct", frame=[-2, 0], aggregates=means)
    assert [r["m3"] for r in trail["rows"]] == [2, 1, 2.5, 1.333333333, 0.75]
    assert [r["sum_mean"] for r in trail["rows"]] == [2, 1, 5, 4, 1.5]
    none = [{"fn": "sum", "field": "mean"}, {"fn": "median", "field": "mean"}, {"fn": "count"}]
    empty = both(ctx, fn="rolling", input=rows, frame=[10, 12], aggregates=none)
    assert {(r["sum_mean"], r["median_mean"], r["count"]) for r in empty["rows"]} == {(0, None, 0)}


def test_a_null_side_is_unbounded_a_running_count_past_ten_thousand_rows(ctx: OpContext) -> None:
    """The sixth set's planners found that a "running total" written [-10000, 0] stops counting at row
    10,001 of a partition (the frame is a sliding one): [null, 0] is every row up to this one, however
    long the partition, in constant time a row; [0, null] every row from it on. (The whole 24,000 rows
    are read from the rolling fn itself: a call's page holds at most 10,000.)"""
    from tgms.engine.operators.compute_group import evaluate_group

    rows = [{"k": "a" if i % 4 else "b", "v": 1} for i in range(24_000)]
    running = [{"fn": "count", "as": "n"}, {"fn": "sum", "field": "v", "as": "s"}]

    def whole(frame: list[int | None]) -> list[dict[str, Any]]:
        args = {"fn": "rolling", "input": rows, "by": "k", "frame": frame, "aggregates": running}
        n, out = evaluate_group("rolling", args, None)
        assert n == 24_000
        return out

    a = [(r["n"], r["s"]) for r in whole([None, 0]) if r["k"] == "a"]
    assert a == [(i, i) for i in range(1, 18_001)]
    # the sliding frame is what it says, and a running count is not
    assert max(r["n"] for r in whole([-10_000, 0])) == 10_001
    rest = both(ctx, fn="rolling", input=rows[:9], frame=[0, None], aggregates=[{"fn": "count", "as": "n"}])
    assert [r["n"] for r in rest["rows"]] == list(range(9, 0, -1))
    every = both(ctx, fn="rolling", input=rows[:9], by="k", frame=[None, None], aggregates=[{"fn": "count"}])
    assert [r["count"] for r in every["rows"]] == [3, 6, 6, 6, 3, 6, 6, 6, 3]


def test_a_field_a_row_lacks_is_null_in_its_frame(ctx: OpContext) -> None:
    rows = [{"v": 1}, {"w": 2}, {"v": 3}]
    got = both(ctx, fn="rolling", input=rows, frame=[0, 1], aggregates=[{"fn": "sum", "field": "v"}])["rows"]
    assert [r["sum_v"] for r in got] == [1, 3, 3]


@pytest.mark.parametrize(
    ("args", "code", "field"),
    [
        ({"input": [{"v": 1}]}, "E_SCHEMA", "frame"),
        ({"input": [{"v": 1}], "frame": [1, 0]}, "E_INVALID_ARG", "frame"),
        ({"input": [{"v": 1}], "frame": [0, 10_001]}, "E_INVALID_ARG", "frame"),
        ({"input": [{"v": 1}], "frame": [0.0, 1]}, "E_SCHEMA", "frame"),
        ({"input": [{"v": 1}], "frame": [0, 1], "aggregates": [{"fn": "sum", "field": "v", "as": "v"}]},
         "E_INVALID_ARG", "aggregates.0"),
        ({"input": [{"v": 1}], "frame": [0, 1], "order_by": [{"field": "v"}]}, "E_INVALID_ARG", "order_by"),
    ],
)  # fmt: skip
def test_refusals_with_code_and_field(ctx: OpContext, args: dict[str, Any], code: str, field: str) -> None:
    with pytest.raises(TGMSError) as err:
        call(ctx, "compute", {"fn": "rolling", **args})
    assert err.value.code == code and err.value.details.get("field") == field, err.value.to_dict()


def test_units_and_traits() -> None:
    """The rows keep the input's fields' units and add each aggregate's; rolling reduces a list (a frame at
    a cut page's end would be wrong), so a plan may not run it over truncated input."""
    spec = get_operator("compute")
    aggs = [{"fn": "sum", "field": "value", "as": "n6"}, {"fn": "last", "field": "t_a"}]
    args = {"fn": "rolling", "input": {"$ref": "s1.rows"}, "frame": [0, 5], "aggregates": aggs}
    row = UnitTree(fields=(("t_a", UnitTree(unit=Unit.TIME)), ("value", UnitTree(unit=Unit.COUNT))))
    env = UnitEnv(at=lambda loc: UnitTree(item=row) if loc == ("input",) else UNKNOWN,
                  is_ref=lambda loc: loc == ("input",))  # fmt: skip
    got = compute_units(args, env)
    assert not got.clashes
    item = got.tree.member("rows").item
    assert item is not None
    fields = dict(item.fields or ())
    assert fields["t_a"].unit is Unit.TIME and fields["n6"].unit is Unit.COUNT
    assert fields["last_t_a"].unit is Unit.TIME
    # a sum of time points is refused at the aggregate's field, as group's is
    bad = compute_units({**args, "aggregates": [{"fn": "sum", "field": "t_a"}]}, env)
    assert [at for at, _ in bad.clashes] == ["aggregates.0.field"]
    assert spec.traits.reduces_list(args) and spec.traits.rows_fields(args) is None
