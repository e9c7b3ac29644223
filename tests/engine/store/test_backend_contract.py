"""The backend contract (engine/store/backends/base.py), checked directly on every backend.

Batches are built by hand (no planner): three batches of entities, node and edge versions, closes and meta.
An independent in-test model (a dict of rows by vid, filtered and ordered in plain Python from the
ScanFilter docstring) is the oracle every scan is compared with; then the backends are compared with each
other (``Table.equals``). The last section covers Kùzu's insert paths and its failure classification.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from engine.errors import BackendError, ConflictError
from engine.store.backends import BACKENDS, backend_class
from engine.store.backends.base import Backend
from engine.store.model import (
    EDGE_SCHEMA,
    ENTITY_SCHEMA,
    NODE_SCHEMA,
    BatchChanges,
    ScanFilter,
    edge_eid,
    node_ident_hash,
    vid_of,
)
from engine.timeutil import OPEN_END
from tests.conftest import require_backend

Row = dict[str, Any]
UIDS = {"a": 0, "b": 1, "c": 2, "d": 3}
T1, T2, T3 = 100, 200, 300


def require(name: str) -> type[Backend]:
    """The backend class; skip (only) while its driver package is not installed."""
    return backend_class(require_backend(name))


# -- hand-built batches -------------------------------------------------------------------------------
def node(uid: str, vt_s: int, vt_e: int, tt_s: int, props: str | None, **kw: Any) -> Row:
    vid = vid_of(node_ident_hash(uid), tt_s, vt_s)
    row = {"vid": vid, "nid": UIDS[uid], "uid": uid, "label": kw.get("label", "P"), "props": props}
    row |= {"vt_s": vt_s, "vt_e": vt_e, "tt_s": tt_s, "tt_e": OPEN_END}
    return row | {"source": kw.get("source"), "provenance_ref": kw.get("prov")}


def edge(src: str, dst: str, rel: str, disc: str, vt_s: int, vt_e: int, tt_s: int, props: str | None) -> Row:
    eid = edge_eid(src, dst, rel, disc)
    row = {"vid": vid_of(eid, tt_s, vt_s), "eid": eid, "src": UIDS[src], "dst": UIDS[dst], "rel_type": rel}
    row |= {"disc": disc, "props": props, "vt_s": vt_s, "vt_e": vt_e, "tt_s": tt_s, "tt_e": OPEN_END}
    return row | {"source": "s" if rel == "MSG" else None, "provenance_ref": "" if rel == "MSG" else None}


def batch(seq: int, tt: int, ents: list[str], nodes: list[Row], edges: list[Row], **kw: Any) -> BatchChanges:
    return BatchChanges(
        seq=seq,
        tt=tt,
        new_entities=pa.Table.from_pylist([{"nid": UIDS[u], "uid": u} for u in ents], schema=ENTITY_SCHEMA),
        node_inserts=pa.Table.from_pylist(nodes, schema=NODE_SCHEMA),
        edge_inserts=pa.Table.from_pylist(edges, schema=EDGE_SCHEMA),
        node_closes=kw.get("node_closes", []),
        edge_closes=kw.get("edge_closes", []),
        meta={"last_seq": str(seq), "last_tt": str(tt)} | kw.get("meta", {}),
    )


A1 = node("a", 0, 1000, T1, '{"age":30}', source="s1")
B1 = node("b", 0, 500, T1, None, source="", prov="")  # null props, "" strings
B2 = node("b", 500, OPEN_END, T1, "", prov="p:1")  # a second fragment of b in the same batch
C1 = node("c", 10, 20, T1, "{}", label="Q")
AB1 = edge("a", "b", "KNOWS", "", 10, 50, T1, None)
BC1 = edge("b", "c", "MSG", "m3", 20, 21, T1, '{"text":"hi"}')
CA1 = edge("c", "a", "MSG", "m2", 20, 21, T1, "")  # same vt_s as BC1: ordered by eid (not by vid)
AC1 = edge("a", "c", "KNOWS", "x", 5, 500, T1, "")
AA1 = edge("a", "a", "SELF", "", 0, OPEN_END, T1, None)  # a self-loop
A2 = node("a", 0, 1000, T2, '{"age":31}')
D2 = node("d", 0, OPEN_END, T2, None)
AB2 = edge("a", "b", "KNOWS", "", 10, 30, T2, None)
DA2 = edge("d", "a", "MSG", "", 300, 301, T2, None)  # d is a new entity of the same batch


def batches() -> list[BatchChanges]:
    return [
        batch(1, T1, ["b", "a", "c"], [A1, B1, B2, C1], [AB1, BC1, CA1, AC1, AA1]),  # entities out of order
        batch(2, T2, ["d"], [A2, D2], [AB2, DA2], node_closes=[A1["vid"]], edge_closes=[AB1["vid"]]),
        # closing A1 again is a no-op (already closed); B1 and AC1 are closed at T3; meta is upserted
        batch(
            3, T3, [], [], [], node_closes=[A1["vid"], B1["vid"]], edge_closes=[AC1["vid"]], meta={"note": ""}
        ),
    ]


class Model:
    """The oracle: every version row by vid, with the closes applied."""

    def __init__(self) -> None:
        self.nodes: dict[int, Row] = {}
        self.edges: dict[int, Row] = {}
        self.meta: dict[str, str] = {}
        self.entities: dict[int, str] = {}

    def apply(self, ch: BatchChanges) -> None:
        self.entities |= {r["nid"]: r["uid"] for r in ch.new_entities.to_pylist()}
        for rows, inserts, closes in (
            (self.nodes, ch.node_inserts, ch.node_closes),
            (self.edges, ch.edge_inserts, ch.edge_closes),
        ):
            for vid in closes:
                if rows[vid]["tt_e"] == OPEN_END:
                    rows[vid] = rows[vid] | {"tt_e": ch.tt}
            rows.update({r["vid"]: dict(r) for r in inserts.to_pylist()})
        self.meta |= ch.meta

    def scan(self, kind: str, f: ScanFilter) -> list[Row]:
        out = []
        for r in (self.nodes if kind == "node" else self.edges).values():
            ok = [
                f.all_beliefs
                or (r["tt_e"] == OPEN_END if f.as_of_tt is None else r["tt_s"] <= f.as_of_tt < r["tt_e"]),
                f.valid_at is None or r["vt_s"] <= f.valid_at < r["vt_e"],
                f.vt_overlap is None or (r["vt_s"] < f.vt_overlap[1] and r["vt_e"] > f.vt_overlap[0]),
                f.vt_start_in is None or f.vt_start_in[0] <= r["vt_s"] < f.vt_start_in[1],
                f.vids is None or r["vid"] in f.vids,
            ]
            if kind == "node":
                ok += [f.nids is None or r["nid"] in f.nids, f.ids is None or r["nid"] in f.ids]
            else:
                ok += [
                    f.rel_types is None or r["rel_type"] in f.rel_types,
                    f.nids is None or r["src"] in f.nids or r["dst"] in f.nids,
                    f.src is None or r["src"] in f.src,
                    f.dst is None or r["dst"] in f.dst,
                    f.ids is None or r["eid"] in f.ids,
                ]
            if all(ok):
                censor = not f.all_beliefs and f.as_of_tt is not None and r["tt_e"] > f.as_of_tt
                out.append(r | {"tt_e": OPEN_END} if censor else dict(r))
        key = ("nid", "vt_s", "vid") if kind == "node" else ("vt_s", "eid", "vid")
        return sorted(out, key=lambda r: tuple(r[k] for k in key))


#: filters that only make sense for edge scans (eids are not int32 nids)
EDGE_ONLY = frozenset({"edge-ids"})


def model_after(n: int = 3) -> Model:
    m = Model()
    for ch in batches()[:n]:
        m.apply(ch)
    return m


FILTERS: dict[str, ScanFilter] = {
    "current": ScanFilter(),
    "before-any-batch": ScanFilter(as_of_tt=T1 - 1),
    "as-of-T1": ScanFilter(as_of_tt=T1),
    "as-of-past-censored": ScanFilter(as_of_tt=150),
    "as-of-T2": ScanFilter(as_of_tt=T2),
    "as-of-250": ScanFilter(as_of_tt=250),
    "as-of-future": ScanFilter(as_of_tt=10**9),
    "all-beliefs": ScanFilter(all_beliefs=True),
    "all-beliefs-wins-over-as-of": ScanFilter(all_beliefs=True, as_of_tt=150),
    "valid-at-20": ScanFilter(valid_at=20),
    "valid-at-600-all": ScanFilter(valid_at=600, all_beliefs=True),
    "vt-overlap": ScanFilter(vt_overlap=(15, 25)),
    "vt-overlap-past": ScanFilter(vt_overlap=(40, 60), as_of_tt=150),
    "vt-overlap-bounds": ScanFilter(vt_overlap=(21, 300), all_beliefs=True),  # vt_e == 21, vt_s == 300 out
    "vt-start-in": ScanFilter(vt_start_in=(20, 21), all_beliefs=True),
    "vt-start-in-bounds": ScanFilter(vt_start_in=(0, 20), all_beliefs=True),  # vt_s == 20 out
    "rel-types": ScanFilter(rel_types=("MSG",), all_beliefs=True),
    "rel-types-two": ScanFilter(rel_types=("SELF", "KNOWS")),
    "rel-types-empty": ScanFilter(rel_types=()),
    "nids-a": ScanFilter(nids=(0,), all_beliefs=True),
    "nids-many": ScanFilter(nids=(3, 2, 1)),
    "nids-empty": ScanFilter(nids=()),
    "nids-duplicates": ScanFilter(nids=(2, 0, 2, 0), all_beliefs=True),
    "src": ScanFilter(src=(0, 3), all_beliefs=True),
    "dst": ScanFilter(dst=(0, 2)),
    "src-and-dst": ScanFilter(src=(0,), dst=(0, 1), all_beliefs=True),
    "node-ids": ScanFilter(ids=(0, 1), all_beliefs=True),
    "edge-ids": ScanFilter(ids=(AB1["eid"], DA2["eid"], 12345), all_beliefs=True),
    "vids": ScanFilter(vids=(A1["vid"], B2["vid"], AB1["vid"], AA1["vid"], 7), as_of_tt=150),
    "vids-duplicates": ScanFilter(vids=(A1["vid"], A1["vid"], AB1["vid"], AB1["vid"]), all_beliefs=True),
    "combined": ScanFilter(as_of_tt=150, valid_at=20, rel_types=("MSG", "KNOWS"), nids=(0, 1, 2)),
}


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


def rows(t: pa.Table) -> list[Row]:
    return t.to_pylist()


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


# -- lifecycle, read-only, errors -----------------------------------------------------------------------
def _tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*")}


def test_read_only_open_changes_no_file(backend: str, tmp_path: Path) -> None:
    cls = require(backend)
    path = tmp_path / cls.db_name
    with cls.create(path) as db:
        for ch in batches()[:2]:
            db.apply(ch)
    before = _tree_hashes(tmp_path)
    assert before  # there is something to compare
    with cls.open(path, read_only=True) as ro:
        assert ro.read_only
        assert ro.get_meta()["last_seq"] == "2"
        assert ro.counts()["node_versions"] == 6
        assert rows(ro.scan_edges(ScanFilter(all_beliefs=True))) == model_after(2).scan(
            "edge", ScanFilter(all_beliefs=True)
        )
        with pytest.raises((BackendError, ConflictError)):
            ro.apply(batches()[2])
    assert _tree_hashes(tmp_path) == before
    with cls.open(path) as rw:  # the refused batch left nothing behind
        assert rw.get_meta()["last_seq"] == "2"
        rw.apply(batches()[2])
        assert rw.get_meta()["last_seq"] == "3"


def test_reopen_keeps_everything(backend: str, tmp_path: Path) -> None:
    cls = require(backend)
    path = tmp_path / cls.db_name
    with cls.create(path) as db:
        for ch in batches():
            db.apply(ch)
    with cls.open(path) as db:
        m = model_after()
        assert rows(db.scan_nodes(ScanFilter(all_beliefs=True))) == m.scan(
            "node", ScanFilter(all_beliefs=True)
        )
        assert rows(db.scan_edges(ScanFilter(all_beliefs=True))) == m.scan(
            "edge", ScanFilter(all_beliefs=True)
        )
        assert db.get_meta() == m.meta


def test_create_refuses_an_existing_path_and_open_a_missing_one(backend: str, tmp_path: Path) -> None:
    cls = require(backend)
    path = tmp_path / cls.db_name
    cls.create(path).close()
    with pytest.raises(ConflictError):
        cls.create(path)
    with pytest.raises(BackendError):
        cls.open(tmp_path / "missing" / cls.db_name)
    assert not (tmp_path / "missing").exists()


def _bad_batch(name: str) -> BatchChanges:
    """A batch 2 whose last part the backend must refuse (each backend enforces different constraints)."""
    ch = batches()[1]
    if name == "kuzu":  # an edge to an entity that does not exist
        bad = edge("d", "a", "MSG", "zz", 400, 401, T2, None) | {"dst": 77}
    else:  # a NOT NULL column left null
        bad = edge("d", "a", "MSG", "zz", 400, 401, T2, None) | {"rel_type": None}
    ch.edge_inserts = pa.Table.from_pylist([AB2, DA2, bad], schema=EDGE_SCHEMA)
    return ch


def _snapshot(db: Backend) -> tuple[Any, ...]:
    every = ScanFilter(all_beliefs=True)
    return db.scan_nodes(every), db.scan_edges(every), db.entities(), db.get_meta(), db.counts()


def test_a_failed_batch_changes_nothing(backend: str, tmp_path: Path) -> None:
    cls = require(backend)
    with cls.create(tmp_path / cls.db_name) as db:
        db.apply(batches()[0])
        before = _snapshot(db)
        with pytest.raises(BackendError):
            db.apply(_bad_batch(backend))
        assert _snapshot(db) == before
        db.apply(batches()[1])  # the store is still usable
        assert db.get_meta()["last_seq"] == "2"


def test_identical_tables_on_both_backends(tmp_path: Path) -> None:
    dbs = [require(name).create(tmp_path / name) for name in BACKENDS]
    try:
        for ch in batches():
            for db in dbs:
                db.apply(ch)
        first, second = dbs
        for name, flt in FILTERS.items():
            assert first.scan_edges(flt).equals(second.scan_edges(flt)), name
            if name not in EDGE_ONLY:
                assert first.scan_nodes(flt).equals(second.scan_nodes(flt)), name
        assert first.entities().equals(second.entities())
        assert first.get_meta() == second.get_meta() and first.counts() == second.counts()
    finally:
        for db in dbs:
            db.close()


# -- Kùzu: insert paths and failure classification ------------------------------------------------------
@pytest.fixture
def kuzu_db(tmp_path: Path) -> Iterator[Backend]:
    cls = require("kuzu")
    db = cls.create(tmp_path / cls.db_name)
    yield db
    db.close()


@pytest.mark.parametrize("threshold", [None, 1, 10**9], ids=["create", "copy-nonempty", "default"])
def test_kuzu_edge_insert_paths_agree(kuzu_db: Backend, threshold: int | None) -> None:
    kuzu_db.copy_nonempty_min_rows = threshold  # type: ignore[attr-defined]
    for ch in batches():
        kuzu_db.apply(ch)
    m, every = model_after(), ScanFilter(all_beliefs=True)
    assert rows(kuzu_db.scan_edges(every)) == m.scan("edge", every)
    assert rows(kuzu_db.scan_nodes(every)) == m.scan("node", every)


@pytest.mark.parametrize("threshold", [None, 1], ids=["create", "copy-nonempty"])
def test_kuzu_missing_endpoint_is_refused_on_every_path(kuzu_db: Backend, threshold: int | None) -> None:
    kuzu_db.copy_nonempty_min_rows = threshold  # type: ignore[attr-defined]
    kuzu_db.apply(batches()[0])
    before = _snapshot(kuzu_db)
    with pytest.raises(BackendError):
        kuzu_db.apply(_bad_batch("kuzu"))
    assert _snapshot(kuzu_db) == before


def _failing_commit(db: Backend, *, after_commit: bool) -> Callable[[], None]:
    """Make the next COMMIT raise (before it runs, or after it ran); returns the undo function."""
    real = db._exec  # type: ignore[attr-defined]

    def fake(query: str, params: dict[str, Any] | None = None, action: str = "run a query") -> pa.Table:
        if query == "COMMIT":
            if after_commit:
                real(query, params, action)
            raise RuntimeError("injected COMMIT failure")
        return real(query, params, action)

    db._exec = fake  # type: ignore[attr-defined]
    return lambda: delattr(db, "_exec")


def test_kuzu_commit_failure_on_the_atomic_path_rolls_back(kuzu_db: Backend) -> None:
    kuzu_db.copy_nonempty_min_rows = None  # type: ignore[attr-defined]
    kuzu_db.apply(batches()[0])
    before = _snapshot(kuzu_db)
    undo = _failing_commit(kuzu_db, after_commit=False)
    with pytest.raises(BackendError) as info:
        kuzu_db.apply(batches()[1])
    undo()
    assert "injected" in str(info.value.details)
    assert _snapshot(kuzu_db) == before


def test_kuzu_commit_that_raised_after_committing_counts_as_applied(kuzu_db: Backend) -> None:
    kuzu_db.apply(batches()[0])
    undo = _failing_commit(kuzu_db, after_commit=True)
    kuzu_db.apply(batches()[1])  # no error: the batch is durable
    undo()
    assert kuzu_db.get_meta()["last_seq"] == "2"
    assert rows(kuzu_db.scan_edges(ScanFilter(all_beliefs=True))) == model_after(2).scan(
        "edge", ScanFilter(all_beliefs=True)
    )


def test_kuzu_failure_after_copy_into_nonempty_edges_completes_the_batch(kuzu_db: Backend) -> None:
    """After a successful COPY into non-empty edges, a failure commits (a rollback would lose every edge)."""
    kuzu_db.copy_nonempty_min_rows = 1  # type: ignore[attr-defined]
    kuzu_db.apply(batches()[0])
    undo = _failing_commit(kuzu_db, after_commit=False)
    kuzu_db.apply(batches()[1])  # batch 2 also closes an edge: a rollback here would mostly segfault
    undo()
    every = ScanFilter(all_beliefs=True)
    assert rows(kuzu_db.scan_edges(every)) == model_after(2).scan("edge", every)
    assert kuzu_db.get_meta()["last_seq"] == "2" and "damaged" not in kuzu_db.get_meta()


_SIMULATED_LOST_EDGES = """
import json, sys
from pathlib import Path
from engine.errors import CorruptError
from engine.store.backends.kuzu_backend import KuzuBackend
from tests.engine.store.test_backend_contract import batches

