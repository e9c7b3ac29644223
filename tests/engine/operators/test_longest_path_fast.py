"""longest_temporal_path: fast path == oracle on random bi-temporal stores (both backends; walks and
node-simple paths, with and without a wait limit), a plain enumeration of every walk on small cases, hand
cases (strict times, intervals, ties, the cap, no node twice, same-time hops, the wait limit), refusals,
and the node-simple search's budget."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, T_MAX, counter_clock, random_store, sample_args
from tgms.engine.errors import TGMSError
from tgms.engine.operators import longest_path
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import ORACLES, OracleStore
from tgms.engine.store import Store

STORES = 4
UIDS = [f"u{i}" for i in range(8)]
ORACLE = ORACLES["longest_temporal_path"]


@pytest.mark.parametrize("simple", [False, True], ids=["walks", "node-simple"])
def test_longest_path_matches_oracle(
    tmp_path: Path, backend: str, simple: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Walks (latest-departure rounds, or arrival-set rounds with a wait limit), and node-simple paths
    (``simple: true``, ``strict`` drawn: the depth-first search) against the oracle's memoized recursion
    and plain enumeration respectively."""
    outcomes: Counter[str] = Counter()
    lengths: Counter[int] = Counter()
    waits: Counter[bool] = Counter()
    per_store = max(-(-N_CASES // STORES), 10)
    for s in range(STORES):
        # odd stores: the arrival sets keyed by rank (what a store too wide for node·W + offset uses)
        monkeypatch.setattr(longest_path, "_PACK_LIMIT", 0 if s % 2 else 2**62)
        store, tts = random_store(tmp_path / f"s{s}", backend, seed=(900 if simple else 500) + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            rng = random.Random(s)
            for i in range(per_store):
                args = sample_args("longest_temporal_path", rng, UIDS, tts)
                if simple:
                    args.update(simple=True, strict=rng.random() < 0.5)
                    if rng.random() < 0.3:  # short simple paths: small limits, so that some bind
                        args["delta_max_wait"] = rng.choice([0, 1, 3, 10])
                if i % 3 == 0:
                    args["as_of_tt"] = rng.choice(tts)
                if i % 4 == 0:
                    args["window"] = {"t_a": 0, "t_b": T_MAX * 2}  # the whole history
                if compare(ctx, oracle, "longest_temporal_path", args) != "ok":
                    outcomes["error"] += 1
                    continue
                outcomes["ok"] += 1
                hops = call(ctx, "longest_temporal_path", args, check_cost=False)["payload"]["hops"]
                lengths[hops] += 1
                if args.get("delta_max_wait") is not None:  # the wait limit binds in some cases
                    free = {k: v for k, v in args.items() if k != "delta_max_wait"}
                    out = call(ctx, "longest_temporal_path", free, check_cost=False)["payload"]
                    waits[out["hops"] != hops] += 1
        finally:
            store.close()
    assert outcomes["ok"] >= N_CASES // 2, outcomes
    assert len(lengths) >= 3, lengths  # short, long and capped answers, not one degenerate case
    assert waits[True] and waits[False], waits  # the wait limit binds in some cases, not in all


def _walks(
    edges: list[dict[str, Any]], src: str | None, t_a: int, t_b: int, depth: int, delta: int | None = None
) -> list[list[Any]]:
    """Every walk of at most ``depth`` hops, as lists of (tau, eid, vid): plain enumeration (``delta``:
    each hop after the first at most that long after the previous one)."""
    out: list[list[Any]] = [[]]

    def go(node: str | None, alpha: int, walk: list[Any]) -> None:
        if len(walk) == depth:
            return
        for e in edges:
            tau = max(alpha + 1, e["vt_s"])
            if walk and delta is not None and tau - alpha > delta:
                continue
            if (node is None or e["src"] == node) and tau < e["vt_e"] and tau < t_b:
                walk.append((tau, e["eid"], e["vid"]))
                out.append(list(walk))
                go(e["dst"], tau, walk)
                walk.pop()

    go(src, t_a - 1, [])
    return out


def test_oracle_agrees_with_plain_enumeration(tmp_path: Path) -> None:
    """The oracle's memoized recursion against listing every walk: same length, and its path is the
    least walk of that length in (tau, eid, vid) step order."""
    store, _ = random_store(tmp_path / "s", "duckdb", seed=77, n_batches=3)
    try:
        oracle = OracleStore(*store.public_rows())
        edges = oracle.believed_edges(None)
        rng = random.Random(3)
        for i in range(50):
            t_a = rng.randint(0, T_MAX)
            t_b = t_a + rng.randint(1, T_MAX)
            src = rng.choice([None, *UIDS])
            cap = rng.randint(1, 4)
            delta = rng.choice([0, 1, 3, 10, 40]) if i % 2 else None
            args = {"window": {"t_a": t_a, "t_b": t_b}, "src": src, "max_hops": cap, "delta_max_wait": delta}
            got = ORACLE(oracle, args)
            walks = _walks(edges, src, t_a, t_b, cap + 1, delta)
            longest = max(len(w) for w in walks)
            assert got["capped"] == (longest > cap)
            assert got["hops"] == min(longest, cap)
            want = min(w for w in walks if len(w) == got["hops"])
            assert [(r["t"], r["eid"], r["vid"]) for r in got["rows"]] == want
    finally:
        store.close()


@pytest.fixture
def chain(tmp_path: Path, backend: str):
    store = Store.create(tmp_path / "s", backend, now=counter_clock())
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abcdz"])

    def ev(s: str, d: str, t: int, dur: int = 1) -> dict[str, Any]:
        return {"op": "assert_edge", "src": s, "dst": d, "rel_type": "m", "vt_s": t, "vt_e": t + dur}

    store.write([ev("a", "b", 1), ev("b", "c", 1), ev("b", "c", 3), ev("c", "d", 5),
                 ev("d", "a", 9, dur=20), ev("z", "z", 40, dur=3)])  # fmt: skip
    yield store
    store.close()


def _call(store: Store, **args: Any) -> dict[str, Any]:
    ctx = OpContext(store)
    assert compare(ctx, OracleStore(*store.public_rows()), "longest_temporal_path", args) == "ok"
    return call(ctx, "longest_temporal_path", args)["payload"]


def test_strict_times_intervals_and_repeats(chain: Store) -> None:
    out = _call(chain, window={"t_a": 0, "t_b": 100}, src="a")
    # a→b at 1; b→c at 1 would not chain (strictly later only): b→c at 3, c→d at 5, d→a (valid [9, 29))
    # entered at 9, then a walk may revisit a but a→b is over
    assert out["nodes"] == ["a", "b", "c", "d", "a"] and out["hops"] == 4 and not out["capped"]
    assert [r["t"] for r in out["rows"]] == [1, 3, 5, 9]
    loop = _call(chain, window={"t_a": 0, "t_b": 100}, src="z")  # a self-loop valid [40, 43): 40, 41, 42
    assert loop["hops"] == 3 and [r["t"] for r in loop["rows"]] == [40, 41, 42]
    late = _call(chain, window={"t_a": 12, "t_b": 100}, src="d")  # the interval arc entered mid-way
    assert late["hops"] == 1 and late["rows"][0]["t"] == 12


def test_any_start_cap_and_empty(chain: Store) -> None:
    out = _call(chain, window={"t_a": 0, "t_b": 100})
    assert out["hops"] == 4 and out["nodes"][0] == "a"
    capped = _call(chain, window={"t_a": 0, "t_b": 100}, max_hops=2)
    # two first hops at t=1 (a→b, b→c) both continue: the one of lesser eid is taken (checked by the oracle)
    assert capped["hops"] == 2 and capped["capped"] and capped["rows"][0]["t"] == 1
    none = _call(chain, window={"t_a": 60, "t_b": 100}, src="a")
    assert none == {**none, "hops": 0, "nodes": ["a"], "rows": [], "rows_total": 0, "capped": False}
    cut = _call(chain, window={"t_a": 0, "t_b": 5}, src="a")  # c→d at 5 is outside [0, 5)
    assert cut["hops"] == 2


def test_node_simple_paths_and_same_time_hops(chain: Store) -> None:
    whole = {"t_a": 0, "t_b": 100}
    simple = _call(chain, window=whole, src="a", simple=True)  # the walk's return to a is not taken
    assert simple["nodes"] == ["a", "b", "c", "d"] and [r["t"] for r in simple["rows"]] == [1, 3, 5]
    # no earlier than the previous hop: b→c at 1 now follows a→b at 1, the least path of 3 hops
    same = _call(chain, window=whole, src="a", simple=True, strict=False)
    assert same["hops"] == 3 and [r["t"] for r in same["rows"]] == [1, 1, 5]
    loop = _call(chain, window=whole, src="z", simple=True)  # a self-loop revisits its node
    assert loop == {**loop, "hops": 0, "nodes": ["z"], "rows": []}
    anywhere = _call(chain, window=whole, simple=True, strict=False)
    assert anywhere["hops"] == 3 and len(set(anywhere["nodes"])) == 4
    capped = _call(chain, window=whole, simple=True, max_hops=2)
    assert capped["hops"] == 2 and capped["capped"]


def test_wait_limit_exactly_delta_and_one_more(tmp_path: Path, backend: str) -> None:
    """delta_max_wait: every hop after the first at most delta after the previous one (walks and simple
    paths); the first hop is not limited; an interval edge entered after it started counts a wait of 1."""
    store = Store.create(tmp_path / "w", backend, now=counter_clock())
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abcdexy"])

    def ev(s: str, d: str, t: int, dur: int = 1) -> dict[str, Any]:
        return {"op": "assert_edge", "src": s, "dst": d, "rel_type": "m", "vt_s": t, "vt_e": t + dur}

    # a chain with waits 3 then 3; b→x at 50, x→y open [0, 100), y→e at 60
    store.write([ev("a", "b", 10), ev("b", "c", 13), ev("c", "d", 16), ev("d", "a", 16),
                 ev("x", "y", 0, dur=100), ev("b", "x", 50), ev("y", "e", 60)])  # fmt: skip
    whole = {"t_a": 0, "t_b": 200}
    try:
        # no limit: a→b, b→x, x→y, y→e (10, 50, 51, 60); waits of 3: a→b, b→c, c→d (10, 13, 16)
        for delta, hops in ((3, 3), (2, 1), (0, 1), (None, 4)):
            for simple in (False, True):
                out = _call(store, window=whole, src="a", delta_max_wait=delta, simple=simple)
                assert out["hops"] == hops, (delta, simple, out)
        exact = _call(store, window=whole, src="a", delta_max_wait=3)
        assert [r["t"] for r in exact["rows"]] == [10, 13, 16]  # the first hop waited 10: not limited
        # same-time hops (simple, strict false): c→d and d→a at 16 chain with a wait of 0
        early = {"t_a": 0, "t_b": 45}
        same = _call(store, window=early, src="b", simple=True, strict=False, delta_max_wait=0)
        assert same["hops"] == 1
        same = _call(store, window=early, src="b", simple=True, strict=False, delta_max_wait=3)
        assert [r["t"] for r in same["rows"]] == [13, 16, 16] and same["nodes"] == ["b", "c", "d", "a"]
        # b→x at 50, x→y entered after it started at 51 (a wait of 1), y→e at 60 (a wait of 9)
        for delta, hops in ((9, 3), (8, 2), (1, 2), (0, 1)):
            out = _call(store, window={"t_a": 20, "t_b": 200}, src="b", delta_max_wait=delta)
            assert out["hops"] == hops, (delta, out)
        loop = _call(store, window={"t_a": 20, "t_b": 200}, src="b", delta_max_wait=9)
        assert [r["t"] for r in loop["rows"]] == [50, 51, 60]
        # from any start: x→y entered at 20 cannot wait 40 for y→e; the longest is the one from b
        anywhere = _call(store, window={"t_a": 20, "t_b": 200}, delta_max_wait=9)
        assert anywhere["hops"] == 3 and anywhere["nodes"] == ["b", "x", "y", "e"]
    finally:
        store.close()


def test_a_node_simple_search_that_outgrows_its_budget_is_refused_the_same_way_every_time(
    tmp_path: Path, backend: str
) -> None:
    """A complete graph of 9 nodes with every arc at 3 instants: far too many simple paths. The search
    re-prices itself from its state count (no clock), so the refusal is the same on every run."""
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
            assert err.value.code == "E_COST" and err.value.details["stage"] == "run"
            assert "set src" in err.value.details["suggestions"]
            refusals.append((str(err.value), err.value.details))
        assert refusals[0] == refusals[1]
        # one start and a cap: small enough to answer, every node once
        out = call(ctx, "longest_temporal_path", {**args, "src": "n0", "max_hops": 2}, budget_s=10)["payload"]
        assert out["hops"] == 2 and out["capped"] and len(set(out["nodes"])) == 3
    finally:
        store.close()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({}, "E_SCHEMA"),
        ({"window": {"t_a": 5, "t_b": 5}}, "E_INVALID_ARG"),
        ({"window": {"t_a": 0, "t_b": 5}, "max_hops": 0}, "E_INVALID_ARG"),
        ({"window": {"t_a": 0, "t_b": 5}, "max_hops": 1001}, "E_INVALID_ARG"),
        ({"window": {"t_a": 0, "t_b": 5}, "src": "nobody"}, "E_NOT_FOUND"),
        ({"window": {"t_a": 0, "t_b": 5}, "rel_types": "m"}, "E_SCHEMA"),
        ({"window": {"t_a": 0, "t_b": 5}, "strict": False}, "E_INVALID_ARG"),  # same-time hops: simple only
        ({"window": {"t_a": 0, "t_b": 5}, "delta_max_wait": -1}, "E_INVALID_ARG"),
        ({"window": {"t_a": 0, "t_b": 5}, "delta_max_wait": "1"}, "E_SCHEMA"),
        ({"window": {"t_a": 0, "t_b": 5}, "delta_max_wait": 1.5}, "E_SCHEMA"),
    ],
)
def test_refusals(chain: Store, args: dict[str, Any], code: str) -> None:
    ctx = OpContext(chain)
    assert compare(ctx, OracleStore(*chain.public_rows()), "longest_temporal_path", args) == code
    with pytest.raises(TGMSError) as err:
        call(ctx, "longest_temporal_path", args)
    assert err.value.code == code


def test_cost_guard_suggests_narrowing(chain: Store) -> None:
    with pytest.raises(TGMSError) as err:
        call(OpContext(chain), "longest_temporal_path", {"window": {"t_a": 0, "t_b": 100}}, budget_s=1e-9)
    assert err.value.code == "E_COST" and any("max_hops" in s for s in err.value.details["suggestions"])
