"""DuckDB layout: a written store's edge table is clustered in scan order on close, and reads give the
same believed edges, rows and digest whether or not it is clustered (the sorted-scan and the sorting paths).
"""

from __future__ import annotations

import duckdb
import numpy as np

from engine.operators.context import OpContext
from engine.store import ScanFilter, Store
from engine.store.backends.duckdb_backend import _is_scan_ordered

DAY = 86_400_000_000


def _write_out_of_order(store: Store) -> None:
    # later valid times first, then earlier ones: insertion order is not scan order
    nodes = ["hub", *(f"a{d}" for d in range(10)), "b0", "b1", "b2"]
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in nodes])
    for day in (9, 3, 7, 1, 5):
        store.write(
            [
                {"op": "assert_edge", "src": f"a{day}", "dst": f"b{day % 3}", "rel_type": "msg",
                 "props": {"d": day}, "vt_s": day * DAY, "vt_e": day * DAY + 1},
                {"op": "assert_edge", "src": "hub", "dst": f"a{day}", "rel_type": "follows",
                 "vt_s": day * DAY},
            ]
        )  # fmt: skip
    store.write([{"op": "retract", "ref": {"src": "hub", "dst": "a3", "rel_type": "follows"}, "t": 4 * DAY}])


def _physical(path) -> bool:
    con = duckdb.connect(str(path / "store.duckdb"), read_only=True)
    try:
        t = con.sql("SELECT vt_s, eid, vid FROM edge_versions ORDER BY rowid").fetchnumpy()
    finally:
        con.close()
    return _is_scan_ordered(t["vt_s"], t["eid"], t["vid"])


def test_close_clusters_the_edge_table_and_both_read_paths_agree(tmp_path) -> None:
    root = tmp_path / "s"
    store = Store.create(root, "duckdb")
    _write_out_of_order(store)
    t = store.backend.con.sql("SELECT vt_s, eid, vid FROM edge_versions ORDER BY rowid").fetchnumpy()
    assert not _is_scan_ordered(t["vt_s"], t["eid"], t["vid"])  # the sorting read path is taken below
    ctx = OpContext(store)
    before = ctx.edges(None)
    keys_before = store.backend.scan_edge_keys(ScanFilter())
    rows_before = before.rows(np.arange(before.n)).to_pylist()
    hist_before = ctx.edges(4 * DAY)  # a past belief state: the censored tt_e path
    past_before = hist_before.rows(np.arange(hist_before.n)).to_pylist()
    digest_before = store.digest()
    store.close()
    assert _physical(root)

    with Store.open(root, read_only=True) as again:
        keys = again.backend.scan_edge_keys(ScanFilter())
        assert keys.drop(["rid"]).equals(keys_before.drop(["rid"]))  # sorted scan = sorting query
        c2 = OpContext(again)
        e = c2.edges(None)
        assert e.rows(np.arange(e.n)).to_pylist() == rows_before
        h = c2.edges(4 * DAY)
        assert h.rows(np.arange(h.n)).to_pylist() == past_before
        # pages read before and after the whole rest is loaded
        assert [e.rows(np.array([i])).to_pylist()[0] for i in range(e.n)] == rows_before
        assert again.digest() == digest_before


def test_reopened_clustered_store_stays_clustered_without_writes(tmp_path) -> None:
    root = tmp_path / "s"
    with Store.create(root, "duckdb") as store:
        _write_out_of_order(store)
    with Store.open(root) as store:  # opened for writing, nothing written: no rewrite needed
        pass
    assert _physical(root)


def test_scan_order_check_compares_ids_without_overflow() -> None:
    big = np.iinfo(np.int64).max
    assert _is_scan_ordered(np.array([1, 1]), np.array([-big, big]), np.array([0, 0]))
    assert not _is_scan_ordered(np.array([1, 1]), np.array([big, -big]), np.array([0, 0]))
    assert not _is_scan_ordered(np.array([1, 1]), np.array([5, 5]), np.array([2, 1]))
    assert not _is_scan_ordered(np.array([2, 1]), np.array([0, 0]), np.array([0, 1]))
