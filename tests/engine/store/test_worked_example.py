"""The paper's worked example (§2): assert p=1 over [0,100) at tt1, correct p=2 over [40,60) at tt2."""

from __future__ import annotations

import pytest

from tgms.engine.store import ScanFilter, Store
from tgms.engine.timeutil import OPEN_END

from ._support import EVERY, edge_ref, rows_digest

E = edge_ref("a", "b", "R")


@pytest.fixture
def example(make_store):
    """The store after the worked example, with tt1 (assert) and tt2 (correct)."""
    store = make_store()
    store.write([{"op": "assert_node", "uid": "a", "vt_s": 0}, {"op": "assert_node", "uid": "b", "vt_s": 0}])
    tt1 = store.assert_edge("a", "b", "R", 0, 100, props={"p": 1}).tt
    tt2 = store.correct(E, {"p": 2}, 40, 60).tt
    return store, tt1, tt2


def _edge_rows(store, flt):
    return [(e["vt_s"], e["vt_e"], e["tt_s"], e["tt_e"], e["props"]) for e in store.public_rows(flt)[1]]


def _p_at(store, flt):
    return [e["props"]["p"] for e in store.public_rows(flt)[1]]


def test_assert_gives_one_version_believed_from_tt1(make_store):
    store = make_store()
    store.write([{"op": "assert_node", "uid": "a", "vt_s": 0}, {"op": "assert_node", "uid": "b", "vt_s": 0}])
    tt1 = store.assert_edge("a", "b", "R", 0, 100, props={"p": 1}).tt
    assert _edge_rows(store, EVERY) == [(0, 100, tt1, OPEN_END, {"p": 1})]


def test_correct_closes_original_and_opens_three_versions(example):
    store, tt1, tt2 = example
    assert tt1 < tt2
    rows = sorted(_edge_rows(store, EVERY), key=lambda r: (r[2], r[0]))
    assert rows == [
        (0, 100, tt1, tt2, {"p": 1}),  # the erroneous belief: transaction time closed at tt2, kept
        (0, 40, tt2, OPEN_END, {"p": 1}),
        (40, 60, tt2, OPEN_END, {"p": 2}),
        (60, 100, tt2, OPEN_END, {"p": 1}),
    ]


def test_correct_versions_share_identity_and_have_distinct_vids(example):
    store, _, _ = example
    edges = store.public_rows(EVERY)[1]
    assert len({e["eid"] for e in edges}) == 1
    assert len({e["vid"] for e in edges}) == 4


def test_current_snapshot_at_vt50_is_p2(example):
    store, _, _ = example
    assert _p_at(store, ScanFilter(valid_at=50)) == [2]
    assert _p_at(store, ScanFilter(valid_at=39)) == [1]
    assert _p_at(store, ScanFilter(valid_at=60)) == [1]
    assert _p_at(store, ScanFilter(valid_at=100)) == []


def test_pinned_to_tt1_at_vt50_is_p1(example):
    store, tt1, tt2 = example
    assert _p_at(store, ScanFilter(as_of_tt=tt1, valid_at=50)) == [1]
    # any tt in [tt1, tt2) is the old belief; from tt2 on the corrected one; before tt1 nothing
    assert _p_at(store, ScanFilter(as_of_tt=tt2 - 1, valid_at=50)) == [1]
    assert _p_at(store, ScanFilter(as_of_tt=tt2, valid_at=50)) == [2]
    assert _p_at(store, ScanFilter(as_of_tt=tt1 - 1, valid_at=50)) == []


def test_pinned_result_censors_later_tt_e(example):
    store, tt1, tt2 = example
    pinned = _edge_rows(store, ScanFilter(as_of_tt=tt1))
    # the stored tt_e is tt2, but at tt1 that closure had not happened: it must not leak into the result
    assert pinned == [(0, 100, tt1, OPEN_END, {"p": 1})]
    raw = store.scan_edges(ScanFilter(as_of_tt=tt1))
    assert raw["tt_e"].to_pylist() == [OPEN_END]
    assert store.scan_edges(EVERY)["tt_e"].to_pylist().count(tt2) == 1


def test_pinned_at_tt2_excludes_the_closed_version(example):
    store, _, tt2 = example
    rows = _edge_rows(store, ScanFilter(as_of_tt=tt2))
    assert sorted(r[:2] for r in rows) == [(0, 40), (40, 60), (60, 100)]
    assert all(r[2] == tt2 and r[3] == OPEN_END for r in rows)


def test_pinned_tt1_result_unchanged_after_further_writes(example):
    store, tt1, tt2 = example
    pins = {a: rows_digest(store, ScanFilter(as_of_tt=a)) for a in (tt1, tt2)}
    pinned_vt50 = store.scan_edges(ScanFilter(as_of_tt=tt1, valid_at=50)).to_pylist()
    tt3 = store.correct(E, {"p": 3}, 0, 100).tt  # closes all three tt2 versions
    store.retract(E, 80)  # the world changed at 80
    store.write(
        [{"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "R", "vt_s": 200, "props": {"p": 4}}]
    )
    store.assert_node("c", 5)
    assert store.scan_edges(ScanFilter(as_of_tt=tt1, valid_at=50)).to_pylist() == pinned_vt50
    assert _p_at(store, ScanFilter(as_of_tt=tt1, valid_at=50)) == [1]
    assert {a: rows_digest(store, ScanFilter(as_of_tt=a)) for a in (tt1, tt2)} == pins
    assert _p_at(store, ScanFilter(as_of_tt=tt3, valid_at=50)) == [3]
    assert _p_at(store, ScanFilter(valid_at=50)) == [3]
    assert _p_at(store, ScanFilter(valid_at=90)) == []
    assert _p_at(store, ScanFilter(as_of_tt=tt3, valid_at=90)) == [3]


def test_pinned_results_survive_reopen(example):
    store, tt1, tt2 = example
    pins = {a: rows_digest(store, ScanFilter(as_of_tt=a)) for a in (tt1, tt2)}
    digest = store.digest()
    root = store.root
    store.close()
    with Store.open(root, read_only=True) as ro:
        assert {a: rows_digest(ro, ScanFilter(as_of_tt=a)) for a in (tt1, tt2)} == pins
        assert ro.digest() == digest
        assert _p_at(ro, ScanFilter(as_of_tt=tt1, valid_at=50)) == [1]


def test_retract_closes_valid_time_but_keeps_belief(example):
    """retract (the world changed) is not correct (we were wrong): nothing is closed in tt but the cut."""
    store, tt1, tt2 = example
    tt3 = store.retract(E, 50).tt
    rows = sorted(_edge_rows(store, EVERY), key=lambda r: (r[2], r[0]))
    assert rows == [
        (0, 100, tt1, tt2, {"p": 1}),
        (0, 40, tt2, OPEN_END, {"p": 1}),  # untouched: still believed since tt2
        (40, 60, tt2, tt3, {"p": 2}),
        (60, 100, tt2, tt3, {"p": 1}),
        (40, 50, tt3, OPEN_END, {"p": 2}),
    ]
    assert _p_at(store, ScanFilter(valid_at=55)) == []
    assert _p_at(store, ScanFilter(as_of_tt=tt2, valid_at=55)) == [2]
