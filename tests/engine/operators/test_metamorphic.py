"""Metamorphic properties of the operators (no oracle needed):

- bi-temporal immutability: every operator's result pinned to a past ``as_of_tt`` is byte-identical after
  later writes (corrections included);
- backend independence: the same event log replayed into DuckDB and Kùzu gives identical envelopes;
- pagination: following the cursor and concatenating pages gives the unpaginated result;
- diff composition: the eid sets of ``diff_snapshots`` compose over t1 < t2 < t3.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.engine.operators.sampling import T_MAX, random_store, sample_args
from tgms.engine.errors import TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.registry import OPERATOR_ORDER, REGISTRY, load_all
from tgms.engine.store import replay

load_all()
REGISTERED = [op for op in OPERATOR_ORDER if op in REGISTRY]
UIDS = [f"u{i}" for i in range(8)]


def _try(ctx: OpContext, op: str, args: dict[str, Any]) -> str:
    """Canonical bytes of the envelope, or the error code."""
    try:
        env = call(ctx, op, dict(args), check_cost=False)
        if op == "compute":  # reads no store and takes no belief state: only its result is pinned
            env.pop("dataset_extent")
        return json.dumps(env, sort_keys=True)
    except TGMSError as exc:
        return exc.code


@pytest.mark.parametrize("op", REGISTERED)
def test_pinned_results_are_immutable(tmp_path, op):
    store, tts = random_store(tmp_path / "s", "duckdb", seed=7)
    try:
        rng = random.Random(op)
        pinned = []
        for _ in range(12):
            args = sample_args(op, rng, UIDS, tts)
            if op != "compute":
                args["as_of_tt"] = rng.choice(tts)
            pinned.append((args, _try(OpContext(store), op, args)))
        # later beliefs: corrections, retractions, new facts over the same identities
        store.write(
            [{"op": "assert_edge", "src": "u1", "dst": "u2", "rel_type": "msg", "vt_s": 5, "vt_e": 6}]
        )
        store.try_write(
            [{"op": "correct", "ref": {"uid": "u3"}, "props": {"name": "Later"}, "vt_s": 0, "vt_e": T_MAX}]
        )
        store.try_write(
            [
                {
                    "op": "correct",
                    "ref": {"src": "u1", "dst": "u2", "rel_type": "msg"},
                    "props": {"w": 99},
                    "vt_s": 0,
                    "vt_e": T_MAX,
                }
            ]
        )
        ctx = OpContext(store)
        for args, before in pinned:
            assert _try(ctx, op, args) == before, f"{op} {args} changed after later writes"
    finally:
        store.close()


def test_duckdb_and_kuzu_give_identical_envelopes(tmp_path, backend):
    if backend == "duckdb":
        pytest.skip("compares the kuzu replay against the duckdb original")
    src, tts = random_store(tmp_path / "orig", "duckdb", seed=11)
    src.close()
    from tgms.engine.store import Store

    a = Store.open(tmp_path / "orig", read_only=True)
    b = replay(tmp_path / "orig" / "eventlog.jsonl", tmp_path / "kz", "kuzu")
    try:
        assert a.digest() == b.digest()
        ca, cb = OpContext(a), OpContext(b)
        rng = random.Random(3)
        for op in REGISTERED:
            for _ in range(6):
                args = sample_args(op, rng, UIDS, tts)
                assert _try(ca, op, args) == _try(cb, op, args), f"{op} {args}"
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("op", [op for op in REGISTERED if REGISTRY[op].lists])
def test_pages_concatenate_to_the_full_result(tmp_path, op):
    store, tts = random_store(tmp_path / "s", "duckdb", seed=21, n_batches=8)
    try:
        ctx = OpContext(store)
        lists = REGISTRY[op].lists
        rng = random.Random(op)
        checked = 0
        for _ in range(15):
            args = sample_args(op, rng, UIDS, tts)
            args.pop("limit", None)
            try:
                full = call(ctx, op, {**args, "limit": 10_000}, check_cost=False)["payload"]
            except TGMSError:
                continue
            limit = rng.randint(1, 3)
            got: dict[str, list[Any]] = {name: [] for name in lists}
            cursor = None
            for _ in range(10_000):
                page = call(ctx, op, {**args, "limit": limit, "cursor": cursor}, check_cost=False)["payload"]
                for name in lists:
                    got[name] += page[name]
                    assert page[f"{name}_total"] == full[f"{name}_total"]
                cursor = page["cursor"]
                if cursor is None:
                    break
                assert page["truncated"] is True
            for name in lists:
                assert got[name] == full[name], f"{op} {args}: pages of {name} differ"
            checked += 1
        assert checked >= 5
    finally:
        store.close()


def test_a_cursor_from_another_query_is_refused(tmp_path):
    store, _ = random_store(tmp_path / "s", "duckdb", seed=5)
    try:
        ctx = OpContext(store)
        page = call(ctx, "entity_history", {"uid": "u1", "include_edges": True, "limit": 1})["payload"]
        assert page["cursor"] is not None
        with pytest.raises(TGMSError) as err:
            call(
                ctx,
                "entity_history",
                {"uid": "u2", "include_edges": True, "limit": 1, "cursor": page["cursor"]},
            )
        assert err.value.code == "E_INVALID_ARG"
    finally:
        store.close()


def _eids(payload: dict[str, Any], key: str) -> set[int]:
    return {r["eid"] for r in payload[key]}


def test_diff_snapshots_composes(tmp_path):
    store, _ = random_store(tmp_path / "s", "duckdb", seed=9, n_batches=10)
    try:
        ctx = OpContext(store)
        rng = random.Random(0)
        for _ in range(30):
            t1, t2, t3 = sorted(rng.sample(range(T_MAX), 3))

            def d(a: int, b: int) -> dict[str, Any]:
                return call(ctx, "diff_snapshots", {"t1": a, "t2": b, "limit": 10_000})["payload"]

            d12, d23, d13 = d(t1, t2), d(t2, t3), d(t1, t3)
            a12, r12 = _eids(d12, "edges_added"), _eids(d12, "edges_removed")
            a23, r23 = _eids(d23, "edges_added"), _eids(d23, "edges_removed")
            assert _eids(d13, "edges_added") == (a12 - r23) | (a23 - r12)
            assert _eids(d13, "edges_removed") == (r12 - a23) | (r23 - a12)
            n = {k: {r["uid"] for r in p[k]} for p, k in ((d12, "nodes_added"),)}
            assert n["nodes_added"] <= {r["uid"] for r in d13["nodes_added"]} | {
                r["uid"] for r in d23["nodes_removed"]
            }
    finally:
        store.close()


def test_one_context_sees_every_later_write(tmp_path, backend):
    """Derived caches are keyed on the store's batch generation: a write is visible to the next call."""
    store, _ = random_store(tmp_path / "s", backend, seed=17)
    try:
        ctx = OpContext(store)
        before = call(ctx, "entity_history", {"uid": "u1", "include_edges": True})
        n_edges = ctx.edges(None).n
        store.write(
            [{"op": "assert_edge", "src": "u1", "dst": "u2", "rel_type": "msg", "vt_s": 7, "vt_e": 8}]
        )
        after = call(ctx, "entity_history", {"uid": "u1", "include_edges": True})
        assert after["result_digest"] != before["result_digest"]
        assert ctx.edges(None).n == n_edges + 1
    finally:
        store.close()


