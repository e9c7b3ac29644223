"""Checks before anything is made (pipeline/campaign/preflight.py): a damaged, locked or half-made MLflow
SQLite store, an unwritable run directory and a missing or unreachable endpoint are refused with the one
structured error, and a refused campaign leaves no run directory, bundle or MLflow run behind."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tgms.engine.api import ConflictError, CorruptError
from tgms.pipeline.campaign.preflight import check_run_parent, check_sqlite_store, sqlite_path


def _store(path: Path, runs: int = 1, tmp_table: bool = False) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE runs (run_uuid TEXT)")
    con.execute("CREATE TABLE metrics (k TEXT, v REAL)")
    con.executemany("INSERT INTO metrics VALUES (?, ?)", [(f"m{i}", float(i)) for i in range(20_000)])
    con.executemany("INSERT INTO runs VALUES (?)", [(f"r{i}",) for i in range(runs)])
    if tmp_table:
        con.execute("CREATE TABLE _alembic_tmp_jobs (id INTEGER)")
    con.commit()
    con.close()
    return path


def test_sqlite_path_of_a_tracking_uri(tmp_path: Path) -> None:
    assert sqlite_path(f"sqlite:///{tmp_path}/mlflow.db") == tmp_path / "mlflow.db"
    assert sqlite_path("http://127.0.0.1:5000") is None and sqlite_path("file:///x/mlruns") is None


def test_a_sound_store_passes_and_a_missing_one_is_made_later(tmp_path: Path) -> None:
    check_sqlite_store(_store(tmp_path / "ok.db"))
    check_sqlite_store(tmp_path / "absent.db")  # nothing there yet: MLflow makes it


def test_a_garbage_header_and_overwritten_pages_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(os.urandom(64 * 1024))
    with pytest.raises(CorruptError, match="damaged"):
        check_sqlite_store(garbage)
    torn = _store(tmp_path / "torn.db")
    data = bytearray(torn.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 8192] = os.urandom(8192)  # 8 KiB of random bytes mid-file
    torn.write_bytes(bytes(data))
    with pytest.raises(CorruptError) as err:
        check_sqlite_store(torn)
    assert "mv " in err.value.message  # the fix is named


def test_a_half_made_first_setup_is_removed_when_it_holds_no_runs(tmp_path: Path) -> None:
    empty = _store(tmp_path / "empty.db", runs=0, tmp_table=True)
    said: list[str] = []
    check_sqlite_store(empty, said.append)
    assert not empty.exists() and "interrupted first set-up" in said[0]
    with_runs = _store(tmp_path / "runs.db", runs=3, tmp_table=True)
    with pytest.raises(CorruptError, match="mlflow db upgrade"):
        check_sqlite_store(with_runs)
    assert with_runs.exists()  # runs are never deleted


def test_a_first_setup_a_full_disk_cut_short_is_removed_and_a_finished_one_kept(tmp_path: Path) -> None:
    # a disk that filled during MLflow's migrations leaves its schema short of the installed MLflow's
    # (no _alembic_tmp_ table): every later set-up then failed on "table ... already exists"
    from mlflow.store.db.utils import _get_latest_schema_revision

    def store(name: str, version: str, runs: int) -> Path:
        path = _store(tmp_path / name, runs=runs)
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE alembic_version (version_num TEXT)")
        con.execute("INSERT INTO alembic_version VALUES (?)", (version,))
        con.execute("CREATE TABLE experiments (experiment_id INTEGER)")
        con.commit()
        con.close()
        return path

    short = store("short.db", "451aebb31d03", runs=0)
    said: list[str] = []
    check_sqlite_store(short, said.append)
    assert not short.exists() and "unfinished first set-up" in said[0]
    done = store("done.db", str(_get_latest_schema_revision()), runs=0)  # made, no run yet: kept
    check_sqlite_store(done)
    assert done.exists()
    old_with_runs = store("old.db", "451aebb31d03", runs=2)  # an older MLflow's store: MLflow upgrades it
    check_sqlite_store(old_with_runs)
    assert old_with_runs.exists()


def test_a_locked_store_is_retried_then_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tgms.pipeline.campaign.preflight as pf

    monkeypatch.setattr(pf, "LOCK_RETRIES", 2)
    db = _store(tmp_path / "locked.db")
    holder = sqlite3.connect(db, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    t0 = time.monotonic()
    with pytest.raises(ConflictError, match="locked by another process"):
        check_sqlite_store(db)
    assert time.monotonic() - t0 >= 1.0  # retried before reporting
    # released while it retries: it goes on
    monkeypatch.setattr(pf, "LOCK_RETRIES", 5)
    threading.Timer(1.5, holder.rollback).start()
    check_sqlite_store(db)
    holder.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_run_directory_is_refused(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ConflictError, match="not a writable directory"):
            check_run_parent(ro / "campaigns" / "main")
    finally:
        ro.chmod(0o700)
    check_run_parent(tmp_path / "campaigns" / "main")


# one case through the real entry point (exit code, the JSON line on stderr, no directory made); the other
# refusals (a missing endpoints file, an ftp:// URL, an unreachable replica, ...) are cases of the
# in-process fault suite (test_fault_suite.py), which checks the same three things without a process each
@pytest.mark.parametrize(
    ("overrides", "code"),
    [(["model=qwen2.5-7b"], "E_INVALID_ARG")],  # no api_base, no endpoints file
)
def test_a_refused_campaign_makes_nothing(tmp_path: Path, overrides: list[str], code: str) -> None:
    pytest.importorskip("hydra")
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["TGMS_CACHE"] = str(tmp_path / "cache")
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tgms.pipeline.campaign", *overrides,
         f"hydra.run.dir={tmp_path}/campaigns/main"],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0 and time.monotonic() - t0 < 60  # no bundle was built first
    error = json.loads(proc.stderr.strip().splitlines()[-1])
    assert error["error"] == code, proc.stderr[-2000:]
    assert not (tmp_path / "campaigns").exists()  # no run directory, bundle or mlflow.db
    assert "Traceback" not in proc.stderr
