"""Rebuild a store from an event log: same transaction times, recorded failures reproduced and skipped.

The new store's digest equals the original's on either backend.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tgms.engine.api import InvalidArgError, NotFoundError, replay
from tgms.pipeline.cli._common import add_store
from tgms.pipeline.console import progress
from tgms.pipeline.inputs import fspath


def check_log_file(path: str) -> None:
    """A missing log is E_NOT_FOUND, a directory or unreadable file E_INVALID_ARG, before a store is made."""
    p = Path(path)
    if not p.exists():
        raise NotFoundError(f"event log {path} does not exist", path=path)
    if not p.is_file():
        raise InvalidArgError(f"event log {path} is not a file", path=path)
    try:
        with open(p, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InvalidArgError(f"event log {path} cannot be read: {exc.strerror}", path=path) from None


HELP = "rebuild a store from an event log"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", type=fspath, metavar="LOG", help="path to an eventlog.jsonl")
    add_store(p, backend=True)


def run(args: argparse.Namespace) -> int:
    check_log_file(args.log)
    t0 = time.perf_counter()
    with replay(args.log, args.store, args.backend) as store:
        digest = store.digest()
        batches = store.stats()["batches_applied"]
    progress(f"replayed into {args.store} ({args.backend}) in {time.perf_counter() - t0:.2f} s")
    print(f"batches applied: {batches}")
    print(digest)
    return 0
