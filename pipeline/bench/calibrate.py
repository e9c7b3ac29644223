"""``tgms bench calibrate``: fit ``engine.operators.cost.COEFFICIENTS`` to measured time (a benchmark).

On the bench store of every scale (:mod:`pipeline.latency.stores`), every operator gets its typical call
plus ``--calls-per-op`` varied calls (:mod:`pipeline.bench.calibrate_calls`), drawn deterministically from
``--seed``. Per call the cost function's work terms are read without running it, then the call is timed
through ``run_call`` with the guard off: one warm-up, the median of ``--reps``.

By default (``--caches cold``) the per-operator indexes (adjacency, metric index, motif selection,
resolve index) are dropped before every timed run and only the store-wide arrays stay warm, because the
guard prices a call as if those indexes had to be built (it cannot know they are cached); one extra
cached run of calls under ``--long-call-s`` is recorded as ``warm_s``. The fit is in
:mod:`pipeline.bench.calibrate_fit`. ``--write FILE`` saves the fitted coefficients as a cost model of this
machine (JSON) that ``TGMS_COST_MODEL=FILE`` puts in force, installed code untouched; only
``--write-source``, in a git checkout, rewrites the shipped model, ``engine/operators/cost_model.json``.

    tgms bench calibrate --scales 1e4,1e5,1e6 --reps 3 --json /tmp/calib.json [--write FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tgms.engine.api import (
    COST_COEFFICIENTS,
    OPERATOR_ORDER,
    REGISTRY,
    InvalidArgError,
    OpContext,
    TGMSError,
    load_all,
    motif_exact_estimate,
    motif_selection,
    parse_args,
    profile,
    run_call,
    write_atomic,
)
from tgms.pipeline import inputs
from tgms.pipeline.bench.calibrate_calls import varied_calls
from tgms.pipeline.bench.calibrate_fit import (
    SHIPPED_MODEL,
    TERMS,
    cost_model_text,
    fit,
    fmt_coef,
    guarded_estimate,
    seconds,
)
from tgms.pipeline.bench.report import BenchResult
from tgms.pipeline.latency.operators import typical_calls
from tgms.pipeline.latency.stores import bench_store, default_work_dir, parse_scales

HELP = "fit the cost guard's coefficients to measured operator times (--write FILE saves them)"
#: cache entries every call needs anyway (the profile alone loads the believed edges): kept warm
SHARED_CACHE = frozenset({"uids", "nid_index", "edges", "nodes", "known", "profile"})
Progress = Callable[[str], None]


# -- measuring ----------------------------------------------------------------------------------------


def work_terms(ctx: OpContext, op: str, raw: dict[str, Any]) -> dict[str, float]:
    """The cost function's work terms, exactly as ``run_call`` prices the call (nothing is run)."""
    spec = REGISTRY[op]
    args = parse_args(spec.args, raw, op)
    work = spec.cost(profile(ctx, getattr(args, "as_of_tt", None)), args).work
    unknown = set(work) - (set(TERMS) - {"base"})
    if unknown:
        raise ValueError(f"{op}: work terms {sorted(unknown)} have no coefficient")
    return {k: float(v) for k, v in work.items()}


def drop_derived(ctx: OpContext) -> None:
    ctx.drop_cached(keep=lambda key: key[0] in SHARED_CACHE)


def time_call(
    ctx: OpContext, op: str, raw: dict[str, Any], reps: int, cold: bool, long_s: float
) -> dict[str, float]:
    def once(evict: bool) -> float:
        if evict:
            drop_derived(ctx)
        t0 = time.perf_counter()
        run_call(ctx, op, raw, check_cost=False)  # parse + run + page + digest: what a caller waits for
        return time.perf_counter() - t0

    first = once(cold)  # warm-up: page cache, lazy imports, store-wide arrays
    n = 1 if first > long_s else reps  # long calls are stable; more reps would only cost minutes
    out = {"first_s": first, "measured_s": statistics.median([once(cold) for _ in range(n)])}
    if cold and first <= long_s:  # the cached time is for the record only: not worth another long run
        out["warm_s"] = once(False)
    return out


