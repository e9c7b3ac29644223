"""The main job on its embedded defaults: build the CollegeMsg store from the copy shipped in the
package (no network needed), replay its event log into a second backend, and print stats and digests.

Later issues extend this job (correction probes, task suite, mutation experiment); it always runs on a
fresh machine with no network.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from engine.errors import NotFoundError
from engine.store import Store, replay
from engine.store.backends import backend_class
from pipeline.cli._common import print_json, progress

HELP = "the main job: build CollegeMsg from the packaged copy, replay it, print stats and digests"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="tgms-quickstart", metavar="DIR", help="work directory (replaced)")
    p.add_argument("--backend", default="duckdb", choices=("duckdb", "kuzu"))


def run(args: argparse.Namespace) -> int:
    from engine.ingest.snap import load_dataset

    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    t0 = time.perf_counter()
    frame = load_dataset("collegemsg")
    progress(f"loaded CollegeMsg: {frame.num_rows} events ({time.perf_counter() - t0:.2f} s)")
    store_dir = out / "collegemsg"
    t1 = time.perf_counter()
    with Store.create(store_dir, args.backend) as store:
        store.ingest_events(frame)
        stats = store.stats()
        digest = store.digest()
    progress(f"built {store_dir} ({args.backend}) in {time.perf_counter() - t1:.2f} s")
    other = "kuzu" if args.backend == "duckdb" else "duckdb"
    replayed: dict[str, str] = {}
    try:
        backend_class(other)
    except NotFoundError as exc:
        progress(f"skipping the {other} replay: {exc.message}")
    else:
        t2 = time.perf_counter()
        with replay(store_dir / "eventlog.jsonl", out / f"collegemsg-{other}", other) as r:
            replayed[other] = r.digest()
        progress(f"replayed into {other} in {time.perf_counter() - t2:.2f} s")
    print_json({"stats": stats, "digest": digest, "replay_digests": replayed})
    same = all(d == digest for d in replayed.values())
    print("replay digests match" if same else "REPLAY DIGEST MISMATCH")
    print(digest)
    return 0 if same else 1
