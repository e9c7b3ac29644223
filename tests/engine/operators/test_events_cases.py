"""list_events, aggregate_events on a hand-built store: every expected value is worked out by hand in the
comment next to it (docs/operators.md §15–§16), and checked on the fast path (both backends) and on the
oracle. Plus: bad arguments, E_COST suggestions, pagination, determinism across backends."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from tests.conftest import require_backend
from tests.engine.operators.event_sampling import EVENT_OPS, event_store, sample_event_args
from tgms.engine.errors import CostError, TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import ORACLES, OracleStore, page

H = 3_600_000_000


def T(y: int, m: int, d: int, h: int = 0, mi: int = 0) -> int:
    return (dt.datetime(y, m, d, h, mi) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


T1 = T(2011, 1, 2, 23, 30)  # a Sunday: ISO 2010-W52, dow 7, hour 23
T2 = T(2011, 1, 3, 1)  # Monday: 2011-W01; two events tie at T2
T4 = T(2012, 12, 31, 12)  # Monday: ISO 2013-W01
T5 = 2**61  # past year 9999: null calendar keys


def _edge(s: str, d: str, t: int, props: dict[str, Any], rel: str = "msg") -> dict[str, Any]:
    return {
        "op": "assert_edge",
        "src": s,
        "dst": d,
        "rel_type": rel,
        "props": props,
        "vt_s": t,
        "vt_e": t + 1,
    }


@pytest.fixture
def env(make_store):
    store = make_store()
    store.write([{"op": "assert_node", "uid": u, "label": "user", "props": {}, "vt_s": 0} for u in "abcd"])
    first = store.write(
        [
            _edge("a", "b", T1, {"rating": 5}),  # e1
            _edge("a", "c", T2, {"rating": -2}),  # e2
            _edge("b", "a", T2, {"rating": "good"}),  # e3: ties e2 on t
            _edge("a", "a", T4, {"rating": 2.5}),  # e4: a self-loop
            _edge("c", "b", T5, {}, rel="follows"),  # e5: no rating
        ]
    ).tt
    ctx = OpContext(store)
    yield ctx, store, first
    store.close()


def both(ctx: OpContext, store: Any, op: str, **args: Any) -> dict[str, Any]:
    """The payload, after checking that the fast path and the oracle agree on it."""
    got = call(ctx, op, dict(args), check_cost=False)["payload"]
    want = page(ORACLES[op](OracleStore(*store.public_rows()), dict(args)), args.get("limit", 100), 0)
    got = dict(got, cursor=None if got["cursor"] is None else got["cursor"].split(".")[0])
    assert got == want, (got, want)
    return got


def ratings(out: dict[str, Any]) -> list[Any]:
    return [r["props"].get("rating") for r in out["rows"]]


def tie(ctx: OpContext, store: Any) -> list[Any]:
    """The two events at T2 in the contract's order: equal t, so by eid."""
    rows = both(ctx, store, "list_events", where=[{"field": "t", "op": "eq", "value": T2}])["rows"]
    assert len(rows) == 2 and rows[0]["eid"] < rows[1]["eid"]
    return [r["props"]["rating"] for r in rows]