def measure(
    scales: Sequence[int],
    work_dir: Path,
    *,
    reps: int = 3,
    seed: int = 0,
    per_op: int = 12,
    cold: bool = True,
    max_estimate: float = 60.0,
    long_s: float = 2.0,
    progress: Progress = lambda s: None,
) -> list[dict[str, Any]]:
    load_all()
    records: list[dict[str, Any]] = []
    for scale in scales:
        store = bench_store(work_dir, scale, progress)
        try:
            ctx = OpContext(store)
            calls = typical_calls(ctx) + varied_calls(ctx, np.random.default_rng([seed, scale]), per_op)
            for i, (op, case, raw) in enumerate(calls, 1):
                rec: dict[str, Any] = {"scale": scale, "op": op, "case": case, "args": _brief(raw)}
                old = float("nan")
                try:
                    rec["work"] = work_terms(ctx, op, raw)
                    old = seconds(rec["work"], COST_COEFFICIENTS)
                    if old > max_estimate:  # the guard is off: a mispriced giant could run for an hour
                        rec["skipped"] = f"old estimate {old:.1f} s > --max-estimate {max_estimate:g} s"
                    else:
                        rec["recheck_work"] = recheck_terms(ctx, op, raw)
                        rec.update(time_call(ctx, op, raw, reps, cold, long_s))
                except TGMSError as exc:
                    rec["error"] = exc.code
                    rec["message"] = exc.message[:200]
                got = f"{rec['measured_s']:.4f} s" if "measured_s" in rec else rec.get("error", "skipped")
                progress(f"{scale:>10,} {i:>4}/{len(calls)} {case:<45} est {old:9.4f} s  measured {got}")
                records.append(rec)
        finally:
            store.close()
    return records


def recheck_terms(ctx: OpContext, op: str, raw: dict[str, Any]) -> dict[str, float] | None:
    """The work terms of the run-time recheck a guarded call would make (motif wedge counts), or None."""
    if op not in ("count_temporal_motifs", "find_temporal_motif_instances"):
        return None
    a = parse_args(REGISTRY[op].args, raw, op)
    sel = motif_selection(ctx, a)
    est = motif_exact_estimate(ctx, a, sel, sel.at(a.delta))
    return None if est is None else dict(est.work)


def add_rechecks(records: list[dict[str, Any]], work_dir: Path, seed: int, per_op: int) -> None:
    """Re-price the records of an earlier run with the current cost functions: their pre-call work terms
    and their run-time recheck terms (same seed and calls per op, so the same calls are drawn)."""
    load_all()
    for scale in sorted({r["scale"] for r in records}):
        store = bench_store(work_dir, scale, lambda s: None)
        try:
            ctx = OpContext(store)
            calls = typical_calls(ctx) + varied_calls(ctx, np.random.default_rng([seed, scale]), per_op)
            by_case = {case: (op, raw) for op, case, raw in calls}
            for r in records:
                if r["scale"] == scale and "measured_s" in r:
                    op, raw = by_case[r["case"]]
                    r["work"] = work_terms(ctx, op, raw)  # priced by the current cost functions
                    r["recheck_work"] = recheck_terms(ctx, op, raw)
                    ctx.drop_cached(keep=lambda k: k[0] in SHARED_CACHE)
        finally:
            store.close()


def _brief(x: Any) -> Any:
    """Args for the JSON dump: long lists (compute inputs, node filters) shortened to their length."""
    if isinstance(x, list) and len(x) > 20:
        return f"<list of {len(x)}>"
    if isinstance(x, dict):
        return {k: _brief(v) for k, v in x.items()}
    return x


# -- reporting ----------------------------------------------------------------------------------------


