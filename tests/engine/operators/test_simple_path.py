"""longest_temporal_path with ``simple: true`` (no node twice; ``strict: false``: a hop may be at the same
time as the one before): fast depth-first search == the oracle's plain enumeration on random bi-temporal
stores (both backends), hand cases, the argument rule, and the cost guard re-pricing a search that grows."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.errors import TGMSError
from engine.operators.context import OpContext
from engine.operators.envelope import call
from engine.operators.oracle import OracleStore
from engine.store import Store
from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, T_MAX, counter_clock, random_store, sample_args

STORES = 4
UIDS = [f"u{i}" for i in range(8)]


def test_simple_paths_match_the_oracle(tmp_path: Path, backend: str) -> None:
    outcomes: Counter[str] = Counter()
    lengths: Counter[int] = Counter()
    per_store = max(-(-N_CASES // STORES), 10)
    for s in range(STORES):
        store, tts = random_store(tmp_path / f"s{s}", backend, seed=900 + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            rng = random.Random(s)
            for i in range(per_store):
                args = sample_args("longest_temporal_path", rng, UIDS, tts)
                args["simple"] = True
                args["strict"] = rng.random() < 0.5
                if i % 3 == 0:
                    args["as_of_tt"] = rng.choice(tts)
                if i % 4 == 0:
                    args["window"] = {"t_a": 0, "t_b": T_MAX * 2}  # the whole history
                outcomes[compare(ctx, oracle, "longest_temporal_path", args)] += 1
                if i % 2 == 0:
                    lengths[
                        call(ctx, "longest_temporal_path", args, check_cost=False)["payload"]["hops"]
                    ] += 1
        finally:
            store.close()
    assert outcomes["ok"] >= N_CASES // 2, outcomes
    assert len(lengths) >= 3, lengths  # short, long and capped answers, not one degenerate case


@pytest.fixture
def chain(tmp_path: Path, backend: str):
    store = Store.create(tmp_path / "s", backend, now=counter_clock())
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abcdz"])

    def ev(s: str, d: str, t: int, dur: int = 1) -> dict[str, Any]:
        return {"op": "assert_edge", "src": s, "dst": d, "rel_type": "m", "vt_s": t, "vt_e": t + dur}

    store.write([ev("a", "b", 1), ev("b", "c", 1), ev("b", "c", 3), ev("c", "d", 5),
                 ev("d", "a", 9, dur=20), ev("z", "z", 40, dur=3), ev("d", "b", 7)])  # fmt: skip
    yield store
    store.close()


def _call(store: Store, **args: Any) -> dict[str, Any]:
    ctx = OpContext(store)
    assert compare(ctx, OracleStore(*store.public_rows()), "longest_temporal_path", args) == "ok"
    return call(ctx, "longest_temporal_path", args)["payload"]


def test_no_node_twice_and_same_time_hops(chain: Store) -> None:
    whole = {"t_a": 0, "t_b": 100}
    walk = _call(chain, window=whole, src="a")  # the walk goes back to b (d→b at 7)
    assert walk["nodes"] == ["a", "b", "c", "d", "b"]
    simple = _call(chain, window=whole, src="a", simple=True)
    assert simple["nodes"] == ["a", "b", "c", "d"] and [r["t"] for r in simple["rows"]] == [1, 3, 5]
    # no earlier than the previous hop: b→c at 1 now follows a→b at 1, the least path of 3 hops
    same = _call(chain, window=whole, src="a", simple=True, strict=False)
    assert same["hops"] == 3 and [r["t"] for r in same["rows"]] == [1, 1, 5]
    loop = _call(chain, window=whole, src="z", simple=True)  # a self-loop revisits its node
    assert loop == {**loop, "hops": 0, "nodes": ["z"], "rows": []}
    anywhere = _call(chain, window=whole, simple=True, strict=False)  # d→b is never taken: b is on the path
    assert anywhere["hops"] == 3 and len(set(anywhere["nodes"])) == 4  # which start: the oracle's rule
    capped = _call(chain, window=whole, simple=True, max_hops=2)
    assert capped["hops"] == 2 and capped["capped"]


def test_strict_false_needs_simple(chain: Store) -> None:
    args = {"window": {"t_a": 0, "t_b": 100}, "strict": False}
    assert compare(OpContext(chain), OracleStore(*chain.public_rows()), "longest_temporal_path", args) == (
        "E_INVALID_ARG"
    )


def test_a_search_that_outgrows_its_budget_is_refused_the_same_way_every_time(
    tmp_path: Path, backend: str
) -> None:
    """A complete graph of 9 nodes with every arc at every one of 3 instants: ~10^5+ simple paths. The
    search re-prices itself from its state count (no clock), so the refusal is the same on every run."""
    store = Store.create(tmp_path / "dense", backend, now=counter_clock())
    nodes = [f"n{i}" for i in range(9)]
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in nodes])
    store.write([
        {"op": "assert_edge", "src": s, "dst": d, "rel_type": "m", "vt_s": t, "vt_e": t + 1}
        for s in nodes for d in nodes if s != d for t in (10, 20, 30)
    ])  # fmt: skip
    try:
        ctx = OpContext(store)
        args = {"window": {"t_a": 0, "t_b": 100}, "simple": True, "strict": False}
        refusals = []
        for _ in range(2):
            with pytest.raises(TGMSError) as err:
                call(ctx, "longest_temporal_path", args, budget_s=0.05)
            refusals.append(err.value.to_dict() if hasattr(err.value, "to_dict") else str(err.value))
            assert err.value.code == "E_COST" and err.value.details["stage"] == "run"
            assert "set src" in err.value.details["suggestions"]
        assert refusals[0] == refusals[1]
        # one start and a cap: small enough to answer, and every node once
        out = call(ctx, "longest_temporal_path", {**args, "src": "n0", "max_hops": 2}, budget_s=10)["payload"]
        assert out["hops"] == 2 and out["capped"] and len(set(out["nodes"])) == 3
    finally:
        store.close()
