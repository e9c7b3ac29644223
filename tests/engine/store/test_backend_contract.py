"""The backend contract (engine/store/backends/base.py), checked directly on every backend: scans.

Every scan of the three hand-built batches (tests/engine/store/_contract.py) is compared with the
in-test oracle ``Model``. The lifecycle and errors are in test_backend_lifecycle.py, Kùzu's insert paths
and failure classification in test_backend_kuzu.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.engine.store._contract import (
    A1,
    A2,
    AB1,
    AB2,
    AC1,
    B1,
    B2,
    BC1,
    CA1,
    EDGE_ONLY,
    FILTERS,
    T2,
    T3,
    UIDS,
    batches,
    model_after,
    require,
    rows,
)
from tgms.engine.store.backends import BACKENDS
from tgms.engine.store.backends.base import Backend
from tgms.engine.store.model import EDGE_SCHEMA, ENTITY_SCHEMA, NODE_SCHEMA, ScanFilter
from tgms.engine.timeutil import OPEN_END


@pytest.fixture(scope="module", params=BACKENDS)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """One backend per parameter with the three batches applied (shared by the read-only tests)."""
    cls = require(request.param)
    db = cls.create(tmp_path_factory.mktemp(request.param) / cls.db_name)
    for ch in batches():
        db.apply(ch)
    yield db
    db.close()


@pytest.fixture(params=[False, True], ids=["short-lists", "long-lists"])
def lists_mode(request: pytest.FixtureRequest, loaded: Backend, monkeypatch: pytest.MonkeyPatch) -> Backend:
    """With ``long-lists`` every id list takes the backend's long-list path (a joined Arrow table)."""
    if request.param:
        if hasattr(loaded, "in_list_max"):
            monkeypatch.setattr(loaded, "in_list_max", 1)
        elif hasattr(sys.modules[type(loaded).__module__], "_IN_LIST_MAX"):
            monkeypatch.setattr(sys.modules[type(loaded).__module__], "_IN_LIST_MAX", 1)
        else:
            pytest.skip(f"{loaded.name} has no long-list threshold to lower")
    return loaded


# -- scans against the oracle ---------------------------------------------------------------------------
@pytest.mark.parametrize("fname", list(FILTERS))
def test_scans_match_the_model(lists_mode: Backend, fname: str) -> None:
    flt, m = FILTERS[fname], model_after()
    edges = lists_mode.scan_edges(flt)
    assert edges.schema == EDGE_SCHEMA
    assert rows(edges) == m.scan("edge", flt)
    if fname not in EDGE_ONLY:
        nodes = lists_mode.scan_nodes(flt)
        assert nodes.schema == NODE_SCHEMA
        assert rows(nodes) == m.scan("node", flt)


def test_filters_are_not_vacuous() -> None:
    """The oracle itself distinguishes the filters (so the scan test could fail)."""
    m = model_after()
    sizes = {name: (len(m.scan("node", f)), len(m.scan("edge", f))) for name, f in FILTERS.items()}
    assert sizes["before-any-batch"] == (0, 0) and sizes["nids-empty"] == (0, 0)
    assert sizes["all-beliefs"] == (6, 7)
    assert sizes["current"] == (4, 5)  # B2, C1, A2, D2 / BC1, CA1, AA1, AB2, DA2
    assert len(set(sizes.values())) > 8
    assert sizes["vt-overlap-bounds"][1] == 4 and sizes["vt-start-in-bounds"][1] == 4
    # ties the ordering tests rely on: equal vt_s with eid order != vid order; equal (nid, vt_s) for nodes
    assert (BC1["eid"] < CA1["eid"]) != (BC1["vid"] < CA1["vid"])
    assert (A1["nid"], A1["vt_s"]) == (A2["nid"], A2["vt_s"]) and AB1["vt_s"] == AB2["vt_s"]


def test_past_as_of_censors_later_closes(loaded: Backend) -> None:
    t = rows(loaded.scan_nodes(ScanFilter(as_of_tt=150)))
    a = [r for r in t if r["uid"] == "a"]
    assert [r["vid"] for r in a] == [A1["vid"]] and a[0]["tt_e"] == OPEN_END  # closed at T2, censored
    every = {r["vid"]: r for r in rows(loaded.scan_nodes(ScanFilter(all_beliefs=True)))}
    assert every[A1["vid"]]["tt_e"] == T2 and every[B1["vid"]]["tt_e"] == T3  # uncensored
    e = rows(loaded.scan_edges(ScanFilter(as_of_tt=250, ids=(AC1["eid"],))))
    assert [(r["vid"], r["tt_e"]) for r in e] == [(AC1["vid"], OPEN_END)]
    assert (
        rows(loaded.scan_edges(ScanFilter(as_of_tt=T3, ids=(AC1["eid"],)))) == []
    )  # tt_e == T3: not believed


def test_ordering(loaded: Backend) -> None:
    every = ScanFilter(all_beliefs=True)
    n = rows(loaded.scan_nodes(every))
    assert [(r["nid"], r["vt_s"], r["vid"]) for r in n] == sorted((r["nid"], r["vt_s"], r["vid"]) for r in n)
    assert [r["nid"] for r in n] == [0, 0, 1, 1, 2, 3]
    e = rows(loaded.scan_edges(every))
    assert [(r["vt_s"], r["eid"], r["vid"]) for r in e] == sorted((r["vt_s"], r["eid"], r["vid"]) for r in e)
    ties = [r["eid"] for r in e if r["vt_s"] == 20]
    assert ties == sorted([BC1["eid"], CA1["eid"]])


def test_empty_results_keep_the_schema(loaded: Backend) -> None:
    for flt in (ScanFilter(as_of_tt=0), ScanFilter(ids=()), ScanFilter(nids=(99,)), ScanFilter(vids=())):
        n, e = loaded.scan_nodes(flt), loaded.scan_edges(flt)
        assert n.num_rows == 0 and e.num_rows == 0
        assert n.schema == NODE_SCHEMA and e.schema == EDGE_SCHEMA


def test_null_and_empty_strings_round_trip(loaded: Backend) -> None:
    n = {r["vid"]: r for r in rows(loaded.scan_nodes(ScanFilter(all_beliefs=True)))}
    assert (n[B1["vid"]]["props"], n[B1["vid"]]["source"], n[B1["vid"]]["provenance_ref"]) == (None, "", "")
    assert (n[B2["vid"]]["props"], n[B2["vid"]]["source"], n[B2["vid"]]["provenance_ref"]) == (
        "",
        None,
        "p:1",
    )
    e = {r["vid"]: r for r in rows(loaded.scan_edges(ScanFilter(all_beliefs=True)))}
    assert (e[AB1["vid"]]["props"], e[AB1["vid"]]["disc"], e[AB1["vid"]]["source"]) == (None, "", None)
    assert (e[CA1["vid"]]["props"], e[CA1["vid"]]["provenance_ref"], e[AC1["vid"]]["props"]) == ("", "", "")
    assert loaded.get_meta()["note"] == ""


def test_meta_entities_counts(loaded: Backend) -> None:
    assert loaded.get_meta() == {"last_seq": "3", "last_tt": str(T3), "note": ""}
    ents = loaded.entities()
    assert ents.schema == ENTITY_SCHEMA
    assert rows(ents) == [{"nid": i, "uid": u} for u, i in UIDS.items()]
    assert loaded.counts() == {"entities": 4, "node_versions": 6, "edge_versions": 7, "edge_identities": 6}
