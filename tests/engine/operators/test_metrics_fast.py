"""graph_metric_timeseries, burst_detection: fast path == brute-force oracle on random bi-temporal stores.

Stores (:func:`rich_store`) mix instantaneous events on a coarse clock (many equal timestamps), interval
edges of several lengths, open-ended edges, parallel edges (``disc``), self-loops, node versions that end,
corrections and retractions of edges and nodes over several batches, so past ``as_of_tt`` values see other
beliefs. Every payload is compared after canonicalization, the cursor token normalized to its offset.
Cases per operator: ``TGMS_ORACLE_CASES`` (default 50).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import METRICS, N_CASES, counter_clock, random_store
from tgms.engine.errors import CostError, InvalidArgError
from tgms.engine.operators import metrics
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import StoreProfile
from tgms.engine.operators.envelope import call
from tgms.engine.operators.metrics import MetricArgs, _metric_cost
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.store import Store
from tgms.engine.timeutil import OPEN_END

T_MAX = 240
STORES = 5


def _edge_op(rng: random.Random, uids: list[str]) -> dict[str, Any]:
    s = rng.choice(uids)
    d = s if rng.random() < 0.08 else rng.choice(uids)  # self-loops
    rel = rng.choice(["msg", "msg", "msg", "follows"])
    t = rng.randrange(0, T_MAX, rng.choice([1, 5, 10]))  # coarse clocks: many equal timestamps
    op: dict[str, Any] = {"op": "assert_edge", "src": s, "dst": d, "rel_type": rel, "vt_s": t}
    if rel == "msg":
        op["vt_e"] = t + 1
        if rng.random() < 0.2:
            op["disc"] = f"m{rng.randint(0, 2)}"  # parallel versions of one pair at one time
    else:
        r = rng.random()
        if r < 0.15:
            pass  # open-ended
        else:
            op["vt_e"] = t + rng.choice([1, 2, 3, 7, 25, 90, 400])
    if rng.random() < 0.5:
        op["props"] = {"w": rng.randint(1, 4)}
    return op


def rich_store(root: Path, backend: str, seed: int, n_uids: int = 9) -> tuple[Store, list[int], list[str]]:
    """A random store; returns it, the tt of every committed batch and its uids."""
    rng = random.Random(seed)
    store = Store.create(root, backend, now=counter_clock(2_000_000, 7))
    uids = [f"v{i}" for i in range(n_uids)]
    tts: list[int] = []
    nodes = []
    for u in uids:
        vs = rng.randint(0, T_MAX // 2)
        op = {"op": "assert_node", "uid": u, "label": rng.choice(["user", "bot"]), "vt_s": vs}
        if rng.random() < 0.3:
            op["vt_e"] = vs + rng.randint(1, T_MAX)
        nodes.append(op)
    tts.append(store.write(nodes).tt)
    refs: list[dict[str, Any]] = []
    for _ in range(rng.randint(4, 8)):
        ops = [_edge_op(rng, uids) for _ in range(rng.randint(2, 12))]
        refs += [{k: o[k] for k in ("src", "dst", "rel_type")} | ({"disc": o["disc"]} if "disc" in o else {})
                 for o in ops]  # fmt: skip
        tts.append(store.write(ops).tt)
        extra: list[list[dict[str, Any]]] = []
        if rng.random() < 0.6:
            a = rng.randint(0, T_MAX)
            extra.append([{"op": "correct", "ref": rng.choice(refs), "props": {"w": 9},
                           "vt_s": a, "vt_e": a + rng.choice([1, 4, 30, 200])}])  # fmt: skip
        if rng.random() < 0.4:
            extra.append([{"op": "retract", "ref": rng.choice(refs), "t": rng.randint(0, T_MAX)}])
        if rng.random() < 0.3:
            u = rng.choice(uids)
            a = rng.randint(0, T_MAX)
            extra.append([{"op": "correct", "ref": {"uid": u}, "props": {"name": f"N{u}"},
                           "vt_s": a, "vt_e": a + rng.randint(1, T_MAX)}])  # fmt: skip
        if rng.random() < 0.2:
            extra.append([{"op": "retract", "ref": {"uid": rng.choice(uids)}, "t": rng.randint(0, T_MAX)}])
        for batch in extra:
            r = store.try_write(batch)
            if r.status == "committed":
                tts.append(r.tt)
    return store, tts, uids


def stores(tmp: Path, backend: str, n: int = STORES):
    """``n`` stores (the last from the shared sampler); yields (ctx, oracle store, tts, uids)."""
    for s in range(n):
        if s == n - 1:
            store, tts = random_store(tmp / f"s{s}", backend, seed=700 + s)
            uids = [f"u{i}" for i in range(8)]
        else:
            store, tts, uids = rich_store(tmp / f"s{s}", backend, seed=500 + s)
        try:
            yield OpContext(store), OracleStore(*store.public_rows()), tts, uids
        finally:
            store.close()


@pytest.fixture
def one(tmp_path: Path, backend: str):
    """One rich store: (ctx, oracle store, tts, uids); closed afterwards."""
    store, tts, uids = rich_store(tmp_path / "one", backend, seed=501)
    try:
        yield OpContext(store), OracleStore(*store.public_rows()), tts, uids
    finally:
        store.close()


def window(rng: random.Random) -> dict[str, int]:
    r = rng.random()
    if r < 0.1:
        return {"t_a": T_MAX + 500, "t_b": T_MAX + 900}  # nothing there
    if r < 0.2:
        return {"t_a": rng.randint(0, 50), "t_b": OPEN_END}  # open end: few, huge buckets
    a = rng.randint(0, T_MAX)
    return {"t_a": a, "t_b": a + rng.randint(1, T_MAX + 100)}


def stride_for(rng: random.Random, w: dict[str, int]) -> int:
    span = w["t_b"] - w["t_a"]
    r = rng.random()
    if r < 0.1:
        return span + rng.randint(0, 5)  # one bucket
    if r < 0.15:
        return max(1, -(-span // 2000))  # the most buckets allowed
    if span > 10**6:
        return -(-span // rng.randint(1, 5))
    return rng.randint(1, max(1, min(60, span)))


def common(rng: random.Random, args: dict[str, Any], tts: list[int]) -> dict[str, Any]:
    if rng.random() < 0.4:
        args["as_of_tt"] = rng.choice([*tts, tts[0] - 1])  # a past belief, or before anything was believed
    if rng.random() < 0.35:
        args["limit"] = rng.randint(1, 4)
    return args


#: the type choices drawn for rel_types: one type, both, a type the store lacks, none at all
REL_CHOICES = (["msg"], ["follows"], ["follows", "msg", "follows"], ["likes"], [])


def metric_args(rng: random.Random, i: int, tts: list[int]) -> dict[str, Any]:
    w = window(rng)
    args = {"metric": METRICS[i % len(METRICS)], "window": w, "stride": stride_for(rng, w)}
    if args["metric"] in metrics.REL_METRICS and rng.random() < 0.6:
        args["rel_types"] = list(rng.choice(REL_CHOICES))
    return common(rng, args, tts)


def burst_args(rng: random.Random, i: int, tts: list[int], uids: list[str]) -> dict[str, Any]:
    w = window(rng) if rng.random() < 0.3 else {"t_a": rng.randint(0, 40), "t_b": T_MAX + rng.randint(0, 60)}
    stride = stride_for(rng, w) if rng.random() < 0.3 else rng.randint(1, 25)
    args: dict[str, Any] = {
        "target": rng.choice(["global", *uids]),
        "window": w,
        "stride": stride,
        "method": ("zscore", "ratio")[i % 2],
    }
    params: dict[str, Any] = {}
    if rng.random() < 0.8:
        params["w"] = rng.choice([2, 3, 4, 5, 7, 12])
    if rng.random() < 0.5:
        params["min_history"] = rng.randint(2, params.get("w", 7))
    if rng.random() < 0.8:
        params["threshold"] = rng.choice([0.5, 1, 1.2, 1.5, 2, 3, 1.4142135, 1.0000000004])
    if params or rng.random() < 0.5:
        args["params"] = params
    return common(rng, args, tts)


def run_cases(
    tmp_path: Path, backend: str, op: str, sampler, n_cases: int = N_CASES, seed_base: int = 1000
) -> Counter[str]:
    """Compare ``n_cases`` calls of ``op`` (arguments from ``sampler(rng, i, tts, uids)``) spread over the
    random stores; the outcome counts."""
    outcomes: Counter[str] = Counter()
    per_store = -(-n_cases // STORES)
    for k, (ctx, oracle, tts, uids) in enumerate(stores(tmp_path, backend)):
        rng = random.Random(seed_base * k + len(op))
        for i in range(per_store):
            outcomes[compare(ctx, oracle, op, sampler(rng, i, tts, uids))] += 1
    return outcomes


def test_graph_metric_timeseries_matches_oracle(tmp_path, backend):
    outcomes = run_cases(
        tmp_path, backend, "graph_metric_timeseries", lambda r, i, t, u: metric_args(r, i, t)
    )
    assert sum(outcomes.values()) >= N_CASES and outcomes["ok"] == sum(outcomes.values()), outcomes


def test_burst_detection_matches_oracle(tmp_path, backend):
    outcomes = run_cases(tmp_path, backend, "burst_detection", burst_args)
    assert sum(outcomes.values()) >= N_CASES
    assert outcomes["ok"] >= N_CASES // 2, outcomes  # unknown targets at early as_of_tt are errors


def test_every_metric_and_method_on_one_store(one):
    """Each metric and burst method over fixed windows, all bucket counts 1..n, every belief state."""
    ctx, oracle, tts, _ = one
    for a in [None, *tts[::2]]:
        for metric in METRICS:
            for stride in (1, 7, 50, 10**6):
                args = {"metric": metric, "window": {"t_a": 3, "t_b": T_MAX}, "stride": stride, "as_of_tt": a}
                assert compare(ctx, oracle, "graph_metric_timeseries", args) == "ok"
                if metric in metrics.REL_METRICS:
                    for rel in REL_CHOICES:
                        assert (
                            compare(ctx, oracle, "graph_metric_timeseries", {**args, "rel_types": rel})
                            == "ok"
                        )
        for method in ("zscore", "ratio"):
            for p in ({}, {"w": 2}, {"w": 5, "min_history": 4, "threshold": 1}, {"threshold": 0.5}):
                args = {"target": "global", "window": {"t_a": 0, "t_b": T_MAX}, "stride": 6, "method": method,
                        "params": p, "as_of_tt": a}  # fmt: skip
                assert compare(ctx, oracle, "burst_detection", args) == "ok"


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_mean_out_degree_in_small_chunks(one, monkeypatch, chunk):
    """The coverage pass carries its running max across chunks: tiny chunks must not change a value."""
    ctx, oracle, tts, _ = one
    monkeypatch.setattr(metrics, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for _ in range(12):
        w = window(rng)
        args = {"metric": "mean_out_degree", "window": w, "stride": stride_for(rng, w)}
        if rng.random() < 0.5:
            args["as_of_tt"] = rng.choice(tts)
        assert compare(ctx, oracle, "graph_metric_timeseries", args) == "ok"


def test_errors_match_oracle(one):
    ctx, oracle, _, _ = one
    cases = [
        ("graph_metric_timeseries", {"metric": "degree", "window": {"t_a": 0, "t_b": 9}, "stride": 1}),
        ("graph_metric_timeseries", {"metric": "node_count", "window": {"t_a": 0, "t_b": 2001}, "stride": 1}),
        ("graph_metric_timeseries", {"metric": "node_count", "window": {"t_a": 5, "t_b": 5}, "stride": 1}),
        ("graph_metric_timeseries", {"metric": "node_count", "window": {"t_a": 0, "t_b": 9}, "stride": 0}),
        ("graph_metric_timeseries", {"metric": "node_count", "window": {"t_a": 0}, "stride": 1}),
        ("graph_metric_timeseries", {"metric": "reciprocity", "window": {"t_a": 0, "t_b": 9}, "stride": 1,
                                     "rel_types": ["msg"]}),
        ("graph_metric_timeseries", {"metric": "active_edge_count", "window": {"t_a": 0, "t_b": 9},
                                     "stride": 1, "rel_types": ["msg", ""]}),
        ("burst_detection", {"target": "nobody", "window": {"t_a": 0, "t_b": 9}, "stride": 1}),
        ("burst_detection", {"target": "global", "window": {"t_a": 0, "t_b": 9}, "stride": 1,
                             "method": "mad"}),
        ("burst_detection", {"target": "global", "window": {"t_a": 0, "t_b": 9}, "stride": 1,
                             "params": {"w": 2, "min_history": 3}}),
        ("burst_detection", {"target": "global", "window": {"t_a": 0, "t_b": 9}, "stride": 1,
                             "params": {"min_history": 1}}),
        ("burst_detection", {"target": "global", "window": {"t_a": 0, "t_b": 9}, "stride": 1,
                             "params": {"threshold": 1e-10}}),
        ("burst_detection", {"target": "global", "window": {"t_a": 0, "t_b": 9}, "stride": 1,
                             "params": {"threshold": "3"}}),
        ("burst_detection", {"target": "global", "window": {"t_a": 0, "t_b": 9}, "stride": 1,
                             "params": {"width": 3}}),
        ("burst_detection", {"target": "global", "window": {"t_a": 0, "t_b": 9}, "stride": 1,
                             "method": None, "params": {"w": None, "threshold": None}}),
    ]  # fmt: skip
    codes = [compare(ctx, oracle, op, args) for op, args in cases]
    invalid, schema = "E_INVALID_ARG", "E_SCHEMA"
    assert codes == [invalid] * 4 + [schema, invalid, invalid, "E_NOT_FOUND"] + [invalid] * 4 + [
        schema,
        schema,
        "ok",
    ]
    with pytest.raises(InvalidArgError) as exc:
        call(ctx, "graph_metric_timeseries", {"metric": "node_count", "window": {"t_a": 0, "t_b": 4001},
                                              "stride": 2})  # fmt: skip
    assert exc.value.details == {"field": "stride", "n_buckets": 2001, "max_buckets": 2000, "min_stride": 3}


def _write_metric_store(store: Store) -> None:
    # the oracle test's metric_store: a->b interval [0, OPEN_END) plus events; c from 15, d on [25, 35)
    store.write([{"op": "assert_node", "uid": "a", "vt_s": 0}, {"op": "assert_node", "uid": "b", "vt_s": 0},
                 {"op": "assert_node", "uid": "c", "vt_s": 15},
                 {"op": "assert_node", "uid": "d", "vt_s": 25, "vt_e": 35},
                 {"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "follows",
                  "vt_s": 0}])  # fmt: skip
    ev = [
        ("a", "b", 3),
        ("b", "a", 4),
        ("a", "c", 16),
        ("c", "a", 17),
        ("b", "c", 18),
        ("d", "a", 26),
        ("a", "a", 27),
    ]
    store.write([{"op": "assert_edge", "src": s, "dst": d, "rel_type": "msg", "vt_s": t, "vt_e": t + 1}
                 for s, d, t in ev])  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "values"),
    [
        ("node_count", [2, 2, 3]),
        ("active_edge_count", [1, 1, 1]),
        ("mean_out_degree", [1, 1.333333333, 0.666666667]),  # {ab,ba}/{a,b}; {ab,ac,ca,bc}/{a,b,c}; {ab,da}/3
        ("edge_event_count", [3, 3, 2]),
        ("new_node_rate", [2, 1, 1]),
        ("reciprocity", [1, 0.666666667, 0]),
    ],
)
def test_hand_computed_metrics(tmp_path, backend, metric, values):
    store = Store.create(tmp_path / "m", backend, now=counter_clock())
    try:
        _write_metric_store(store)
        args = {"metric": metric, "window": {"t_a": 0, "t_b": 30}, "stride": 10}
        out = call(OpContext(store), "graph_metric_timeseries", args)["payload"]
        assert [r["value"] for r in out["rows"]] == values and out["n_buckets"] == 3
    finally:
        store.close()


def rows_by_cursor(ctx: OpContext, op: str, args: dict[str, Any]) -> list[Any]:
    """Every row of a call, read page by page through its cursors."""
    args, seen = dict(args), []
    while True:
        page = call(ctx, op, args)["payload"]
        seen += page["rows"]
        if page["cursor"] is None:
            return seen
        args["cursor"] = page["cursor"]


def test_cursor_reads_every_bucket(one):
    ctx = one[0]
    args: dict[str, Any] = {
        "metric": "reciprocity",
        "window": {"t_a": 0, "t_b": T_MAX},
        "stride": 9,
        "limit": 4,
    }
    seen = rows_by_cursor(ctx, "graph_metric_timeseries", args)
    full = call(ctx, "graph_metric_timeseries", {**args, "limit": 1000, "cursor": None})["payload"]
    assert seen == full["rows"] and len(seen) == full["rows_total"] == -(-T_MAX // 9)


def _big_profile(n: int) -> StoreProfile:
    vt = np.arange(n, dtype=np.int64) * 1000
    return StoreProfile(
        n_edges=n, n_nodes=n // 50, vt_min=0, vt_max=int(vt[-1]), vt_sorted=vt, max_degree=5000
    )


def test_cost_estimates_scale_and_refuse_with_suggestions(one):
    small, huge = _big_profile(10**5), _big_profile(10**8)
    args = MetricArgs.model_validate(
        {"metric": "mean_out_degree", "window": {"t_a": 0, "t_b": 10**9}, "stride": 10**7}
    )
    assert _metric_cost(small, args).seconds < 1
    est = _metric_cost(huge, args)
    assert est.seconds > 10 and any("edge_event_count" in s for s in est.suggestions)
    cheap = MetricArgs.model_validate(
        {"metric": "edge_event_count", "window": {"t_a": 0, "t_b": 10**9}, "stride": 10**7}
    )
    assert _metric_cost(huge, cheap).seconds < 0.1
    ctx = one[0]
    with pytest.raises(CostError) as exc:
        args = {"metric": "node_count", "window": {"t_a": 0, "t_b": 9}, "stride": 1}
        call(ctx, "graph_metric_timeseries", args, budget_s=1e-9)
    assert exc.value.details["suggestions"] and exc.value.details["budget_s"] == 1e-9
