"""Build a store from a data set: a SNAP file (local, packaged or downloaded into a cache) or the seeded
synthetic generator. The store directory must not hold a store yet.

SNAP node ids become uids ``n<id>``; SNAP seconds become microseconds. For ``synthetic`` the generator's
planted-pattern manifest is written to ``DIR/manifest.json`` and its second belief epoch (corrections and
retractions) is written as later batches unless ``--no-corrections`` is given.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from engine.canonical import dumps
from engine.store import Store
from pipeline.cli._common import add_store, print_json, progress

HELP = "build a store from a SNAP data set or the synthetic generator"
DATASETS = ("collegemsg", "bitcoin-otc", "email-eu", "synthetic")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, choices=DATASETS)
    p.add_argument("--source", metavar="PATH", help="local data file (plain or .gz); default: packaged/cache")
    p.add_argument("--cache-dir", metavar="DIR", help="download cache (default $TGMS_CACHE or ~/.cache/tgms)")
    p.add_argument("--events", type=int, default=100_000, help="synthetic: number of events")
    p.add_argument("--nodes", type=int, default=1_000, help="synthetic: number of nodes")
    p.add_argument("--seed", type=int, default=0, help="synthetic: generator seed")
    p.add_argument("--no-corrections", action="store_true", help="synthetic: skip the second belief epoch")
    add_store(p, backend=True)


def build_store(args: argparse.Namespace) -> Store:
    t0 = time.perf_counter()
    if args.dataset == "synthetic":
        from engine.ingest.synthetic import generate

        progress(f"generating synthetic data: {args.events} events, {args.nodes} nodes, seed {args.seed}")
        data = generate(n_nodes=args.nodes, n_events=args.events, seed=args.seed)
        frames, corrections = list(data.frames), ([] if args.no_corrections else data.corrections)
        manifest = data.manifest
    else:
        from engine.ingest.snap import load_dataset

        frames, corrections, manifest = [load_dataset(args.dataset, args.source, args.cache_dir)], [], None
    store = Store.create(args.store, args.backend)
    try:
        for frame in frames:
            progress(f"ingesting {frame.num_rows} {frame.rel_type} events")
            store.ingest_events(frame)
        for i, batch in enumerate(corrections):
            store.write(batch)
            if (i + 1) % 50 == 0 or i + 1 == len(corrections):
                progress(f"corrections: {i + 1}/{len(corrections)} batches")
        if manifest is not None:
            (Path(args.store) / "manifest.json").write_text(dumps(manifest) + "\n")
    except BaseException:
        store.close()
        raise
    progress(f"built {args.store} ({args.backend}) in {time.perf_counter() - t0:.2f} s")
    return store


def run(args: argparse.Namespace) -> int:
    with build_store(args) as store:
        stats = store.stats()
        stats["digest"] = store.digest()
    print_json(stats)
    return 0
