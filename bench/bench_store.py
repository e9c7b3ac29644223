"""Store benchmark (not a test): bulk ingest, replay, on-disk size, open time, peak RSS.

Each case runs in a fresh subprocess so its peak RSS is its own. Prints a Markdown table and, with
``--json OUT``, one record per case; ``--update-docs`` rewrites the store section of docs/benchmarks.md.

    python bench/bench_store.py --cases collegemsg,syn1e6,syn1e7 --backends duckdb,kuzu --update-docs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "benchmarks.md"


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run_case(case: str, backend: str, workdir: Path) -> dict[str, Any]:
    """Runs inside the subprocess."""
    from engine.store import Store, replay
    from engine.store.model import ScanFilter

    t0 = time.perf_counter()
    if case == "collegemsg":
        from engine.ingest.snap import load_dataset

        frames = [load_dataset("collegemsg")]
    else:
        from engine.ingest.synthetic import generate

        n = int(float(case.removeprefix("syn")))
        frames = list(generate(n_nodes=max(1000, n // 50), n_events=n, seed=0).frames)
    gen_s = time.perf_counter() - t0
    events = sum(f.num_rows for f in frames)
    root = workdir / "store"
    t0 = time.perf_counter()
    with Store.create(root, backend) as store:
        for f in frames:
            store.ingest_events(f)
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
    log_bytes = (root / "eventlog.jsonl").stat().st_size
    t0 = time.perf_counter()
    with replay(root / "eventlog.jsonl", workdir / "replayed", backend) as r:
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


def _child(case: str, backend: str) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"tgms-bench-{case}-{backend}-"))
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", case, backend, str(work)],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])
    except subprocess.CalledProcessError as exc:
        return {"case": case, "backend": backend, "error": exc.stderr.strip().splitlines()[-1:]}
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


def machine() -> str:
    return (
        f"{platform.node()}: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"
    )


def update_docs(md: str) -> None:
    from pipeline.bench.docs import update_section

    update_section(DOCS, "store-bench", "Store: ingest, replay, size, open", md)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="collegemsg,syn1e6,syn1e7")
    ap.add_argument("--backends", default="duckdb,kuzu")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--update-docs", action="store_true")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        case, backend, work = args.child
        print(json.dumps(run_case(case, backend, Path(work))))
        return 0
    records = []
    for case in args.cases.split(","):
        for backend in args.backends.split(","):
            print(f"running {case} on {backend} ...", file=sys.stderr, flush=True)
            rec = _child(case, backend)
            print(json.dumps(rec), file=sys.stderr, flush=True)
            records.append(rec)
    md = f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}.\n\n" + table(records)
    print(md)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2) + "\n")
    if args.update_docs:
        update_docs(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
