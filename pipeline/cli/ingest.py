"""Build a store from a data set: a SNAP file (local, packaged or downloaded into a cache) or the seeded
synthetic generator (a thin front to :func:`engine.ingest.build.build_store`). The store directory must
not hold a store yet.

SNAP node ids become uids ``n<id>``; SNAP seconds become microseconds. For ``synthetic`` the generator's
planted-pattern manifest is written to ``DIR/manifest.json`` and its second belief epoch (corrections and
retractions) is written as later batches unless ``--no-corrections`` is given.
"""

from __future__ import annotations

import argparse

from tgms.engine.api import DATASETS, build_store
from tgms.pipeline.cli._common import add_store
from tgms.pipeline.console import print_json, progress

HELP = "build a store from a SNAP data set or the synthetic generator"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, choices=DATASETS)
    p.add_argument("--source", metavar="PATH", help="local data file (plain or .gz); default: packaged/cache")
    p.add_argument("--cache-dir", metavar="DIR", help="download cache (default $TGMS_CACHE or ~/.cache/tgms)")
    p.add_argument("--events", type=int, default=100_000, help="synthetic: number of events")
    p.add_argument("--nodes", type=int, default=1_000, help="synthetic: number of nodes")
    p.add_argument("--seed", type=int, default=0, help="synthetic: generator seed")
    p.add_argument("--no-corrections", action="store_true", help="synthetic: skip the second belief epoch")
    add_store(p, backend=True)


def run(args: argparse.Namespace) -> int:
    store = build_store(
        args.dataset,
        args.store,
        args.backend,
        source=args.source,
        cache_dir=args.cache_dir,
        events=args.events,
        nodes=args.nodes,
        seed=args.seed,
        corrections=not args.no_corrections,
        progress=progress,
    )
    with store:
        stats = store.stats()
        stats["digest"] = store.digest()
    print_json(stats)
    return 0