def report(records: list[dict[str, Any]], new: dict[str, float], budget: float) -> str:
    ok = [r for r in records if "measured_s" in r]
    old = dict(COST_COEFFICIENTS)
    lines = ["## Coefficients (s per unit)", "", "| term | old | new | new/old |", "|---|---:|---:|---:|"]
    for t in TERMS:
        ratio = f"{new[t] / old[t]:.2f}" if old[t] else ""
        lines.append(f"| {t} | {fmt_coef(old[t])} | {fmt_coef(new[t])} | {ratio} |")
    lines += [
        "",
        f"## Estimate / measured per operator ({len(ok)} timed calls of {len(records)})",
        "",
        "| operator | timed | err/skip | old min | old median | old max | new min | new median | new max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for op in OPERATOR_ORDER:
        rs = [r for r in ok if r["op"] == op]
        bad = sum(1 for r in records if r["op"] == op and "measured_s" not in r)
        cells = []
        for coefs in (old, new):
            q = [seconds(r["work"], coefs) / r["measured_s"] for r in rs]
            cells += [f"{f(q):.3g}" if q else "" for f in (min, statistics.median, max)]
        lines.append(f"| {op} | {len(rs)} | {bad} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Guard decisions (refusal: estimate > budget but measured <= budget; admission: the reverse)",
        "",
        "| budget s | measured > budget | old false refusals | old false admissions | "
        "new false refusals | new false admissions | with recheck: false refusals | false admissions |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for b in sorted({0.01, 0.1, 1.0, budget}):
        over = sum(r["measured_s"] > b for r in ok)
        cells = []
        for coefs in (old, new):
            est = [(seconds(r["work"], coefs), r["measured_s"]) for r in ok]
            cells += [str(sum(e > b >= m for e, m in est)), str(sum(m > b >= e for e, m in est))]
        guarded = [(guarded_estimate(r, old), r["measured_s"]) for r in ok]
        cells += [str(sum(e > b >= m for e, m in guarded)), str(sum(m > b >= e for e, m in guarded))]
        lines.append(f"| {b:g} | {over} | " + " | ".join(cells) + " |")
    wrong = [
        (r, guarded_estimate(r, old))
        for r in ok
        if (guarded_estimate(r, old) > budget) != (r["measured_s"] > budget)
    ]
    lines += [
        "",
        f"## False decisions at the budget of {budget:g} s (shipped coefficients, with the run-time recheck)",
        "",
    ]
    lines += [
        f"- {'refused' if est > budget else 'admitted'}: {r['case']} @ {r['scale']:,}: estimate {est:.2f} s, "
        f"measured {r['measured_s']:.2f} s"
        for r, est in wrong
    ] or ["- none"]
    worst = sorted(ok, key=lambda r: seconds(r["work"], new) / r["measured_s"])[:5]
    lines += ["", "## Worst underestimates (new coefficients)", ""]
    lines += [
        f"- {r['case']} @ {r['scale']:,}: estimate {seconds(r['work'], new):.4f} s, "
        f"measured {r['measured_s']:.4f} s, args {json.dumps(r['args'])[:160]}"
        for r in worst
    ]
    failed = [r for r in records if "measured_s" not in r]
    if failed:
        lines += ["", "## Not timed", ""]
        lines += [f"- {r['case']} @ {r['scale']:,}: {r.get('error') or r['skipped']}" for r in failed]
    return "\n".join(lines) + "\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scales", default="1e4,1e5,1e6", help="comma-separated event counts")
    inputs.add_whole(p, "--reps", 1, 1000, default=3)
    inputs.add_whole(p, "--seed", 0, 2**32 - 1, default=0)
    inputs.add_whole(p, "--calls-per-op", 1, 10_000, default=12, help="varied calls per operator and scale")
    inputs.add_seconds(p, "--budget", default=10.0, help="budget (s) of the guard-decision report")
    p.add_argument("--caches", choices=["cold", "warm"], default="cold", help="operator indexes per run")
    inputs.add_seconds(p, "--max-estimate", default=60.0, help="skip calls priced above this (s)")
    inputs.add_seconds(p, "--long-call-s", default=2.0, help="one timed rep past this warm-up time")
    p.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help="save the fitted coefficients as this machine's cost model (JSON; TGMS_COST_MODEL=FILE uses it)",
    )
    p.add_argument(
        "--write-source",
        action="store_true",
        help="maintainers, in a git checkout: rewrite the shipped engine/operators/cost_model.json",
    )
    p.add_argument("--from-json", type=Path, help="refit the measurements of an earlier --json (no timing)")
    p.add_argument(
        "--add-recheck",
        action="store_true",
        help="with --from-json: re-price its calls with the current cost functions, run-time recheck "
        "included (same --seed, --calls-per-op, --work); the measured times are kept",
    )


def main(args: argparse.Namespace, progress: Progress) -> BenchResult:
    work = Path(args.work or default_work_dir())
    if args.from_json:
        records = json.loads(args.from_json.read_text())["records"]
        if args.add_recheck:
            add_rechecks(records, work, args.seed, args.calls_per_op)
    else:
        records = measure(
            [int(s) for s in parse_scales(args.scales)],
            work,
            reps=args.reps,
            seed=args.seed,
            per_op=args.calls_per_op,
            cold=args.caches == "cold",
            max_estimate=args.max_estimate,
            long_s=args.long_call_s,
            progress=progress,
        )
    ok = [r for r in records if "measured_s" in r]
    new = fit([r["work"] for r in ok], [r["measured_s"] for r in ok]) if ok else dict(COST_COEFFICIENTS)
    md = report(records, new, args.budget)
    if args.write_source:
        if not (SHIPPED_MODEL.parents[2] / ".git").exists():
            raise InvalidArgError(
                f"--write-source rewrites {SHIPPED_MODEL}, which is not in a git checkout (an installed "
                "copy); use --write FILE and TGMS_COST_MODEL=FILE",
                field="--write-source",
            )
        write_atomic(SHIPPED_MODEL, cost_model_text(new, rounded=True).encode())
        progress(f"rewrote the shipped cost model {SHIPPED_MODEL}")
    if args.write is not None:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.write, cost_model_text(new).encode())
        progress(f"wrote the cost model {args.write}: export TGMS_COST_MODEL={args.write} to use it")
    data = {"old": COST_COEFFICIENTS, "new": new, "records": records}
    # no docs section: the calibration's section of docs/benchmarks.md is prose written from the report
    return BenchResult(data, md.rstrip("\n"))
