"""Checks a campaign makes before it makes anything (issue 26, item 4).

A campaign used to build its bundle (about a minute) and open its MLflow runs before it found out that
``model.api_base`` was missing, that an endpoints file did not exist, or that the tracking store was
damaged; the refusal then left a FAILED parent run, a child stuck RUNNING and a run directory behind.
:func:`preflight` runs right after the config is validated and before the run directory, the bundles or
the tracking store are touched:

- **endpoints** (``model.kind: endpoint``): the replica URLs (``api_base`` and the endpoints file: present,
  ``http(s)://``), the API key's variable, and every replica ready (``/health``, ``/v1/models`` listing the
  model) within ``model.ready_timeout_s``, with a line every few seconds saying which replica is waited
  for and why, instead of a silent wait;
- **the tracking store** when it is a SQLite file that exists (:func:`check_sqlite_store`): readable,
  ``PRAGMA quick_check`` = ok (a file with bytes overwritten is refused, not used), not locked by another
  process past a few retries, and not a half-made first set-up (an interrupted migration leaves
  ``_alembic_tmp_*`` tables, a full disk a schema short of the installed MLflow's, and either fails every
  later run: such a store that holds no runs is removed, since nothing is lost, and one that holds runs is
  refused with the fix);
- **the run directory**: its parent writable.

Every refusal is the one structured error (:mod:`engine.errors`), naming the cause and the fix.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

from tgms.engine.api import ConflictError, CorruptError
from tgms.pipeline.campaign.config import CampaignConfig

#: attempts on a locked tracking store, a second apart, before it is reported
LOCK_RETRIES = 5


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///…`` tracking URI (SQLAlchemy's form: ``sqlite:///rel.db``,
    ``sqlite:////abs/path.db``); None for any other store."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        return None
    rest = unquote(uri[len(prefix) :].split("?", 1)[0])
    return Path(rest) if rest else None


def check_sqlite_store(path: Path, say: Callable[[str], None] = lambda _: None) -> None:
    """Refuse a damaged, locked or half-made MLflow SQLite store (module docstring); a half-made one that
    holds no runs is removed."""
    if not path.exists():
        return
    if not os.access(path, os.R_OK | os.W_OK):
        raise ConflictError(f"the tracking store {path} is not readable and writable", path=str(path))
    for attempt in range(LOCK_RETRIES):
        try:
            con = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=1.0)
            try:
                check = [r[0] for r in con.execute("PRAGMA quick_check").fetchall()]
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                runs = con.execute("SELECT count(*) FROM runs").fetchone()[0] if "runs" in tables else 0
                experiments = (
                    con.execute("SELECT count(*) FROM experiments").fetchone()[0]
                    if "experiments" in tables
                    else 0
                )
                version = (
                    con.execute("SELECT version_num FROM alembic_version").fetchone()
                    if "alembic_version" in tables
                    else None
                )
                con.execute("BEGIN IMMEDIATE")  # a write lock: the store is not held by another writer
                con.rollback()
            finally:
                con.close()
            break
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                if attempt + 1 < LOCK_RETRIES:
                    time.sleep(1.0)
                    continue
                raise ConflictError(
                    f"the tracking store {path} is locked by another process ({exc}) after {LOCK_RETRIES} "
                    "tries: wait for the other campaign (or `mlflow ui` writing to it) to finish, or set "
                    "tracking.uri to another store",
                    path=str(path),
                ) from None
            raise CorruptError(_damaged(path, str(exc)), path=str(path)) from None
        except sqlite3.DatabaseError as exc:  # "file is not a database": a garbage header
            raise CorruptError(_damaged(path, str(exc)), path=str(path)) from None
    if check != ["ok"]:
        raise CorruptError(_damaged(path, "; ".join(check[:3])), path=str(path), quick_check=check[:10])
    migrating = any(t.startswith("_alembic_tmp_") for t in tables)
    if not migrating and not runs and experiments <= 1 and (version or [None])[0] != _latest_schema():
        # MLflow makes the schema, then the Default experiment: a store without runs whose schema stops
        # short of the installed MLflow's (a disk that filled, a kill during the first set-up) is a first
        # set-up that did not finish; every later set-up fails on its half-made tables
        path.unlink()
        say(f"removed {path}: an unfinished first set-up (schema {version}, no runs in it); it is made again")
        return
    if migrating:
        if runs:
            raise CorruptError(
                f"the tracking store {path} holds a half-finished schema migration (_alembic_tmp_ tables) "
                f"and {runs} run(s): run `mlflow db upgrade sqlite:///{path}` on it, or move it aside",
                path=str(path),
                runs=runs,
            )
        path.unlink()
        say(f"removed {path}: an interrupted first set-up (no runs in it); it is made again")


def _latest_schema() -> str | None:
    """The schema revision the installed MLflow makes (None when it cannot say)."""
    try:
        from mlflow.store.db.utils import _get_latest_schema_revision

        return str(_get_latest_schema_revision())
    except Exception:  # a private helper of MLflow's: without it, only the _alembic_tmp_ rule applies
        return None


def _damaged(path: Path, why: str) -> str:
    return (
        f"the tracking store {path} is damaged ({why}): move it aside (`mv {path} {path}.bad`) and rerun; "
        "the campaign's records (records/*.jsonl) are kept and logged again"
    )


def check_run_parent(run_dir: Path) -> None:
    """The run directory can be made: the nearest existing ancestor is writable."""
    probe = run_dir.resolve()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.is_dir() and os.access(probe, os.W_OK | os.X_OK):
        return
    raise ConflictError(
        f"cannot write the run directory {run_dir}: {probe} is not a writable directory; run from a "
        "writable directory or set hydra.run.dir",
        path=str(run_dir),
        blocked_at=str(probe),
    )


def check_endpoints(config: CampaignConfig, say: Callable[[str], None]) -> None:
    """For ``model.kind: endpoint``: URLs, key and readiness, before anything is made."""
    from tgms.pipeline.campaign.endpoints import api_key, auth_headers, replica_urls, wait_ready

    model = config.model
    if model.serving.kind != "endpoint":
        return
    urls = replica_urls(model)
    headers = auth_headers(api_key(model))
    served = model.generation.served
    say(f"checking {len(urls)} replica(s) of {served}: {', '.join(urls)}")
    wait_ready(urls, served, timeout_s=model.serving.ready_timeout_s, headers=headers, say=say)


def preflight(config: CampaignConfig, tracking_uri: str, run_dir: Path, say: Callable[[str], None]) -> None:
    """Every check of the module docstring, in order; the first refusal raises."""
    check_run_parent(run_dir)
    check_endpoints(config, say)
    path = sqlite_path(tracking_uri)
    if path is not None:
        check_sqlite_store(path, say)
