"""Rebuild a store from an event log: same transaction times, recorded failures reproduced and skipped.

The new store's digest equals the original's on either backend.
"""

from __future__ import annotations

import argparse
import time

from engine.store import replay
from pipeline.cli._common import add_store, progress

HELP = "rebuild a store from an event log"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", metavar="LOG", help="path to an eventlog.jsonl")
    add_store(p, backend=True)


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    with replay(args.log, args.store, args.backend) as store:
        digest = store.digest()
        batches = store.stats()["batches_applied"]
    progress(f"replayed into {args.store} ({args.backend}) in {time.perf_counter() - t0:.2f} s")
    print(f"batches applied: {batches}")
    print(digest)
    return 0