def test_calendar_keys_utc(env) -> None:
    ctx, store, _ = env

    def where(*preds: dict[str, Any]) -> list[Any]:
        return ratings(both(ctx, store, "list_events", where=list(preds)))

    assert where({"field": "dow", "op": "eq", "value": 7}) == [5]  # only T1 is a Sunday
    assert where({"field": "hour", "op": "eq", "value": 1}) == tie(ctx, store)  # the two T2 events
    assert where({"field": "week", "op": "eq", "value": "2013-W01"}) == [2.5]  # 2012-12-31 is 2013-W01
    assert where({"field": "month", "op": "eq", "value": "2011-01"}) == [5, *tie(ctx, store)]
    assert where({"field": "day", "op": "ge", "value": "2011-01-03"}) == [*tie(ctx, store), 2.5]
    assert where({"field": "year", "op": "missing"}) == [None]  # the event past 9999
    rows = both(ctx, store, "aggregate_events", group_by=["week"])["rows"]
    # null key first, then ISO weeks in order: T1 in 2010-W52, T2 (x2) in 2011-W01, T4 in 2013-W01
    assert rows == [{"week": None, "count": 1}, {"week": "2010-W52", "count": 1},
                    {"week": "2011-W01", "count": 2}, {"week": "2013-W01", "count": 1}]  # fmt: skip
    rows = both(ctx, store, "aggregate_events", group_by=["month_of_year", "dow"], where=[
        {"field": "year", "op": "exists"}])["rows"]  # fmt: skip
    assert [(r["month_of_year"], r["dow"], r["count"]) for r in rows] == [(1, 1, 2), (1, 7, 1), (12, 1, 1)]


def test_where_kinds_nulls_and_field_comparison(env) -> None:
    ctx, store, _ = env

    def where(*preds: dict[str, Any]) -> list[Any]:
        return ratings(both(ctx, store, "list_events", where=list(preds)))

    assert where({"field": "prop.rating", "op": "lt", "value": 0}) == [-2]  # not "good", not missing
    assert where({"field": "prop.rating", "op": "ne", "value": 5}) == [-2, 2.5]  # "good" vs 5: false
    assert where({"field": "prop.rating", "op": "not_in", "value": [5]}) == [*tie(ctx, store), 2.5]
    assert where({"field": "prop.rating", "op": "gt", "value": "a"}) == ["good"]
    assert where({"field": "prop.rating", "op": "eq", "value": 2.5}) == [2.5]
    assert where({"field": "prop.rating", "op": "missing"}) == [None]
    assert where({"field": "src", "op": "eq", "other": "dst"}) == [2.5]  # the self-loop
    assert where({"field": "src", "op": "lt", "other": "dst"}) == [5, -2]  # a<b, a<c
    assert where({"field": "t", "op": "gt", "value": T2 - 0.5}) == [*tie(ctx, store), 2.5, None]
    assert where({"field": "rel_type", "op": "in", "value": ["follows", 3]}) == [None]
    desc = both(ctx, store, "list_events", order="desc", node=["c"])
    assert ratings(desc) == [None, -2] and desc["rows_total"] == 2
    assert both(ctx, store, "list_events", src=[])["rows_total"] == 0  # [] selects nothing
    assert both(ctx, store, "list_events", src="b") == both(ctx, store, "list_events", src=["b"])


def test_group_by_the_exact_time(env) -> None:
    """``t``: events at one instant form one group ("one e-mail to a list of people is one message"); the
    key's values are the times, in time order."""
    ctx, store, _ = env
    rows = both(ctx, store, "aggregate_events", group_by=["t"],
                aggregates=[{"fn": "count"}, {"fn": "count_distinct", "field": "src"}])["rows"]  # fmt: skip
    assert [(r["t"], r["count"], r["count_distinct_src"]) for r in rows] == [
        (T1, 1, 1), (T2, 2, 2), (T4, 1, 1), (T5, 1, 1)]  # fmt: skip
    # per sender and instant, the recipients; having keeps the "messages" to two or more people
    args = {
        "group_by": ["src", "t"],
        "aggregates": [{"fn": "count_distinct", "field": "dst", "as": "to"}],
        "having": [{"field": "to", "op": "ge", "value": 1}],
        "order_by": [{"field": "t", "desc": True}],
    }
    rows = both(ctx, store, "aggregate_events", **args)["rows"]
    assert [(r["src"], r["t"], r["to"]) for r in rows] == [
        ("c", T5, 1), ("a", T4, 1), ("a", T2, 1), ("b", T2, 1), ("a", T1, 1)]  # fmt: skip


