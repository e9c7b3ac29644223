"""The main job on its embedded defaults: build the CollegeMsg store from the copy shipped in the
package (no network needed), write its correction probes, generate its task suite (gold computed by the
engine and cross-checked by the brute-force oracles), run the verifier mutation experiment, and print
Tables 2 and 5; replay the event log into the second backend and check the digests agree. It always runs
on a fresh machine with no network.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from engine.errors import InvalidArgError, NotFoundError
from engine.store import Store, replay
from engine.store.backends import backend_class
from pipeline.cli._common import print_json, progress

HELP = "the main job: CollegeMsg store + probes, task suite (Table 2), mutation experiment (Table 5), replay"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out", type=_work_dir, default="tgms-quickstart", metavar="DIR", help="work directory (replaced)"
    )
    p.add_argument("--backend", default="duckdb", choices=("duckdb", "kuzu"))
    p.add_argument("--no-suite", action="store_true", help="only build and replay the store")


def _work_dir(text: str) -> str:
    """--out is deleted and recreated: refuse a path that would take the current directory (or one
    above it) with it, and a file."""
    p = Path(text)
    if not text.strip() or "\x00" in text or Path.cwd().resolve().is_relative_to(p.resolve()):
        raise InvalidArgError(f"--out {text!r} would replace the current directory; name a work directory")
    if p.exists() and not p.is_dir():
        raise InvalidArgError(f"--out {text} is a file, not a directory", path=text)
    return text


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
    suite_path = out / "suite-collegemsg.json"
    suite = None
    mutations: dict[str, object] = {}
    if not args.no_suite:
        from pipeline.tasks.build import build_suite, write_suite

        t3 = time.perf_counter()
        progress("generating the CollegeMsg task suite (seed 0): probes, templates, gold, cross-check ...")
        suite = build_suite(store_dir, "collegemsg", 0, progress=progress)
        write_suite(suite, suite_path)
        progress(f"wrote {suite_path} in {time.perf_counter() - t3:.1f} s")
        from pipeline.mutations import run_experiment, write_outputs

        t4 = time.perf_counter()
        progress("running the verifier mutation experiment (Table 5) ...")
        mutations = run_experiment(store_dir, suite, per_class=100, seed=0)
        write_outputs(mutations, out / "mutations")
        progress(f"wrote {out / 'mutations'}/mutations.json, table5.md in {time.perf_counter() - t4:.1f} s")
        with Store.open(store_dir, read_only=True) as store:  # the probes' corrections are in it now
            stats = store.stats()
            digest = store.digest()
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
    print_json(
        {
            "stats": stats,
            "digest": digest,
            "replay_digests": replayed,
            "suite": str(suite_path) if suite is not None else None,
        }
    )
    if suite is not None:
        from pipeline.mutations import table5_markdown
        from pipeline.tasks.stats import table2_markdown

        print(table2_markdown(suite))
        print(table5_markdown(mutations))
    same = all(d == digest for d in replayed.values())
    print("replay digests match" if same else "REPLAY DIGEST MISMATCH")
    print(digest)
    return 0 if same else 1
