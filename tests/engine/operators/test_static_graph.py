"""connected_components and hop_distance: the fast path equals the oracle on random bi-temporal stores
(both backends) and networkx on larger random graphs; hand cases; refusals."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, T_MAX, counter_clock, random_store, sample_args
from tgms.engine.errors import TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.store import Store

STORES = 4
UIDS = [f"u{i}" for i in range(8)]
OPS = ("connected_components", "hop_distance")
OPEN = {"t_a": 0, "t_b": 1 << 62}


@pytest.mark.parametrize("op", OPS)
def test_fast_path_matches_oracle(tmp_path: Path, backend: str, op: str) -> None:
    outcomes: Counter[str] = Counter()
    shapes: Counter[Any] = Counter()
    per_store = max(-(-N_CASES // STORES), 10)
    for s in range(STORES):
        store, tts = random_store(tmp_path / f"s{s}", backend, seed=900 + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            rng = random.Random(s)
            for i in range(per_store):
                args = sample_args(op, rng, UIDS, tts)
                if i % 4 == 0:
                    args["window"] = {"t_a": 0, "t_b": T_MAX * 2}
                outcomes[compare(ctx, oracle, op, args)] += 1
                if i % 2 == 0 and outcomes["ok"]:
                    got = call(ctx, op, {k: v for k, v in args.items() if k != "limit"})["payload"]
                    shapes[got["rows_total"], got.get("largest", got.get("hops"))] += 1
        finally:
            store.close()
    assert outcomes["ok"] >= N_CASES // 2, outcomes
    assert len(shapes) >= 3, shapes  # several sizes of answer, not one degenerate case


def _store(tmp_path: Path, edges: list[tuple[str, str, int, int]], backend: str = "duckdb") -> Store:
    store = Store.create(tmp_path / "s", backend, now=counter_clock())
    uids = sorted({x for s, d, _, _ in edges for x in (s, d)} | {"lone"})
    store.write([{"op": "assert_node", "uid": u, "label": "user", "vt_s": 0} for u in uids])
    store.write(
        [
            {"op": "assert_edge", "src": s, "dst": d, "rel_type": "msg", "vt_s": a, "vt_e": b}
            for s, d, a, b in edges
        ]
    )
    return store


def _run(store: Store, op: str, args: dict[str, Any]) -> dict[str, Any]:
    return call(OpContext(store), op, args)["payload"]


def test_components_by_hand(tmp_path: Path) -> None:
    # n9 and n10 in one component: ties between equal sizes go to the least uid as a string ("n10")
    edges = [("a", "b", 1, 2), ("c", "b", 3, 4), ("d", "e", 5, 6), ("n9", "n10", 1, 2), ("x", "x", 1, 2)]
    store = _store(tmp_path, [*edges, ("f", "a", 50, 60)])
    try:
        got = _run(store, "connected_components", {"window": {"t_a": 0, "t_b": 10}, "node": "e"})
        assert [(r["size"], r["first"]) for r in got["rows"]] == [(3, "a"), (2, "d"), (2, "n10"), (1, "x")]
        assert [r["component"] for r in got["rows"]] == [0, 1, 2, 3]
        assert (got["largest"], got["rows_total"], got["nodes_total"]) == (3, 4, 8)
        assert (got["node_component"], got["node_size"]) == (1, 2)
        # f→a starts at 50: in a window that reaches it, a's component grows; "lone" has no edge at all
        late = _run(store, "connected_components", {"window": {"t_a": 0, "t_b": 51}, "node": "lone"})
        assert late["largest"] == 4 and (late["node_component"], late["node_size"]) == (None, 0)
        empty = _run(store, "connected_components", {"window": {"t_a": 100, "t_b": 200}})
        assert (empty["rows"], empty["largest"], empty["nodes_total"]) == ([], 0, 0)
    finally:
        store.close()


def test_hop_distance_by_hand(tmp_path: Path) -> None:
    store = _store(tmp_path, [("a", "b", 1, 2), ("c", "b", 3, 4), ("c", "d", 5, 6), ("d", "a", 90, 99)])
    try:
        w = {"t_a": 0, "t_b": 10}
        both = _run(store, "hop_distance", {"src": "a", "dst": "d", "window": w, "direction": "both"})
        assert [(r["uid"], r["hops"]) for r in both["rows"]] == [("b", 1), ("c", 2), ("d", 3)]
        assert (both["hops"], both["reached"]) == (3, True)
        out = _run(store, "hop_distance", {"src": "a", "dst": "d", "window": w})
        assert [r["uid"] for r in out["rows"]] == ["b"] and (out["hops"], out["reached"]) == (None, False)
        into = _run(store, "hop_distance", {"src": "b", "window": w, "direction": "in"})
        assert [(r["uid"], r["hops"]) for r in into["rows"]] == [("a", 1), ("c", 1)]
        capped = _run(store, "hop_distance", {"src": "a", "window": w, "direction": "both", "max_hops": 2})
        assert [r["uid"] for r in capped["rows"]] == ["b", "c"]
        # ignoring time: d→a (valid in [90, 99)) is an edge of the whole history's graph, whatever its time
        whole = _run(store, "hop_distance", {"src": "a", "dst": "d", "window": OPEN})
        assert whole["hops"] is None  # out: a→b only; d→a points the other way
        assert _run(store, "hop_distance", {"src": "d", "dst": "b", "window": OPEN})["hops"] == 2
        assert _run(store, "hop_distance", {"src": "a", "dst": "a", "window": w})["hops"] == 0
    finally:
        store.close()


def test_refusals_change_nothing(tmp_path: Path) -> None:
    # the same error code from the fast path and the oracle, naming the argument; the store answers after
    store = _store(tmp_path, [("a", "b", 1, 2)])
    try:
        ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
        for op, args, code, field in [
            ("hop_distance", {"src": "zz", "window": OPEN}, "E_NOT_FOUND", "src"),
            ("hop_distance", {"src": "a", "dst": "zz", "window": OPEN}, "E_NOT_FOUND", "dst"),
            ("connected_components", {"window": OPEN, "node": "zz"}, "E_NOT_FOUND", "node"),
            ("hop_distance", {"src": "a", "window": OPEN, "direction": "up"}, "E_INVALID_ARG", "direction"),
            ("hop_distance", {"src": "a", "window": OPEN, "max_hops": 0}, "E_INVALID_ARG", "max_hops"),
            ("hop_distance", {"window": OPEN}, "E_SCHEMA", "src"),
            ("connected_components", {"window": {"t_a": 5, "t_b": 5}}, "E_INVALID_ARG", "window"),
        ]:
            assert compare(ctx, oracle, op, args) == code, (op, args)
            with pytest.raises(TGMSError) as err:
                call(ctx, op, args)
            assert err.value.code == code and field in str(err.value.to_dict()), err.value.to_dict()
        assert _run(store, "connected_components", {"window": OPEN})["largest"] == 2
    finally:
        store.close()


def test_agrees_with_networkx_on_a_larger_random_graph(tmp_path: Path) -> None:
    nx = pytest.importorskip("networkx")
    rng = random.Random(7)
    names = [f"n{i}" for i in range(300)]
    edges = []
    for _ in range(330):  # about one edge per node: many components, a few large
        a, b = rng.sample(names, 2)
        t = rng.randint(0, 1000)
        edges.append((a, b, t, t + rng.choice([1, 50])))
    store = _store(tmp_path, edges)
    try:
        w = {"t_a": 200, "t_b": 800}
        live = [(a, b) for a, b, s, e in edges if s < w["t_b"] and e > w["t_a"]]
        g = nx.Graph(live)
        sizes = sorted((len(c) for c in nx.connected_components(g)), reverse=True)
        got = _run(store, "connected_components", {"window": w, "limit": 10_000})
        assert [r["size"] for r in got["rows"]] == sizes and got["nodes_total"] == g.number_of_nodes()
        firsts = {min(c) for c in nx.connected_components(g)}
        assert {r["first"] for r in got["rows"]} == firsts
        for src in rng.sample(sorted(g.nodes), 5):
            for direction, graph in (("out", nx.DiGraph(live)), ("both", g)):
                want = nx.single_source_shortest_path_length(graph, src)
                args = {"src": src, "window": w, "direction": direction, "limit": 10_000}
                got = {r["uid"]: r["hops"] for r in _run(store, "hop_distance", args)["rows"]}
                assert got == {k: v for k, v in want.items() if k != src}
    finally:
        store.close()
