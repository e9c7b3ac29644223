"""The backend contract on every backend: lifecycle, read-only opens, refused batches, cross-backend equality.

The batches and the oracle are in tests/engine/store/_contract.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.engine.store._contract import (
    EDGE_ONLY,
    FILTERS,
    bad_batch,
    batches,
    model_after,
    require,
    rows,
    snapshot,
)
from tgms.engine.errors import BackendError, ConflictError
from tgms.engine.store.backends import BACKENDS
from tgms.engine.store.model import ScanFilter


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


def test_a_failed_batch_changes_nothing(backend: str, tmp_path: Path) -> None:
    cls = require(backend)
    with cls.create(tmp_path / cls.db_name) as db:
        db.apply(batches()[0])
        before = snapshot(db)
        with pytest.raises(BackendError):
            db.apply(bad_batch(backend))
        assert snapshot(db) == before
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
