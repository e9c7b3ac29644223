"""graph_metric_timeseries' ``peak_active_edge_count`` and ``rel_types`` on a store small enough to count by
hand (both backends; the random stores of test_metrics_fast.py compare both against the oracle)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import MakeStore
from tests.engine.operators.oracle_compare import compare
from tgms.engine.errors import InvalidArgError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.store import Store

# follows [0, 10), [5, 15), [5, 6), [10, 20); messages at 5 and 12
FOLLOWS = [("a", "b", 0, 10), ("b", "c", 5, 15), ("c", "a", 5, 6), ("a", "c", 10, 20)]
MESSAGES = [("a", "b", 5), ("c", "b", 12)]


def _store(make_store: MakeStore) -> Store:
    store = make_store()
    ops: list[dict[str, Any]] = [{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abc"]
    for s, d, vs, ve in FOLLOWS:
        ops.append({"op": "assert_edge", "src": s, "dst": d, "rel_type": "follows", "vt_s": vs, "vt_e": ve})
    for s, d, t in MESSAGES:
        ops.append({"op": "assert_edge", "src": s, "dst": d, "rel_type": "msg", "vt_s": t, "vt_e": t + 1})
    store.write(ops)
    return store


def _rows(store: Store, **args: Any) -> list[tuple[int, int, int | None]]:
    full = {"metric": "peak_active_edge_count", "stride": 100, **args}
    ctx = OpContext(store)
    assert compare(ctx, OracleStore(*store.public_rows()), "graph_metric_timeseries", full) == "ok"
    rows = call(ctx, "graph_metric_timeseries", full)["payload"]["rows"]
    return [(r["t_a"], r["value"], r.get("at")) for r in rows]


def test_the_peak_is_the_most_in_force_at_one_instant_and_when_first(make_store: MakeStore) -> None:
    store = _store(make_store)
    window = {"t_a": 0, "t_b": 20}
    # at 5: [0,10), [5,15), [5,6) and the message at 5; at 10 two follows, at 12 two and a message
    assert _rows(store, window=window, rel_types=["follows"]) == [(0, 3, 5)]
    assert _rows(store, window=window) == [(0, 4, 5)]
    assert _rows(store, window=window, rel_types=["msg"]) == [(0, 1, 5)]
    assert _rows(store, window=window, rel_types=["likes"]) == [(0, 0, 0)]  # nothing: 0 at the start
    # buckets of 6: [0,6) peaks at 5; [6,12) has two from its start on; [12,18) two (three with the message)
    assert _rows(store, window=window, stride=6, rel_types=["follows"]) == [(0, 3, 5), (6, 2, 6), (12, 2, 12),
                                                                           (18, 1, 18)]  # fmt: skip
    assert _rows(store, window=window, stride=6)[2] == (12, 3, 12)


def test_rel_types_choose_what_the_edge_counts_count(make_store: MakeStore) -> None:
    store = _store(make_store)
    ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
    base = {"window": {"t_a": 0, "t_b": 20}, "stride": 5}
    for metric, rel, want in [
        ("active_edge_count", ["follows"], [1, 3, 2, 1]),  # at 0, 5, 10, 15 ([5, 15) is over at 15)
        ("active_edge_count", ["msg"], [0, 1, 0, 0]),
        ("edge_event_count", ["msg"], [0, 1, 1, 0]),
        ("edge_event_count", ["follows", "msg"], [1, 3, 2, 0]),
    ]:
        args = {**base, "metric": metric, "rel_types": rel}
        assert compare(ctx, oracle, "graph_metric_timeseries", args) == "ok"
        assert [r["value"] for r in call(ctx, "graph_metric_timeseries", args)["payload"]["rows"]] == want


@pytest.mark.parametrize("metric", ["node_count", "mean_out_degree", "new_node_rate", "reciprocity"])
def test_rel_types_with_a_metric_that_does_not_count_edges_one_by_one_is_refused(
    make_store: MakeStore, metric: str
) -> None:
    store = _store(make_store)
    args = {"metric": metric, "window": {"t_a": 0, "t_b": 20}, "stride": 5, "rel_types": ["msg"]}
    with pytest.raises(InvalidArgError) as err:
        call(OpContext(store), "graph_metric_timeseries", args)
    assert err.value.details["field"] == "rel_types"
