"""Small helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from tgms.engine.api import BACKENDS, ResultStore, Store
from tgms.pipeline.console import progress
from tgms.pipeline.inputs import fspath


def add_store(p: argparse.ArgumentParser, *, backend: bool = False) -> None:
    p.add_argument("--store", required=True, type=fspath, metavar="DIR", help="store directory")
    if backend:
        p.add_argument(
            "--backend", choices=BACKENDS, default="duckdb", help="storage backend (default duckdb)"
        )


def read_store(args: argparse.Namespace) -> Store:
    """The ``--store`` of a reading command, opened read-only (use it as a context manager)."""
    return Store.open(args.store, read_only=True)


def add_results(p: argparse.ArgumentParser, help: str) -> None:
    """``--results DIR``: the result store ``tgms plan run`` writes and ``tgms verify-answer`` reads."""
    p.add_argument("--results", default=None, metavar="DIR", help=help)


def results_dir(store: str, *, write: bool) -> Path:
    """Where ``tgms plan run`` keeps results by default.

    ``STORE/results`` when it exists or can be made there; for a store we may not write (read-only media,
    an immutable directory), a directory of its own under the cache: ``$TGMS_CACHE`` (or
    ``~/.cache/tgms``) ``/results/<hash of the store's absolute path>``. Running a plan on a read-only
    store is reading it: it must not fail because the results have nowhere to go."""
    here = Path(store) / "results"
    if here.is_dir() and (not write or _writable(here)):
        return here
    if write and not here.exists() and _can_create(here):
        return here
    cached = cached_results_dir(store)
    if write:
        progress(f"the store directory is not writable: results go to {cached}")
    return cached


def cached_results_dir(store: str) -> Path:
    return _cache_root() / "results" / hashlib.sha256(str(Path(store).resolve()).encode()).hexdigest()[:16]


def results_for_reading(store: str) -> ResultStore:
    """The results ``tgms plan run`` kept for ``store``, wherever it put them (``STORE/results`` or, for a
    store it could not write, the cache directory); objects a trace embeds are added where they can be."""
    here, cached = Path(store) / "results", cached_results_dir(store)
    writable = (here.is_dir() and os.access(here, os.W_OK)) or (
        not here.exists() and os.access(store, os.W_OK)
    )
    return _EitherResults(here, cached) if writable else _EitherResults(cached, here)


class _EitherResults(ResultStore):
    """A result store (new objects go under its root) that also finds objects under a second directory."""

    def __init__(self, root: Path, other: Path) -> None:
        super().__init__(root)
        self.other = ResultStore(other)

    def has(self, digest: str) -> bool:
        return super().has(digest) or self.other.has(digest)

    def get(self, digest: str) -> Any:
        if not super().has(digest) and self.other.has(digest):
            return self.other.get(digest)
        return super().get(digest)


def _cache_root() -> Path:
    from tgms.models.local.paths import cache_root  # here, not at the top: every command imports this module

    return cache_root()


def _writable(d: Path) -> bool:
    try:
        with tempfile.TemporaryFile(dir=d):
            return True
    except OSError:
        return False


def _can_create(d: Path) -> bool:
    try:
        d.mkdir()
    except FileExistsError:
        return d.is_dir() and _writable(d)
    except OSError:
        return False
    if _writable(d):
        return True
    d.rmdir()
    return False
