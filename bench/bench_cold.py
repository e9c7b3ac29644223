"""Cold start (a benchmark, not a test): open a store in a fresh process and time its first query.

For each operator case, ``--runs`` fresh interpreters each open the store read-only (the event log is
verified) and make one call with the guard on, as a user's first command would; the Python import time is
reported apart. Prints the median and max per case.

    python bench/bench_cold.py --store /tmp/tgms/bench/syn-10000000 [--runs 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from engine.operators.context import OpContext
from engine.operators.envelope import call
from engine.operators.registry import load_all
from engine.store import Store
load_all()
t1 = time.perf_counter()
store = Store.open(sys.argv[1], read_only=True)
t2 = time.perf_counter()
call(OpContext(store), sys.argv[2], json.loads(sys.argv[3]))
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_s": t3 - t2}))
"""

CASES = (
    "entity_history/one_node",
    "snapshot_subgraph/2hop_busy_seed",
    "diff_snapshots/global",
    "graph_metric_timeseries/100_buckets",
    "temporal_reachability/10pct_window",
)


def case_args(store_dir: Path) -> dict[str, tuple[str, dict]]:
    """The typical calls' arguments, drawn once in this process (the children only open and call)."""
    sys.path.insert(0, str(REPO))
    from engine.operators.context import OpContext
    from engine.operators.registry import load_all
    from engine.store import Store
    from pipeline.bench.ops_bench import typical_calls

    load_all()
    with Store.open(store_dir, read_only=True) as store:
        return {case: (op, args) for op, case, args in typical_calls(OpContext(store)) if case in CASES}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NUMPY_MADVISE_HUGEPAGE": "0"}
    calls = case_args(a.store)
    out = []
    for case in CASES:
        op, args = calls[case]
        runs = []
        for i in range(a.runs):
            print(f"{case} run {i + 1}/{a.runs}", file=sys.stderr, flush=True)
            res = subprocess.run(
                [sys.executable, "-c", CHILD, str(a.store), op, json.dumps(args)],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
        total = [r["open_s"] + r["first_s"] for r in runs]
        out.append(
            {
                "case": case,
                "runs": runs,
                "open_plus_first_s_median": round(statistics.median(total), 3),
                "open_plus_first_s_max": round(max(total), 3),
                "import_s_median": round(statistics.median(r["import_s"] for r in runs), 3),
            }
        )
    print("| first call (fresh process) | open s | first call s | open + first s | max | import s |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in out:
        o = statistics.median(x["open_s"] for x in r["runs"])
        f = statistics.median(x["first_s"] for x in r["runs"])
        print(f"| {r['case']} | {o:.2f} | {f:.2f} | {r['open_plus_first_s_median']:.2f} | "
              f"{r['open_plus_first_s_max']:.2f} | {r['import_s_median']:.2f} |")  # fmt: skip
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