def test_group_by_bucket_numbers_spans_from_an_origin(env) -> None:
    """``bucket``: ⌊(t − origin) / width⌋, SQL's ``(t - origin) // width``: 30-day blocks or 7-day weeks
    counted from the data's first day, whatever the calendar. The origin defaults to the window's start
    (0 without a window); a time before the origin has a negative number."""
    ctx, store, _ = env
    day = 24 * H
    rows = both(ctx, store, "aggregate_events", group_by=["bucket"], bucket={"width": day, "origin": T1},
                where=[{"field": "rel_type", "op": "eq", "value": "msg"}])["rows"]  # fmt: skip
    # T1 itself is day 0; T2 is 1.5 h later (day 0); T4 is 2012-12-31 12:00, 728 days and 12.5 h later
    assert [(r["bucket"], r["count"]) for r in rows] == [(0, 3), (728, 1)]
    window = {"t_a": T1 + H, "t_b": T4 + 1}  # the origin is the window's start: T2 (30 min in) is span 0
    rows = both(
        ctx, store, "aggregate_events", window=window, group_by=["src", "bucket"], bucket={"width": H}
    )
    assert [(r["src"], r["bucket"], r["count"]) for r in rows["rows"]] == [
        ("a", 0, 1), ("a", (T4 - T1 - H) // H, 1), ("b", 0, 1)]  # fmt: skip
    before = both(
        ctx, store, "aggregate_events", src="a", group_by=["bucket"], bucket={"width": day, "origin": T2}
    )
    assert [r["bucket"] for r in before["rows"]] == [-1, 0, (T4 - T2) // day]  # T1 is before the origin


def test_group_keys_and_aggregates(env) -> None:
    ctx, store, _ = env
    rows = both(ctx, store, "aggregate_events", group_by=["node"],
                aggregates=[{"fn": "count"}, {"fn": "count_distinct", "field": "other"}])["rows"]  # fmt: skip
    # a: e1 e2 e3 e4 (the self-loop once), partners {b, c, a}; b: e1 e3 e5 {a, c}; c: e2 e5 {a, b}
    assert [(r["node"], r["count"], r["count_distinct_other"]) for r in rows] == [
        ("a", 4, 3), ("b", 3, 2), ("c", 2, 2)]  # fmt: skip
    rows = both(ctx, store, "aggregate_events", group_by=["unordered_pair"])["rows"]
    assert [(r["a"], r["b"], r["count"]) for r in rows] == [("a", "a", 1), ("a", "b", 2), ("a", "c", 1),
                                                            ("b", "c", 1)]  # fmt: skip
    gaps = [{"fn": f} for f in ("min_gap", "max_gap", "mean_gap", "median_gap", "first_t", "last_t")] + [
        {"fn": "sessions", "gap": 2 * H}, {"fn": "max_in_window", "width": 3 * H // 2, "as": "w90"},
        {"fn": "max_in_window", "width": 3 * H // 2 + 1, "as": "w90_1"}]  # fmt: skip
    (a,) = both(ctx, store, "aggregate_events", src=["a"], aggregates=gaps)["rows"]
    # a sends at T1, T2 (1.5 h later) and T4; a 90-minute half-open window cannot hold T1 and T2
    # two gaps: the median is their mean, as mean_gap; an odd count's is the middle one (below)
    assert a == {"min_gap": 3 * H // 2, "max_gap": T4 - T2, "mean_gap": (T4 - T1) // 2,
                 "median_gap": (T4 - T1) // 2, "first_t": T1,
                 "last_t": T4, "sessions": 2, "w90": 1, "w90_1": 2}  # fmt: skip
    rel = [{"fn": "count_within_first", "width": w, "as": f"within_{i}"} for i, w in enumerate((3 * H // 2,
           3 * H // 2 + 1, T4 - T1 + 1))] + [{"fn": "max_session", "gap": g, "as": f"session_{i}"}
           for i, g in enumerate((H, 2 * H, T4 - T2))] + [{"fn": "max_session_events", "gap": g,
           "as": f"size_{i}"} for i, g in enumerate((H, 2 * H, T4 - T2))]  # fmt: skip
    (a,) = both(ctx, store, "aggregate_events", src=["a"], aggregates=rel)["rows"]
    # after a's first message (T1): T2 is 1.5 h later, T4 much later; sessions: [T1] [T2] [T4] under an
    # hour's gap, [T1 T2] [T4] under two hours, one session T1..T4 when the gap allows T2 → T4
    assert a == {"within_0": 0, "within_1": 1, "within_2": 2,
                 "session_0": 0, "session_1": 3 * H // 2, "session_2": T4 - T1,
                 "size_0": 1, "size_1": 2, "size_2": 3}  # fmt: skip
    everyone = both(ctx, store, "aggregate_events", aggregates=[{"fn": "median_gap"}, {"fn": "count"}])
    # T1, T2, T2, T4, T5: gaps 1.5 h, 0, T4 - T2, T5 - T4; sorted, the middle two are 1.5 h and T4 - T2
    assert everyone["rows"] == [{"median_gap": (3 * H // 2 + T4 - T2) // 2, "count": 5}]
    empty_rel = both(ctx, store, "aggregate_events", window={"t_a": 0, "t_b": 10}, aggregates=rel[::3])
    assert empty_rel["rows"] == [{"within_0": 0, "session_0": None, "size_0": 0}]
    at = [{"fn": f, "field": k} for f in ("first_value", "last_value") for k in ("dst", "t")]
    (a,) = both(ctx, store, "aggregate_events", src=["a"], aggregates=at)["rows"]
    # a's first event (T1) went to b, its last (T4) to itself
    assert a == {"first_value_dst": "b", "first_value_t": T1, "last_value_dst": "a", "last_value_t": T4}
    nums = [{"fn": f, "field": "prop.rating"} for f in ("sum", "mean", "median", "min", "max")]
    (r,) = both(ctx, store, "aggregate_events", aggregates=nums)["rows"]
    # numbers 5, -2, 2.5 ("good" and the missing one skipped): sum 5.5, mean 11/6, median 2.5
    assert r == {"sum_prop_rating": 5.5, "mean_prop_rating": 1.833333333, "median_prop_rating": 2.5,
                 "min_prop_rating": -2, "max_prop_rating": 5}  # fmt: skip
    out = both(ctx, store, "aggregate_events", group_by=["prop.rating"], node=["a"])
    # key order: numbers (-2, 2.5, 5) before strings ("good")
    assert [r["prop_rating"] for r in out["rows"]] == [-2, 2.5, 5, "good"] and out["n_events"] == 4
    empty = both(ctx, store, "aggregate_events", window={"t_a": 0, "t_b": 10}, aggregates=nums[:2])
    assert empty["rows"] == [{"sum_prop_rating": 0, "mean_prop_rating": None}] and empty["n_events"] == 0
    assert both(ctx, store, "aggregate_events", window={"t_a": 0, "t_b": 10}, group_by=["src"])["rows"] == []


def test_an_aggregate_with_its_own_where(env) -> None:
    """SQL's agg(...) FILTER (WHERE ...): each aggregate over the group's events that pass its where; a
    group that keeps none has the aggregate over no events (count 0, sum 0, null for the rest)."""
    ctx, store, _ = env
    neg = [{"field": "prop.rating", "op": "lt", "value": 0}]
    aggs = [{"fn": "count"}, {"fn": "count", "as": "negative", "where": neg},
            {"fn": "first_t", "as": "first_negative", "where": neg},
            {"fn": "sum", "field": "prop.rating", "as": "sum_positive",
             "where": [{"field": "prop.rating", "op": "gt", "value": 0}]},
            {"fn": "count_distinct", "field": "other", "as": "to_others",
             "where": [{"field": "src", "op": "ne", "other": "dst"}]}]  # fmt: skip
    rows = both(ctx, store, "aggregate_events", group_by=["node"], aggregates=aggs)["rows"]
    # a: e1 (5) e2 (-2) e3 ("good") e4 (2.5, a self-loop); b: e1 e3 e5; c: e2 e5
    assert rows == [
        {"node": "a", "count": 4, "negative": 1, "first_negative": T2, "sum_positive": 7.5, "to_others": 2},
        {"node": "b", "count": 3, "negative": 0, "first_negative": None, "sum_positive": 5, "to_others": 2},
        {"node": "c", "count": 2, "negative": 1, "first_negative": T2, "sum_positive": 0, "to_others": 2},
    ]
    # a having over a filtered count, and no group keeping any event
    kept = both(ctx, store, "aggregate_events", group_by=["src"], aggregates=aggs[:2],
                having=[{"field": "negative", "op": "gt", "value": 0}])["rows"]  # fmt: skip
    assert kept == [{"src": "a", "count": 3, "negative": 1}]
    none = [{"field": "prop.rating", "op": "lt", "value": -100}]
    out = both(ctx, store, "aggregate_events", aggregates=[{"fn": "max_gap", "where": none},
               {"fn": "sessions", "gap": 1, "where": none}])["rows"]  # fmt: skip
    assert out == [{"max_gap": None, "sessions": 0}]


def test_having_order_ties_and_nulls_last(env) -> None:
    ctx, store, _ = env
    out = both(ctx, store, "aggregate_events", group_by=["src"], order_by=[{"field": "count", "desc": True}])
    # a sent 3; b and c one each: the tie is broken by the key ascending
    assert [(r["src"], r["count"]) for r in out["rows"]] == [("a", 3), ("b", 1), ("c", 1)]
    mean = [{"fn": "mean", "field": "prop.rating", "as": "m"}]
    out = both(ctx, store, "aggregate_events", group_by=["src"], aggregates=mean,
               order_by=[{"field": "m", "desc": False}])  # fmt: skip
    assert [(r["src"], r["m"]) for r in out["rows"]] == [("a", 1.833333333), ("b", None), ("c", None)]
    out = both(ctx, store, "aggregate_events", group_by=["src"], having=[{"field": "count", "op": "eq",
               "value": 1}], limit=1)  # fmt: skip
    assert out["rows"] == [{"src": "b", "count": 1}] and out["rows_total"] == 2 and out["truncated"]


def test_belief_as_of_tt_and_corrections(env) -> None:
    ctx, store, first = env
    later = store.write([{"op": "correct", "ref": {"src": "a", "dst": "b", "rel_type": "msg"},
                          "props": {"rating": -7}, "vt_s": T1, "vt_e": T1 + 1}]).tt  # fmt: skip
    neg = [{"field": "prop.rating", "op": "lt", "value": 0}]
    assert ratings(both(ctx, store, "list_events", where=neg)) == [-7, -2]
    assert ratings(both(ctx, store, "list_events", where=neg, as_of_tt=first)) == [-2]
    assert ratings(both(ctx, store, "list_events", where=neg, as_of_tt=later)) == [-7, -2]
    assert both(ctx, store, "aggregate_events", as_of_tt=first - 1)["rows"] == [{"count": 0}]


def test_pages_concatenate(env) -> None:
    ctx, _, _ = env
    for op, args in (("list_events", {}), ("aggregate_events", {"group_by": ["node", "dst"]})):
        full = call(ctx, op, dict(args, limit=100))["payload"]
        seen, cursor = [], None
        while True:
            p = call(ctx, op, dict(args, limit=2, cursor=cursor))["payload"]
            assert p["rows_total"] == full["rows_total"]
            seen += p["rows"]
            cursor = p["cursor"]
            if cursor is None:
                break
        assert seen == full["rows"] and len(seen) == full["rows_total"]


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("list_events", {"where": [{"field": "bogus", "op": "eq", "value": 1}]}, "E_INVALID_ARG"),
    ("list_events", {"where": [{"field": "prop.", "op": "exists"}]}, "E_INVALID_ARG"),
    ("list_events", {"where": [{"field": "t", "op": "eq"}]}, "E_INVALID_ARG"),
    ("list_events", {"where": [{"field": "t", "op": "eq", "value": 1, "other": "eid"}]}, "E_INVALID_ARG"),
    ("list_events", {"where": [{"field": "t", "op": "in", "value": 1}]}, "E_INVALID_ARG"),
    ("list_events", {"where": [{"field": "t", "op": "approx", "value": 1}]}, "E_INVALID_ARG"),
    ("list_events", {"where": [{"field": "t", "op": "eq", "value": {"x": 1}}]}, "E_SCHEMA"),
    ("list_events", {"where": [{"field": "t", "op": "eq", "value": 1, "extra": 0}]}, "E_SCHEMA"),
    ("list_events", {"where": "t > 1"}, "E_SCHEMA"),
    ("list_events", {"where": [{"field": "t", "op": "lt", "value": float("nan")}]}, "E_SCHEMA"),
    ("list_events", {"where": [{"field": "t", "op": "in", "value": [1, float("inf")]}]}, "E_SCHEMA"),
    ("list_events", {"where": [{"field": "t", "op": "in", "value": [[1]]}]}, "E_SCHEMA"),
    ("list_events", {"src": ["nobody"]}, "E_NOT_FOUND"),
    ("list_events", {"node": 7}, "E_SCHEMA"),
    ("list_events", {"node": "ghost"}, "E_NOT_FOUND"),
    ("list_events", {"order": "sideways"}, "E_INVALID_ARG"),
    ("list_events", {"window": {"t_a": 5, "t_b": 5}}, "E_INVALID_ARG"),
    ("list_events", {"rel_types": [""]}, "E_INVALID_ARG"),
    ("aggregate_events", {"group_by": ["src", "src"]}, "E_INVALID_ARG"),
    ("aggregate_events", {"group_by": ["src", "dst", "day", "hour"]}, "E_INVALID_ARG"),
    ("aggregate_events", {"group_by": ["colour"]}, "E_INVALID_ARG"),
    ("aggregate_events", {"group_by": "src"}, "E_SCHEMA"),
    ("aggregate_events", {"aggregates": []}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "sum"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "sum", "field": "src"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "count", "field": "src"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "max_in_window"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "count_within_first", "gap": 5}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "max_session", "width": 5}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "sessions", "gap": -1}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "sessions", "gap": "1h"}]}, "E_SCHEMA"),
    ("aggregate_events", {"aggregates": [{"fn": "count_distinct", "field": "other"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "count"}, {"fn": "count"}]}, "E_INVALID_ARG"),
    (
        "aggregate_events",
        {"aggregates": [{"fn": "count", "as": "src"}], "group_by": ["src"]},
        "E_INVALID_ARG",
    ),
    ("aggregate_events", {"aggregates": [{"fn": "count", "as": "no spaces"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"aggregates": [{"fn": "median_ish"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"having": [{"field": "nope", "op": "gt", "value": 1}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"having": [{"field": "count", "op": "gt"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"order_by": [{"field": "count", "desc": "yes"}]}, "E_SCHEMA"),
    ("aggregate_events", {"order_by": [{"field": "nope"}]}, "E_INVALID_ARG"),
    ("aggregate_events", {"node": ["a", "ghost"]}, "E_NOT_FOUND"),
    ("aggregate_events", {"group_by": ["bucket"]}, "E_INVALID_ARG"),  # no bucket: {width}
    ("aggregate_events", {"group_by": ["src"], "bucket": {"width": 5}}, "E_INVALID_ARG"),  # no bucket key
    ("aggregate_events", {"group_by": ["bucket"], "bucket": {"width": 0}}, "E_INVALID_ARG"),
    ("aggregate_events", {"group_by": ["bucket"], "bucket": {"width": "1d"}}, "E_SCHEMA"),
    ("aggregate_events", {"group_by": ["bucket"], "bucket": {"origin": 0}}, "E_SCHEMA"),
    ("aggregate_events", {"group_by": ["bucket"], "bucket": {"width": 5, "start": 0}}, "E_SCHEMA"),
]


@pytest.mark.parametrize(("op", "args", "code"), BAD, ids=[f"{o}-{i}" for i, (o, _, _) in enumerate(BAD)])
def test_bad_arguments_one_error_nothing_changes(env, op: str, args: dict[str, Any], code: str) -> None:
    ctx, store, _ = env
    before = store.state_token()
    with pytest.raises(TGMSError) as fast:
        call(ctx, op, dict(args))
    with pytest.raises(TGMSError) as oracle:
        ORACLES[op](OracleStore(*store.public_rows()), dict(args))
    assert (fast.value.code, oracle.value.code) == (code, code), (fast.value, oracle.value)
    assert store.state_token() == before


def test_a_bad_aggregate_is_located_at_its_entry(env) -> None:
    # "args" as a whole names nothing a repair can leave out of its quote: the entry is named instead
    ctx, _, _ = env
    for bad in ({"fn": "count", "field": "src"}, {"fn": "sum", "field": "dst"}, {"fn": "count", "as": "1x"}):
        with pytest.raises(TGMSError) as err:
            call(ctx, "aggregate_events", {"aggregates": [{"fn": "count", "as": "n"}, bad]})
        assert err.value.code == "E_INVALID_ARG" and err.value.to_dict()["details"]["field"] == "aggregates.1"
    for args, field in (
        ({"group_by": ["src", "uid"]}, "group_by.1"),
        ({"group_by": ["src", "src"]}, "group_by"),
        ({"group_by": ["src"], "having": [{"field": "vt_s", "op": "gt", "value": 1}]}, "having.0"),
        ({"order_by": [{"field": "count"}, {"field": "nope"}]}, "order_by.1"),
        ({"group_by": ["src"], "aggregates": [{"fn": "count", "as": "src"}]}, "aggregates"),
    ):
        with pytest.raises(TGMSError) as err:
            call(ctx, "aggregate_events", args)
        assert err.value.code == "E_INVALID_ARG" and err.value.to_dict()["details"]["field"] == field, args


def test_cost_guard_suggests_narrowing(env) -> None:
    ctx, _, _ = env
    args = {"group_by": ["node"], "aggregates": [{"fn": "max_in_window", "width": H}]}
    with pytest.raises(CostError) as info:
        call(ctx, "aggregate_events", args, budget_s=1e-9)
    details = info.value.details
    assert details["estimate"]["work"]["scan_row"] > 0
    assert any("where predicate" in s for s in details["suggestions"])
    assert any("fewer or coarser keys" in s for s in details["suggestions"])
    call(ctx, "aggregate_events", args)  # within the default budget


def test_same_bytes_on_both_backends(tmp_path) -> None:
    backends = [require_backend(b) for b in ("duckdb", "kuzu")]
    stores = [event_store(tmp_path / b, b, seed=11) for b in backends]
    try:
        (sa, tts), (sb, _) = stores
        ca, cb = OpContext(sa), OpContext(sb)
        rng = random.Random(3)
        compared = 0
        for i in range(60):
            op = EVENT_OPS[i % 2]
            args = sample_event_args(op, rng, [f"u{k}" for k in range(8)], tts)
            outs = []
            for ctx in (ca, cb):
                try:
                    outs.append(call(ctx, op, dict(args))["result_digest"])
                except TGMSError as exc:
                    outs.append(exc.code)
            assert outs[0] == outs[1], (op, args)
            compared += not outs[0].startswith("E_")
        assert compared >= 40
    finally:
        for s, _ in stores:
            s.close()


def test_sums_past_int64_stay_exact(make_store) -> None:
    store = make_store("big")
    store.write([{"op": "assert_node", "uid": u, "label": "user", "props": {}, "vt_s": 0} for u in "ab"])
    store.write([_edge("a", "b", 2**61 + k, {"w": 2**61}) for k in range(3)] + [_edge("b", "a", 7, {"w": 1})])
    ctx = OpContext(store)
    aggs = [{"fn": "sum", "field": "t"}, {"fn": "sum", "field": "prop.w"}, {"fn": "mean", "field": "t"}]
    out = both(ctx, store, "aggregate_events", group_by=["src"], aggregates=aggs,
               order_by=[{"field": "sum_t", "desc": True}])  # fmt: skip
    # a: 3 * 2^61 + 0 + 1 + 2 (> 2^62); b: 7. Means: 2^61 + 1 exactly, 7
    assert out["rows"] == [
        {"src": "a", "sum_t": 3 * 2**61 + 3, "sum_prop_w": 3 * 2**61, "mean_t": 2**61 + 1},
        {"src": "b", "sum_t": 7, "sum_prop_w": 1, "mean_t": 7},
    ]


def test_medians_of_ints_near_int64_max_stay_exact(make_store) -> None:
    """A median of ints near 2^63 is exact: an int64 sum of the middle two would wrap to a negative
    value (an int property this large goes through Fractions; the int64 columns' own path sums the middle
    two as Python ints too)."""
    store = make_store("huge")
    store.write([{"op": "assert_node", "uid": u, "label": "user", "props": {}, "vt_s": 0} for u in "ab"])
    top = 2**63 - 1
    store.write(
        [_edge("a", "b", 10 + k, {"w": top - 2 * k}) for k in range(4)] + [_edge("b", "a", 7, {"w": 3})]
    )
    ctx = OpContext(store)
    aggs = [{"fn": "median", "field": "prop.w"}, {"fn": "max", "field": "prop.w"}]
    out = both(ctx, store, "aggregate_events", group_by=["src"], aggregates=aggs)
    # a: top, top - 2, top - 4, top - 6; the middle two top - 2 and top - 4: median top - 3 (an int)
    assert out["rows"] == [
        {"src": "a", "median_prop_w": top - 3, "max_prop_w": top},
        {"src": "b", "median_prop_w": 3, "max_prop_w": 3},
    ]


def test_vt_s_is_another_name_of_t_in_predicates_and_aggregates(env) -> None:
    # list_events rows carry vt_s and the manual says t (= vt_s): a plan may write either name
    ctx, store, _ = env
    for op, value in (("ge", T2), ("lt", T4), ("eq", T1)):
        by_t = both(ctx, store, "list_events", where=[{"field": "t", "op": op, "value": value}])
        by_vt_s = both(ctx, store, "list_events", where=[{"field": "vt_s", "op": op, "value": value}])
        assert by_vt_s == by_t and by_t["rows_total"] > 0
    agg = both(ctx, store, "aggregate_events", aggregates=[{"fn": "min", "field": "vt_s", "as": "first"},
               {"fn": "max", "field": "t", "as": "last"}])["rows"]  # fmt: skip
    assert agg == [{"first": T1, "last": T5}]
    for other in ("t", "vt_s"):  # a field comparison names it too
        pred = [{"field": "vt_e", "op": "gt", "other": other}]
        assert both(ctx, store, "list_events", where=pred)["rows_total"] == 5


def test_an_empty_window_is_no_window(env) -> None:
    ctx, store, _ = env
    whole = both(ctx, store, "list_events")
    assert both(ctx, store, "list_events", window={}) == whole and whole["rows_total"] == 5
    agg = both(ctx, store, "aggregate_events", window={}, group_by=["rel_type"])
    assert agg == both(ctx, store, "aggregate_events", group_by=["rel_type"])
    # an operator that needs a window still says so
    with pytest.raises(TGMSError) as err:
        call(ctx, "temporal_reachability", {"src": "a", "window": {}}, check_cost=False)
    assert "window" in err.value.message
