"""``tgms bench store``: bulk ingest, replay, on-disk size, open time and peak RSS (a benchmark).

Cases are ``collegemsg`` (the packaged copy) or ``syn1eN`` (the synthetic generator with ``n_events =
1eN``, ``n_nodes = max(1000, 1eN / 50)``, seed 0, no correction epoch). Each (case, backend) runs in a
fresh process so its peak RSS is its own; the data set is loaded first and ingested apart, so ``ingest s``
times the store's bulk path alone.

    tgms bench store --cases collegemsg,syn1e6,syn1e7 --backends duckdb,kuzu [--update-docs]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tgms.engine.api import (
    BACKENDS,
    LOG_NAME,
    InvalidArgError,
    ScanFilter,
    Store,
    ingest_data,
    load_data,
    replay,
)
from tgms.pipeline.bench.report import BenchResult, stamp
from tgms.pipeline.latency.stores import one_scale, synthetic_nodes

HELP = "store ingest, replay, size and open time per data set and backend"


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _load(case: str) -> Any:
    if case == "collegemsg":
        return load_data("collegemsg")
    n = int(one_scale(case.removeprefix("syn")))
    return load_data("synthetic", events=n, nodes=synthetic_nodes(n), seed=0)


def run_case(case: str, backend: str, workdir: Path) -> dict[str, Any]:
    """One case on one backend (runs in a fresh process)."""
    t0 = time.perf_counter()
    data = _load(case)
    gen_s = time.perf_counter() - t0
    events = sum(f.num_rows for f in data.frames)
    root = workdir / "store"
    t0 = time.perf_counter()
    with Store.create(root, backend) as store:
        ingest_data(store, data, corrections=False)
        edge_versions = store.backend.counts()["edge_versions"]
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ro = Store.open(root, read_only=True)
    open_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ro.scan_edges(ScanFilter(vt_start_in=(0, 1)))
    first_scan_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    digest = ro.digest()
    digest_s = time.perf_counter() - t0
    ro.close()
    db = next(p for p in root.iterdir() if p.name.startswith("store.") and p.name != "store.json")
    db_bytes = _dir_bytes(db) if db.is_dir() else db.stat().st_size
    log_bytes = (root / LOG_NAME).stat().st_size
    t0 = time.perf_counter()
    with replay(root / LOG_NAME, workdir / "replayed", backend) as r:
        replay_digest = r.digest()
    replay_s = time.perf_counter() - t0
    return {
        "case": case,
        "backend": backend,
        "events": events,
        "edge_versions": edge_versions,
        "generate_s": round(gen_s, 3),
        "ingest_s": round(ingest_s, 3),
        "ingest_events_per_s": round(events / ingest_s),
        "replay_s": round(replay_s, 3),
        "open_s": round(open_s, 4),
        "first_scan_s": round(first_scan_s, 4),
        "digest_s": round(digest_s, 3),
        "db_bytes_per_edge_version": round(db_bytes / edge_versions, 1),
        "log_bytes_per_edge_version": round(log_bytes / edge_versions, 1),
        "replay_digest_equal": replay_digest == digest,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _in_fresh_process(case: str, backend: str) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"tgms-bench-{case}-{backend}-"))
    try:
        with mp.get_context("spawn").Pool(1) as pool:
            return pool.apply(run_case, (case, backend, work))
    except Exception as exc:  # a failed case is a row of the table, not the end of the run
        return {"case": case, "backend": backend, "error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


COLUMNS = [
    ("case", "case"),
    ("backend", "backend"),
    ("edge_versions", "edge versions"),
    ("ingest_events_per_s", "ingest events/s"),
    ("ingest_s", "ingest s"),
    ("replay_s", "replay s"),
    ("open_s", "open s"),
    ("first_scan_s", "first scan s"),
    ("digest_s", "digest s"),
    ("db_bytes_per_edge_version", "DB B/edge"),
    ("log_bytes_per_edge_version", "log B/edge"),
    ("peak_rss_mb", "peak RSS MB"),
    ("replay_digest_equal", "replay digest ="),
]


def table(records: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['backend']} | error: {r['error']} |")
            continue
        cells = [
            f"{r[k]:,}" if isinstance(r[k], int) and not isinstance(r[k], bool) else str(r[k])
            for k, _ in COLUMNS
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cases(text: str) -> list[str]:
    cases = [c.strip() for c in text.split(",") if c.strip()]
    for c in cases:
        if c != "collegemsg":
            if not c.startswith("syn"):
                raise InvalidArgError(f"bad case {c!r}: expected collegemsg or syn<N>", field="cases")
            one_scale(c.removeprefix("syn"))  # refuses a bad size
    return cases


def _backends(text: str) -> list[str]:
    names = [b.strip() for b in text.split(",") if b.strip()]
    bad = [b for b in names if b not in BACKENDS]
    if bad:
        raise InvalidArgError(f"unknown backend {bad[0]!r}", field="backends", legal=list(BACKENDS))
    return names


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", default="collegemsg,syn1e6,syn1e7", help="collegemsg and/or syn<N> (syn1e6)")
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated backends")


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    cases, backends = _cases(args.cases), _backends(args.backends)
    records = []
    for case in cases:
        for backend in backends:
            progress(f"running {case} on {backend} ...")
            records.append(_in_fresh_process(case, backend))
    md = f"Measured {stamp()}.\n\n" + table(records)
    return BenchResult(records, md, ("store-bench", "Store: ingest, replay, size, open"))