path = Path(sys.argv[1])
db = KuzuBackend.create(path)
db.copy_nonempty_min_rows = 1
db.apply(batches()[0])
ch = batches()[1]
ch.edge_closes = []  # no rel SET in the transaction: Kùzu's rollback then wipes instead of crashing
real = db._exec

def fake(query, params=None, action="run a query"):
    if query == "COMMIT":  # what Kùzu does when COMMIT fails before it is durable: roll back
        real("ROLLBACK")
        raise RuntimeError("simulated COMMIT failure")
    return real(query, params, action)

db._exec = fake
try:
    db.apply(ch)
    out = {"raised": None}
except CorruptError as exc:
    out = {"raised": "CorruptError", "details": exc.details}
del db._exec
out["meta"] = db.get_meta()
db.close()
try:
    KuzuBackend.open(path, read_only=True).close()
    out["reopen"] = "ok"
except CorruptError:
    out["reopen"] = "CorruptError"
print(json.dumps(out))
"""


def test_kuzu_lost_edges_are_detected_and_the_database_refused(tmp_path: Path) -> None:
    """The documented window, simulated: Kùzu's rollback of a COPY into non-empty edges loses them all.

    Run in a child process: this is Kùzu's buggy rollback path, and a crash must not take pytest with it.
    """
    require("kuzu")
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-c", _SIMULATED_LOST_EDGES, str(tmp_path / "store.kuzu")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"PYTHONPATH": str(root)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["raised"] == "CorruptError"
    assert out["details"]["needs_replay"] is True
    assert out["details"]["before"]["edge_versions"] == 5
    assert out["details"]["now"]["edge_versions"] == 0  # what Kùzu 0.11.3 does: every edge version lost
    assert "damaged" in out["meta"] and out["reopen"] == "CorruptError"


def test_kuzu_driver_errors_are_mapped(kuzu_db: Backend) -> None:
    kuzu_db.apply(batches()[0])
    with pytest.raises(BackendError) as info:
        kuzu_db._exec("MATCH (n:NoSuchTable) RETURN n")  # type: ignore[attr-defined]
    assert "NoSuchTable" in info.value.details["detail"]
    ch = batches()[1]
    ch.node_inserts = ch.node_inserts.drop_columns(["label"])
    with pytest.raises(BackendError):
        kuzu_db.apply(ch)
    kuzu_db.close()
    with pytest.raises(BackendError):
        kuzu_db.scan_nodes(ScanFilter())
