"""The backend contract, Kùzu only: its edge insert paths and how it classifies failures.

The batches and the oracle are in tests/engine/store/_contract.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.engine.store._contract import bad_batch, batches, model_after, require, rows, snapshot
from tgms.engine.errors import BackendError
from tgms.engine.store.backends.base import Backend
from tgms.engine.store.model import ScanFilter


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
    before = snapshot(kuzu_db)
    with pytest.raises(BackendError):
        kuzu_db.apply(bad_batch("kuzu"))
    assert snapshot(kuzu_db) == before


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
    before = snapshot(kuzu_db)
    undo = _failing_commit(kuzu_db, after_commit=False)
    with pytest.raises(BackendError) as info:
        kuzu_db.apply(batches()[1])
    undo()
    assert "injected" in str(info.value.details)
    assert snapshot(kuzu_db) == before


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
from tgms.engine.errors import CorruptError
from tgms.engine.store.backends.kuzu_backend import KuzuBackend
from tests.engine.store._contract import batches

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