@pytest.mark.parametrize("seed", [3, 17, 29])
def test_edge_statistics_are_the_same_from_aggregates_and_from_the_arrays(tmp_path, seed):
    """The cost profile and the known-uid mask come from backend aggregate queries on a fresh context and
    from the loaded edge arrays otherwise: same values at every belief state, so guard decisions and
    E_NOT_FOUND never depend on what happens to be cached."""
    from tgms.engine.operators.cost import profile

    store, tts = random_store(tmp_path / "s", "duckdb", seed=seed)
    try:
        for as_of in [None, *sorted(tts)[:: max(1, len(tts) // 4)]]:
            fresh, loaded = OpContext(store), OpContext(store)
            loaded.edges(as_of)  # arrays first: the statistics are derived from them
            a, b = profile(fresh, as_of), profile(loaded, as_of)
            assert not fresh._has(("edges", as_of))  # the aggregate path was taken
            assert (a.n_edges, a.n_nodes, a.vt_min, a.vt_max, a.max_degree) == (
                b.n_edges, b.n_nodes, b.vt_min, b.vt_max, b.max_degree
            )  # fmt: skip
            assert a.vt_sorted.tolist() == b.vt_sorted.tolist()
            assert fresh.degrees(as_of).tolist() == loaded.degrees(as_of).tolist()
            assert fresh.known_nids(as_of).tolist() == loaded.known_nids(as_of).tolist()
    finally:
        store.close()


def test_operators_declared_without_edge_arrays_do_not_load_them(tmp_path):
    """``edge_arrays=False`` is a promise the envelope relies on (it then prices from aggregates)."""
    store, _ = random_store(tmp_path / "s", "duckdb", seed=5)
    try:
        calls = {
            "entity_history": {"uid": "u1"},
            "resolve_entities": {"query": "u1"},
            "compute": {"fn": "sum", "input": [1, 2]},
            "belief_changes": {"tt_from": 0, "tt_to": 2**62, "uid": "u1"},
        }
        assert {op for op in REGISTERED if not REGISTRY[op].edge_arrays} == set(calls)
        for op, args in calls.items():
            ctx = OpContext(store)
            call(ctx, op, args)
            assert not ctx._has(("edges", None)), op
        ctx = OpContext(store)
        call(ctx, "snapshot_subgraph", {"seeds": ["u1"], "t_valid": 5})
        assert ctx._has(("edges", None))
    finally:
        store.close()
