"""neighborhood_evolution, co_active: fast path == brute-force oracle on random bi-temporal stores.

Uses the stores of :mod:`tests.engine.operators.test_metrics_fast` (events on coarse clocks, interval and
open-ended edges, parallel edges, self-loops, corrections, retractions). co_active cycles through all 13
Allen relations with random selections; the interval join itself is also checked against the oracle's
``allen`` on large random interval sets. Cases per operator: ``TGMS_ORACLE_CASES`` (default 50).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES
from tests.engine.operators.test_metrics_fast import (
    STORES,
    T_MAX,
    common,
    one,
    rows_by_cursor,
    run_cases,
    window,
)
from tgms.engine.errors import CostError
from tgms.engine.operators import allen as allen_mod
from tgms.engine.operators import evolution
from tgms.engine.operators.allen import RunPairs, allen_join, allen_pairs
from tgms.engine.operators.cost import StoreProfile
from tgms.engine.operators.edge_arrays import EdgeArrays
from tgms.engine.operators.envelope import call
from tgms.engine.operators.evolution import CoActiveArgs, _co_active_cost
from tgms.engine.operators.oracle.evolution import ALLEN_RELATIONS, allen
from tgms.engine.timeutil import OPEN_END

__all__ = ["one"]  # the fixture, re-exported for pytest


def evolution_args(rng: random.Random, i: int, tts: list[int], uids: list[str]) -> dict[str, Any]:
    t1 = rng.choice([0, 1, rng.randint(0, T_MAX)])
    t2 = t1 + rng.choice([1, rng.randint(1, T_MAX), T_MAX * 3])
    args: dict[str, Any] = {"uid": rng.choice(uids), "t1": t1, "t2": t2}
    if rng.random() < 0.6:
        args["stride"] = rng.choice([1, rng.randint(1, 40), t2 - t1 + 3])
    return common(rng, args, tts)


def _spec(rng: random.Random, uids: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for key in ("src", "dst", "uid"):
        if rng.random() < 0.2:
            n = 0 if rng.random() < 0.05 else rng.randint(1, 4)
            spec[key] = rng.choice(uids) if rng.random() < 0.4 else rng.sample(uids, n)
    if rng.random() < 0.2:
        spec["rel_types"] = (
            ["other"] if rng.random() < 0.1 else rng.sample(["msg", "follows"], rng.randint(1, 2))
        )
    if rng.random() < 0.3:
        spec["window"] = window(rng)
    return spec


def co_active_args(rng: random.Random, i: int, tts: list[int], uids: list[str]) -> dict[str, Any]:
    rel = ALLEN_RELATIONS[i % len(ALLEN_RELATIONS)]
    args = {"a_spec": _spec(rng, uids), "b_spec": _spec(rng, uids), "allen_relation": rel}
    if rel in ("before", "after") and (i // len(ALLEN_RELATIONS)) % 2 == 0:
        args["gap"] = rng.choice([1, 2, rng.randint(1, 40), rng.randint(1, T_MAX)])
    return common(rng, args, tts)


def test_neighborhood_evolution_matches_oracle(tmp_path, backend):
    outcomes = run_cases(tmp_path, backend, "neighborhood_evolution", evolution_args, seed_base=2000)
    assert sum(outcomes.values()) >= N_CASES and outcomes["ok"] >= N_CASES // 2, outcomes


def test_co_active_matches_oracle(tmp_path, backend):
    n = max(N_CASES, 2 * len(ALLEN_RELATIONS) * STORES)  # every relation on every store, twice
    outcomes = run_cases(tmp_path, backend, "co_active", co_active_args, n, seed_base=2000)
    assert outcomes["ok"] >= n // 2, outcomes


def test_every_relation_full_selections(one):
    ctx, oracle, tts, uids = one
    for a in (None, tts[len(tts) // 2]):
        for rel in ALLEN_RELATIONS:
            for a_spec, b_spec in (({}, {}), ({"rel_types": ["follows"]}, {"uid": uids[:4]})):
                args = {"a_spec": a_spec, "b_spec": b_spec, "allen_relation": rel, "as_of_tt": a, "limit": 7}
                assert compare(ctx, oracle, "co_active", args) == "ok"


def test_errors_match_oracle(one):
    ctx, oracle, _, uids = one
    cases = [
        ("neighborhood_evolution", {"uid": "nobody", "t1": 1, "t2": 9}),
        ("neighborhood_evolution", {"uid": uids[0], "t1": 9, "t2": 9}),
        ("neighborhood_evolution", {"uid": uids[0], "t1": 0, "t2": 2001, "stride": 1}),
        ("neighborhood_evolution", {"uid": uids[0], "t1": 0, "t2": 9, "stride": 0}),
        ("neighborhood_evolution", {"uid": uids[0], "t1": 0, "t2": 9, "stride": None}),
        ("co_active", {"a_spec": {"src": "nobody"}, "b_spec": {}, "allen_relation": "meets"}),
        ("co_active", {"a_spec": {}, "b_spec": {"uid": [uids[0], "nobody"]}, "allen_relation": "meets"}),
        ("co_active", {"a_spec": {}, "b_spec": {}, "allen_relation": "near"}),
        ("co_active", {"a_spec": {"who": 1}, "b_spec": {}, "allen_relation": "meets"}),
        ("co_active", {"a_spec": {"rel_types": "msg"}, "b_spec": {}, "allen_relation": "meets"}),
        ("co_active", {"a_spec": {"window": {"t_a": 5, "t_b": 1}}, "b_spec": {}, "allen_relation": "meets"}),
        ("co_active", {"a_spec": None, "b_spec": {}, "allen_relation": "meets"}),
        ("co_active", {"a_spec": {"src": None, "window": None}, "b_spec": {}, "allen_relation": "equals"}),
        ("co_active", {"a_spec": {}, "b_spec": {}, "allen_relation": "meets", "gap": 5}),
        ("co_active", {"a_spec": {}, "b_spec": {}, "allen_relation": "before", "gap": 0}),
        ("co_active", {"a_spec": {}, "b_spec": {}, "allen_relation": "after", "gap": "5"}),
        ("co_active", {"a_spec": {}, "b_spec": {}, "allen_relation": "after", "gap": None}),
    ]
    codes = [compare(ctx, oracle, op, args) for op, args in cases]
    nf, inv, sch = "E_NOT_FOUND", "E_INVALID_ARG", "E_SCHEMA"
    assert codes == [nf, inv, inv, inv, "ok", nf, nf, inv, sch, sch, inv, sch, "ok", inv, inv, sch, "ok"]


def test_gap_bounds_the_idle_time(one):
    """before with gap G keeps exactly the before pairs with b.vt_s - a.vt_e <= G, on every selection."""
    ctx, oracle, _, _ = one
    full = call(ctx, "co_active", {"a_spec": {}, "b_spec": {}, "allen_relation": "before", "limit": 10_000})
    idle = [r["b"]["vt_s"] - r["a"]["vt_e"] for r in full["payload"]["rows"]]
    for gap in (1, 3, 17, max(idle)):
        args = {"a_spec": {}, "b_spec": {}, "allen_relation": "before", "gap": gap, "limit": 10_000}
        assert compare(ctx, oracle, "co_active", args) == "ok"
        got = call(ctx, "co_active", args)["payload"]
        assert got["rows_total"] == sum(1 for d in idle if d <= gap)
        after = {**args, "allen_relation": "after"}  # the mirror relation: the same pairs, swapped
        assert compare(ctx, oracle, "co_active", after) == "ok"
        assert call(ctx, "co_active", after)["payload"]["rows_total"] == got["rows_total"]
    assert 0 < sum(1 for d in idle if d <= 3) < len(idle)  # the store exercises both sides of the bound


def test_cursor_reads_every_pair(one):
    ctx = one[0]
    args: dict[str, Any] = {"a_spec": {}, "b_spec": {}, "allen_relation": "before", "limit": 50}
    seen = rows_by_cursor(ctx, "co_active", args)
    full = call(ctx, "co_active", {**args, "limit": 10_000, "cursor": None})["payload"]
    assert seen == full["rows"] and len(seen) == full["rows_total"] > 100


def _intervals(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    vs = np.sort(rng.integers(0, 60, n))
    length = rng.choice([1, 1, 1, 2, 3, 5, 20, 70], n)
    ve = vs + length
    ve[rng.random(n) < 0.05] = OPEN_END
    return vs.astype(np.int64), ve.astype(np.int64)


@pytest.mark.parametrize("rel", ALLEN_RELATIONS)
def test_allen_join_matches_pairwise_allen(rel):
    rng = np.random.default_rng(len(rel))
    vs, ve = _intervals(rng, 400)
    n32 = pa.array(np.zeros(400, np.int32))
    ids = np.arange(400)
    keys = pa.table({"vid": ids, "eid": ids, "src": n32, "dst": n32, "vt_s": vs, "vt_e": ve})
    e = EdgeArrays(keys)
    for _ in range(3):
        ia = np.sort(rng.choice(400, rng.integers(1, 200), replace=False))
        ib = np.sort(rng.choice(400, rng.integers(1, 400), replace=False))
        got_a, got_b = allen_join(e, rel, ia, ib)
        want = [(x, y) for x in ia.tolist() for y in ib.tolist()
                if x != y and allen(int(vs[x]), int(ve[x]), int(vs[y]), int(ve[y])) == rel]  # fmt: skip
        assert list(zip(got_a.tolist(), got_b.tolist(), strict=True)) == want
        if rel in ("before", "after"):
            gap = int(rng.integers(1, 20))
            idle = (lambda x, y: vs[y] - ve[x]) if rel == "before" else (lambda x, y: vs[x] - ve[y])
            got_a, got_b = allen_join(e, rel, ia, ib, gap)
            near = [(x, y) for x, y in want if idle(x, y) <= gap]
            assert list(zip(got_a.tolist(), got_b.tolist(), strict=True)) == near
        # a page read from the (possibly lazy) pairs is the same slice of the full list
        pairs = allen_pairs(e, rel, ia, ib)
        assert len(pairs) == len(want)
        if want:
            idx = np.sort(rng.choice(len(want), min(len(want), 17), replace=False))
            pa_, pb_ = pairs.at(idx)
            assert list(zip(pa_.tolist(), pb_.tolist(), strict=True)) == [want[i] for i in idx.tolist()]


def test_before_and_meets_joins_are_lazy_and_skip_self_pairs():
    vs = np.array([0, 1, 2, 5, 9], np.int64)
    ve = vs + 1
    ids = np.arange(5)
    n32 = pa.array(np.zeros(5, np.int32))
    e = EdgeArrays(pa.table({"vid": ids, "eid": ids, "src": n32, "dst": n32, "vt_s": vs, "vt_e": ve}))
    pairs = allen_pairs(e, "meets", ids, ids)  # [0,1) meets [1,2) meets [2,3); [5,6), [9,10) meet nothing
    assert isinstance(pairs, RunPairs)
    assert pairs.at(np.arange(len(pairs)))[0].tolist() == [0, 1]
    assert pairs.at(np.arange(len(pairs)))[1].tolist() == [1, 2]
    before = allen_pairs(e, "before", ids, ids)
    assert isinstance(before, RunPairs) and len(before) == 4 + 3 + 2 + 1 - 2  # minus the two meets


def _profile(n: int) -> StoreProfile:
    vt = np.arange(n, dtype=np.int64) * 1_000_000
    return StoreProfile(
        n_edges=n, n_nodes=n // 50, vt_min=0, vt_max=int(vt[-1]), vt_sorted=vt, max_degree=2000
    )


def test_co_active_cost_refuses_huge_joins_with_suggestions(one):
    p = _profile(10**6)
    huge = CoActiveArgs.model_validate({"a_spec": {}, "b_spec": {}, "allen_relation": "before"})
    est = _co_active_cost(p, huge)
    assert est.seconds > 1000
    text = " ".join(est.suggestions)
    assert "add a window" in text and "restrict a_spec.src" in text and "narrow the selections" in text
    small = CoActiveArgs.model_validate(
        {
            "a_spec": {"src": "x"},
            "b_spec": {"uid": "x", "window": {"t_a": 0, "t_b": 10**10}},
            "allen_relation": "during",
        }
    )
    assert _co_active_cost(p, small).seconds < 2
    ctx = one[0]
    with pytest.raises(CostError) as exc:
        call(ctx, "co_active", {"a_spec": {}, "b_spec": {}, "allen_relation": "before"}, budget_s=1e-6)
    assert exc.value.details["suggestions"]


def test_run_time_stop_and_lazy_rows(one, monkeypatch):
    ctx = one[0]
    args = {"a_spec": {}, "b_spec": {}, "allen_relation": "after"}
    full = call(ctx, "co_active", {**args, "limit": 10_000})["payload"]
    monkeypatch.setattr(allen_mod, "MAX_CANDIDATES", 10)
    with pytest.raises(CostError) as exc:
        call(ctx, "co_active", args, check_cost=False)
    assert exc.value.details["limit"] == 10 and exc.value.details["suggestions"]
    monkeypatch.undo()
    e = ctx.edges(None)
    rows = evolution.PairRows(ctx, e, allen_pairs(e, "after", np.arange(e.n), np.arange(e.n)))
    assert len(rows) == full["rows_total"] > 3
    assert rows[0] == full["rows"][0] and rows[-1] == full["rows"][-1] and rows[1:3] == full["rows"][1:3]
    with pytest.raises(IndexError):
        rows[len(rows)]
