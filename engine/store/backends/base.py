"""The small adapter interface every storage backend implements.

Update semantics (carving, supersede, clock, log) live above this interface in ``engine.store``; a backend
only persists what it is told and answers scans. Everything a backend returns is an Arrow table in the
schemas of :mod:`engine.store.model`; every driver exception is mapped to
:class:`engine.errors.BackendError` (or, when the driver says the disk is full, ``LimitError``) at the
boundary (:func:`driver_failure`).

Contract for ``apply``: the whole :class:`BatchChanges` becomes visible at once or not at all (one
transaction). The ``meta`` entries (``last_seq``, ``last_tt``) are written in the same transaction, which is
how the store knows, after a crash, whether the last logged batch was applied.
"""

from __future__ import annotations

import abc
import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from tgms.engine.errors import BackendError, LimitError
from tgms.engine.store.model import BatchChanges, ScanFilter

#: how DuckDB and Kùzu say the disk is full (the OS's ENOSPC text, and their own words for it)
_DISK_FULL = re.compile(r"no space left on device|disk (?:is )?full|not enough space", re.IGNORECASE)
_QUOTED_PATH = re.compile(r"[\"'](/[^\"']+)[\"']")


def driver_failure(driver: str, action: str, exc: BaseException) -> BackendError | LimitError:
    """A driver exception as a TGMS error: ``E_LIMIT`` "the disk is full" (with the file named, when the
    driver names one) when that is what the driver says, so a full disk reads the same from every layer
    (the pipeline's boundary maps ``OSError(ENOSPC)`` so too); else ``E_BACKEND``."""
    detail = f"{type(exc).__name__}: {exc}" if driver == "kuzu" else str(exc)
    if _DISK_FULL.search(str(exc)):
        where = _QUOTED_PATH.search(str(exc))
        extra = {"path": where.group(1)} if where else {}
        return LimitError(
            f"the disk is full: {driver} failed to {action}", driver=driver, detail=detail, **extra
        )
    return BackendError(f"{driver} failed to {action}", driver=driver, detail=detail)


class Backend(abc.ABC):
    """One open store database (a DuckDB file, a Kùzu database)."""

    name: str = "abstract"
    #: file or directory name of the database inside the store directory
    db_name: str = "store.db"

    def __init__(self, path: Path, read_only: bool) -> None:
        self.path = path
        self.read_only = read_only

    # -- lifecycle ----------------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def create(cls, path: Path) -> Backend:
        """Create an empty database at ``path`` (which must not exist) and open it read-write."""

    @classmethod
    @abc.abstractmethod
    def open(cls, path: Path, read_only: bool = False) -> Backend:
        """Open an existing database. ``read_only=True`` must not modify any file."""

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- writes -------------------------------------------------------------------------------------
    @abc.abstractmethod
    def apply(self, changes: BatchChanges) -> None:
        """Apply one batch's net effect atomically (see module docstring)."""

    # -- reads --------------------------------------------------------------------------------------
    @abc.abstractmethod
    def get_meta(self) -> dict[str, str]:
        """All meta entries (at least ``last_seq`` and ``last_tt`` once a batch was applied)."""

    @abc.abstractmethod
    def entities(self) -> pa.Table:
        """The uid dictionary, ``ENTITY_SCHEMA``, ordered by nid."""

    @abc.abstractmethod
    def scan_nodes(self, flt: ScanFilter) -> pa.Table:
        """Node versions matching ``flt`` (``NODE_SCHEMA``), ordered by ``(nid, vt_s, vid)``."""

    @abc.abstractmethod
    def scan_edges(self, flt: ScanFilter) -> pa.Table:
        """Edge versions matching ``flt`` (``EDGE_SCHEMA``), ordered by ``(vt_s, eid, vid)``."""

    def scan_edge_keys(self, flt: ScanFilter) -> pa.Table:
        """The key columns (vid, eid, src, dst, vt_s, vt_e) of :meth:`scan_edges`, same order; a backend
        may add ``rid`` (a row id) and then serves the other columns by :meth:`scan_edges_by_rid`.
        Default: the whole sorted table (no ``rid``)."""
        return self.scan_edges(flt)

    def scan_edges_by_rid(self, flt: ScanFilter, rids: np.ndarray | None = None) -> pa.Table:
        """Every non-key column of :meth:`scan_edges` plus ``rid``, ordered by ``rid``, for all its rows or
        only those with the given (sorted, unique) row ids (only for backends whose
        :meth:`scan_edge_keys` returns ``rid``). The whole-table form (``rids`` None, a plain belief-state
        filter) must be safe to run on another thread while this backend serves the calling one."""
        raise NotImplementedError(f"{type(self).__name__} does not serve edge rows by row id")

    def edge_stats(self, flt: ScanFilter) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(sorted vt_s, nids, endpoint counts) of the edge versions matching ``flt`` by aggregate
        queries, or None when the backend has no cheaper way than a full scan (the default)."""
        return None

    @abc.abstractmethod
    def counts(self) -> dict[str, int]:
        """``entities``, ``node_versions``, ``edge_versions`` (all belief states), ``edge_identities``."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
