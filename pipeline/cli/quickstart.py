"""The main job on its embedded defaults: build the CollegeMsg store from the copy shipped in the
package (no network needed), write its correction probes, generate its task suite (gold computed by the
engine and cross-checked by the brute-force oracles), run the verifier mutation experiment, and print
Tables 2 and 5; replay the event log into the other backend, when it is installed, and check the digests
agree (a match is reported only for a replay that ran). It always runs on a fresh machine with no network.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from tgms.engine.api import (
    BACKENDS,
    LOG_NAME,
    InvalidArgError,
    NotFoundError,
    Store,
    backend_class,
    build_store,
    replay,
)
from tgms.pipeline.console import print_json, progress

HELP = "the main job: CollegeMsg store + probes, task suite (Table 2), mutation experiment (Table 5), replay"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out", type=_work_dir, default="tgms-quickstart", metavar="DIR", help="work directory (replaced)"
    )
    p.add_argument("--backend", default="duckdb", choices=BACKENDS)
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
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    store_dir = out / "collegemsg"
    with build_store("collegemsg", store_dir, args.backend, progress=progress) as store:
        stats = store.stats()
        digest = store.digest()
    suite_path = out / "suite-collegemsg.json"
    suite = None
    mutations: dict[str, object] = {}
    if not args.no_suite:
        from tgms.pipeline.tasks.build import build_suite, write_suite

        t3 = time.perf_counter()
        progress("generating the CollegeMsg task suite (seed 0): probes, templates, gold, cross-check ...")
        suite = build_suite(store_dir, "collegemsg", 0, progress=progress)
        write_suite(suite, suite_path)
        progress(f"wrote {suite_path} in {time.perf_counter() - t3:.1f} s")
        from tgms.pipeline.mutations import run_experiment, write_outputs

        t4 = time.perf_counter()
        progress("running the verifier mutation experiment (Table 5) ...")
        mutations = run_experiment(store_dir, suite, per_class=100, seed=0)
        write_outputs(mutations, out / "mutations")
        progress(f"wrote {out / 'mutations'}/mutations.json, table5.md in {time.perf_counter() - t4:.1f} s")
        with Store.open(store_dir, read_only=True) as store:  # the probes' corrections are in it now
            stats = store.stats()
            digest = store.digest()
    replayed = _replay_into_others(store_dir, out, args.backend)
    print_json(
        {
            "stats": stats,
            "digest": digest,
            "replay_digests": replayed,
            "suite": str(suite_path) if suite is not None else None,
        }
    )
    if suite is not None:
        from tgms.pipeline.mutations import table5_markdown
        from tgms.pipeline.tasks.stats import table2_markdown

        print(table2_markdown(suite))
        print(table5_markdown(mutations))
    line, ok = replay_report(digest, replayed)
    print(line)
    print(digest)
    return 0 if ok else 1


def _replay_into_others(store_dir: Path, out: Path, backend: str) -> dict[str, str]:
    """Replay the store's log into every other backend that is installed; its digest by backend."""
    replayed: dict[str, str] = {}
    for other in (b for b in BACKENDS if b != backend):
        try:
            backend_class(other)
        except NotFoundError as exc:
            progress(f"skipping the {other} replay: {exc.message}")
            continue
        t0 = time.perf_counter()
        with replay(store_dir / LOG_NAME, out / f"collegemsg-{other}", other) as r:
            replayed[other] = r.digest()
        progress(f"replayed into {other} in {time.perf_counter() - t0:.2f} s")
    return replayed


def replay_report(digest: str, replayed: dict[str, str]) -> tuple[str, bool]:
    """The line the quickstart prints about its replays, and whether they passed.

    A match is claimed only for replays that ran: with no other backend installed nothing was compared,
    and the line says so (an ``all()`` over no replays would claim a check that cannot fail).
    """
    if not replayed:
        return "no replay ran (no other backend installed: pip install 'tgms[kuzu]'); nothing compared", True
    wrong = sorted(b for b, d in replayed.items() if d != digest)
    if wrong:
        return f"REPLAY DIGEST MISMATCH on {', '.join(wrong)}", False
    return f"replay digests match ({', '.join(sorted(replayed))})", True
