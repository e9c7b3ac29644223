"""EdgeArrays' non-key columns: small reads before the rest is loaded fetch their rows by row id and start
the whole load in the background; later reads use it; every path returns the same rows."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

from tgms.engine.operators.context import OpContext
from tgms.engine.operators.edge_arrays import EdgeArrays

N = 50


def _tables() -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(3)
    rid = np.sort(rng.choice(10 * N, N, replace=False))  # row ids: increasing in storage, gaps allowed
    scan = rng.permutation(N)  # scan order differs from storage order
    n32 = pa.array(np.arange(N, dtype=np.int32)[scan])
    ids = np.arange(N, dtype=np.int64)[scan]
    keys = pa.table({"vid": ids, "eid": ids, "src": n32, "dst": n32, "vt_s": np.arange(N) * 10,
                     "vt_e": np.arange(N) * 10 + 1, "rid": rid[scan]})  # fmt: skip
    rest = pa.table({"rel_type": [f"r{i}" for i in range(N)], "disc": [""] * N, "props": [None] * N,
                     "tt_s": np.zeros(N, np.int64), "tt_e": np.zeros(N, np.int64), "source": [None] * N,
                     "provenance_ref": [None] * N, "rid": rid})  # fmt: skip
    return keys, rest


def test_direct_fetch_then_background_load_give_the_same_rows() -> None:
    keys, rest = _tables()
    calls: list[object] = []
    gate = threading.Event()

    def load(rids: np.ndarray | None) -> pa.Table:
        calls.append("all" if rids is None else len(rids))
        if rids is None:
            gate.wait(5)
            return rest
        return rest.filter(pa.compute.is_in(rest["rid"], pa.array(rids)))

    e = EdgeArrays(keys, load)
    want = [f"r{int(np.searchsorted(rest['rid'].to_numpy(), r))}" for r in keys["rid"].to_numpy()]
    assert e.col_at("rel_type", np.array([3, 1])).to_pylist() == [want[3], want[1]]  # direct, bg started
    assert e.rows(np.array([7]))["rel_type"].to_pylist() == [want[7]]  # still direct: bg not done
    assert calls.count("all") == 1 and 2 in calls and 1 in calls
    gate.set()  # the background load finishes; a whole-column read waits for it
    assert e.column("rel_type").to_pylist() == want
    assert e.rows(np.arange(N))["vid"].to_pylist() == keys["vid"].to_pylist()
    assert calls.count("all") == 1


def test_a_failed_background_load_is_retried_where_it_can_raise() -> None:
    keys, rest = _tables()
    state = {"n": 0}

    def load(rids: np.ndarray | None) -> pa.Table:
        if rids is None:
            state["n"] += 1
            if state["n"] == 1:
                raise OSError("disk hiccup")
            return rest
        return rest.filter(pa.compute.is_in(rest["rid"], pa.array(rids)))

    e = EdgeArrays(keys, load)
    e.col_at("rel_type", np.array([0]))
    assert len(e.column("rel_type")) == N and state["n"] == 2


def test_row_ids_without_a_loader_are_refused() -> None:
    keys, _ = _tables()
    with pytest.raises(ValueError):
        EdgeArrays(keys)


def test_closing_the_store_waits_for_a_background_load(tmp_path) -> None:
    from tgms.engine.ingest.snap import load_dataset
    from tgms.engine.operators.envelope import call
    from tgms.engine.store import Store

    with Store.create(tmp_path / "s", "duckdb") as store:
        store.ingest_events(load_dataset("collegemsg"))
    store = Store.open(tmp_path / "s", read_only=True)
    ctx = OpContext(store)
    env = call(ctx, "entity_history", {"uid": "n9", "include_edges": True, "limit": 5})
    assert ctx.edges(None)._loading is not None  # the first small read started the background load
    store.close()  # must not fail while the load may still be reading
    assert env["payload"]["edges_total"] > 5 and len(env["payload"]["edges"]) == 5
