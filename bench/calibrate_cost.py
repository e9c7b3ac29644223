"""Cost-guard calibration (a benchmark, not a test): fit ``engine.operators.cost.COEFFICIENTS``.

For every scale a synthetic store is built once (cached under ``--work``, ``pipeline.bench.ops_bench``).
Every operator gets its typical call plus ``--calls-per-op`` varied calls, drawn deterministically from
``--seed`` (windows of 0.1% .. 100% of the span, busy / quiet / random seeds, hops, bucket counts, motifs,
deltas, limits). Per call the cost function's work terms are read without running it, then the call is
timed through ``run_call`` with the guard off: one warm-up, the median of ``--reps``.

By default (``--caches cold``) the per-operator indexes (adjacency, metric index, motif selection,
resolve index) are dropped before every timed run and only the store-wide arrays stay warm, because the
guard prices a call as if those indexes had to be built (it cannot know they are cached); one extra
cached run of calls under ``--long-call-s`` is recorded as ``warm_s``. Coefficients are fitted by
non-negative least squares on *relative* error, so a 1 ms call weighs as much as a 1 s call.

    /work/venv/bin/python bench/calibrate_cost.py --scales 1e4,1e5,1e6 --reps 3 --json /tmp/calib.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.errors import TGMSError
from engine.operators.base import parse_args
from engine.operators.context import OpContext
from engine.operators.cost import COEFFICIENTS, profile
from engine.operators.envelope import run_call
from engine.operators.evolution import ALLEN_RELATIONS
from engine.operators.metrics import METRICS
from engine.operators.motifs import MOTIF_NAMES, exact_estimate, selection
from engine.operators.registry import OPERATOR_ORDER, REGISTRY, load_all
from pipeline.bench.ops_bench import build_store, typical_calls

COST_PY = Path(__file__).resolve().parents[1] / "engine" / "operators" / "cost.py"
TERMS = tuple(COEFFICIENTS)  # design-matrix columns; "base" is the constant column
#: cache entries every call needs anyway (the profile alone loads the believed edges): kept warm
SHARED_CACHE = frozenset({"uids", "nid_index", "edges", "nodes", "known", "profile"})
FRACTIONS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
MINUTE, HOUR, DAY = 60_000_000, 3_600_000_000, 86_400_000_000
Call = tuple[str, str, dict[str, Any]]
Progress = Callable[[str], None]


# -- the calls ----------------------------------------------------------------------------------------


def varied_calls(ctx: OpContext, rng: np.random.Generator, per_op: int) -> list[Call]:
    """``per_op`` random calls per operator over this store (deterministic from ``rng``)."""
    e = ctx.edges(None)
    uids = ctx.uids()
    deg = np.bincount(np.concatenate([e.src, e.dst]), minlength=len(uids))
    order = np.argsort(-deg, kind="stable")
    active = order[deg[order] > 0]
    busy, quiet = uids[int(active[0])], uids[int(active[-1])]
    lo, hi = int(e.vt_s[0]), int(e.vt_s[-1]) + 1
    span = hi - lo

    def pick(seq: Sequence[Any]) -> Any:
        return seq[int(rng.integers(len(seq)))]

    def node() -> str:
        kind = pick(("busy", "quiet", "random"))
        return busy if kind == "busy" else quiet if kind == "quiet" else uids[int(pick(active))]

    def top(k: int) -> list[str]:
        return [uids[i] for i in active[:k].tolist()]

    def seeds() -> list[str]:
        k = pick((1, 1, 5, 20))
        if k == 1:
            return [node()]
        return [uids[i] for i in rng.choice(active, min(k, len(active)), replace=False).tolist()]

    def window(frac: float | None = None) -> dict[str, int]:
        w = max(1, int(span * (frac or pick(FRACTIONS))))
        t_a = lo + int(rng.integers(0, span - w + 1))
        return {"t_a": t_a, "t_b": t_a + w}

    def stride(w: dict[str, int], buckets: Sequence[int]) -> int:
        return -(-(w["t_b"] - w["t_a"]) // int(pick(buckets)))  # ceil: never more than the bucket count

    def motif(find: bool) -> dict[str, Any]:
        a = {"motif": pick(MOTIF_NAMES), "delta": pick((MINUTE, HOUR, DAY, 7 * DAY)), "window": window()}
        if rng.random() < 0.4:
            a["node_filter"] = top(pick((10, 100, 1000)))
        return {**a, "limit": pick((10, 100, 1000))} if find else a

    def metric() -> dict[str, Any]:
        w = window()
        return {"metric": pick(METRICS), "window": w, "stride": stride(w, (1, 10, 100, 1000, 2000))}

    def burst() -> dict[str, Any]:
        w = window(pick((0.1, 0.3, 1.0)))  # bursts need history: wide windows
        return {
            "target": pick(("global", busy, quiet)),
            "window": w,
            "stride": stride(w, (10, 100, 1000, 2000)),
            "method": pick(("zscore", "ratio")),
            "params": {"w": pick((3, 7, 30))},
        }

    def neighborhood() -> dict[str, Any]:
        w = window()
        a = {"uid": node(), "t1": w["t_a"], "t2": w["t_b"]}
        return {**a, "stride": stride(w, (10, 100, 1000))} if rng.random() < 0.6 else a

    def edge_spec() -> dict[str, Any]:
        return pick(
            (
                {"src": node()},
                {"uid": node()},
                {"uid": busy, "window": window()},
                {"rel_types": ["follows"]},
                {"rel_types": ["msg"], "window": window(pick((0.001, 0.01)))},
            )
        )

    def compute() -> dict[str, Any]:
        xs = rng.integers(0, 1000, int(pick((10, 100, 1000, 10_000, 100_000)))).tolist()
        fn = pick(("sum", "mean", "median", "count", "topk", "filter"))
        extra = {"k": 10} if fn == "topk" else {"cmp": ">", "value": 500} if fn == "filter" else {}
        return {"fn": fn, "input": xs, **extra}

    makers: dict[str, Callable[[], dict[str, Any]]] = {
        "entity_history": lambda: {
            "uid": node(),
            "include_edges": bool(rng.integers(2)),
            "limit": pick((10, 100, 1000)),
        },
        "snapshot_subgraph": lambda: {
            "seeds": seeds(),
            "t_valid": lo + int(rng.integers(span)),
            "hops": int(rng.integers(4)),
            **pick(({}, {}, {"rel_types": ["msg"]}, {"rel_types": ["follows"]})),
        },
        "diff_snapshots": lambda: {
            **dict(zip(("t1", "t2"), window().values(), strict=True)),
            **pick(({}, {"scope": {"seeds": seeds(), "hops": int(rng.integers(1, 3))}})),
        },
        "temporal_reachability": lambda: {
            "src": node(),
            "window": window(),
            "direction": pick(("out", "in", "both")),
            "delta_max_wait": pick((None, None, MINUTE, HOUR, DAY)),
        },
        "temporal_paths": lambda: {
            "src": node(),
            "dst": pick(top(50)),
            "window": window(),
            "k": pick((1, 5, 20)),
            "max_hops": pick((2, 3, 4, 6)),
        },
        "count_temporal_motifs": lambda: motif(find=False),
        "find_temporal_motif_instances": lambda: motif(find=True),
        "graph_metric_timeseries": metric,
        "burst_detection": burst,
        "neighborhood_evolution": neighborhood,
        "co_active": lambda: {
            "a_spec": edge_spec(),
            "b_spec": edge_spec(),
            "allen_relation": pick(ALLEN_RELATIONS),
        },
        "resolve_entities": lambda: {
            "query": pick((busy, quiet, busy[:2], "12", "nobody at all")),
            **pick(({}, {"label": "user"})),
        },
        "compute": compute,
    }
    out: list[Call] = []
    for op in OPERATOR_ORDER:
        seen: set[str] = set()
        for _ in range(per_op):
            args = makers[op]()
            key = json.dumps(args, sort_keys=True)
            if key not in seen:  # small stores and small choice sets repeat themselves
                seen.add(key)
                out.append((op, f"{op}/varied_{len(seen)}", args))
    return out


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


def seconds(work: dict[str, float], coefs: dict[str, float]) -> float:
    return coefs["base"] + sum(coefs[k] * v for k, v in work.items())


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
        store = build_store(work_dir / f"syn-{scale}", scale, progress)
        try:
            ctx = OpContext(store)
            calls = typical_calls(ctx) + varied_calls(ctx, np.random.default_rng([seed, scale]), per_op)
            for i, (op, case, raw) in enumerate(calls, 1):
                rec: dict[str, Any] = {"scale": scale, "op": op, "case": case, "args": _brief(raw)}
                old = float("nan")
                try:
                    rec["work"] = work_terms(ctx, op, raw)
                    old = seconds(rec["work"], COEFFICIENTS)
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
    sel = selection(ctx, a)
    est = exact_estimate(ctx, a, sel, sel.at(a.delta))
    return None if est is None else dict(est.work)


def add_rechecks(records: list[dict[str, Any]], work_dir: Path, seed: int, per_op: int) -> None:
    """Re-price the records of an earlier run with the current cost functions: their pre-call work terms
    and their run-time recheck terms (same seed and calls per op, so the same calls are drawn)."""
    load_all()
    for scale in sorted({r["scale"] for r in records}):
        store = build_store(work_dir / f"syn-{scale}", scale, lambda s: None)
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


def guarded_estimate(r: dict[str, Any], coefs: dict[str, float]) -> float:
    """What a guarded call is priced at: the larger of the pre-call and the run-time recheck estimate."""
    pre = seconds(r["work"], coefs)
    rw = r.get("recheck_work")
    return max(pre, seconds(rw, coefs)) if rw else pre


def _brief(x: Any) -> Any:
    """Args for the JSON dump: long lists (compute inputs, node filters) shortened to their length."""
    if isinstance(x, list) and len(x) > 20:
        return f"<list of {len(x)}>"
    if isinstance(x, dict):
        return {k: _brief(v) for k, v in x.items()}
    return x


# -- fitting ------------------------------------------------------------------------------------------


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """min ||a x - b|| subject to x >= 0 (Lawson–Hanson active set; scipy is not a dependency)."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * np.abs(a).sum(axis=0).max(initial=1.0) * max(m, n)
    for _ in range(max_iter or 3 * n):
        grad = a.T @ (b - a @ x)
        if passive.all() or grad[~passive].max() <= tol:
            break
        passive[int(np.argmax(np.where(passive, -np.inf, grad)))] = True
        while True:
            s = np.zeros(n)
            s[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if s[passive].min() > 0:
                break
            neg = passive & (s <= 0)
            alpha = np.min(x[neg] / (x[neg] - s[neg]))
            x = x + alpha * (s - x)
            passive &= x > tol
            x[~passive] = 0.0
            if not passive.any():
                s = np.zeros(n)
                break
        x = s
    return x


def fit_relative(work: Sequence[dict[str, float]], measured: Sequence[float]) -> dict[str, float]:
    """Coefficients minimizing Σ((estimate - measured) / measured)², all >= 0 (NNLS).

    Kept for comparison only: relative error caps an underestimate's penalty at 1 but not an
    overestimate's, so this fit shrinks coefficients until most calls are underestimated (measured: 200
    of 321 by more than 3x), which admits slow calls. :func:`fit` is what ``--write`` uses."""
    a = _design(work)
    y = np.asarray(measured, dtype=float)
    rel = a / y[:, None]
    norms = np.linalg.norm(rel, axis=0)  # work terms span 1 .. 1e9: unit columns keep lstsq conditioned
    used = norms > 0
    x = np.zeros(len(TERMS))
    x[used] = nnls(rel[:, used] / norms[used], np.ones(len(y))) / norms[used]
    return {t: float(x[i]) if used[i] else COEFFICIENTS[t] for i, t in enumerate(TERMS)}


def _design(work: Sequence[dict[str, float]]) -> np.ndarray:
    return np.array([[1.0 if t == "base" else w.get(t, 0.0) for t in TERMS] for w in work])


def fit(
    work: Sequence[dict[str, float]], measured: Sequence[float], iters: int = 200, ridge: float = 0.05
) -> dict[str, float]:
    """Coefficients minimizing Σ(log estimate - log measured)² + ridge·n·Σ(log c - log c_current)²: a 10x
    over- and a 10x underestimate cost the same, which is what a guard needs (false refusals and false
    admissions are both defects).

    The ridge keeps a term the calls barely identify near its current value instead of letting another,
    correlated term absorb it (without it ``state`` fell to 1e-26 while ``index_row`` took its share).
    Positivity by parametrizing c = exp(θ); Gauss-Newton with step halving, started from the current
    coefficients. A term no call uses keeps its current value."""
    a = _design(work)
    ly = np.log(np.asarray(measured, dtype=float))
    used = (a > 0).any(axis=0)
    theta0 = np.log(np.array([COEFFICIENTS[t] for t in TERMS]))
    lam = math.sqrt(ridge * len(ly))

    def residuals(th: np.ndarray) -> np.ndarray:
        return np.concatenate([np.log(a @ np.exp(th)) - ly, lam * (th - theta0)[used]])

    theta = theta0.copy()
    cur = float(np.sum(residuals(theta) ** 2))
    for _ in range(iters):
        c = np.exp(theta)
        est = a @ c
        jac = (a * c) / est[:, None]  # d log(est_i) / d θ_j
        jac[:, ~used] = 0.0
        jac = np.vstack([jac, lam * np.eye(len(TERMS))[used]])
        step = np.linalg.lstsq(jac, -residuals(theta), rcond=None)[0]
        t = 1.0
        while t > 1e-6:
            cand = np.clip(theta + t * step, -60.0, 5.0)  # 1e-26 .. 150 s per unit: keep exp finite
            new = float(np.sum(residuals(cand) ** 2))
            if new < cur:
                break
            t /= 2
        else:
            break
        converged = cur - new < 1e-12 * max(cur, 1.0)
        theta, cur = cand, new
        if converged:
            break
    c = np.exp(theta)
    return {t: float(c[i]) if used[i] else COEFFICIENTS[t] for i, t in enumerate(TERMS)}


def fmt_coef(v: float) -> str:
    """Two significant digits in cost.py's style: 2e-7, 1.5e-6."""
    if v == 0:
        return "0.0"
    mant, exp = f"{v:.1e}".split("e")
    return f"{mant.removesuffix('.0')}e{int(exp)}"


def rewrite_coefficients(text: str, coefs: dict[str, float]) -> str:
    """cost.py's text with the values of the COEFFICIENTS literal replaced (comments and layout kept)."""
    start = text.index("COEFFICIENTS: dict[str, float] = {")
    end = text.index("\n}", start)
    block = text[start:end]
    for k, v in coefs.items():
        pattern = rf'^(\s*"{re.escape(k)}":\s*)[^,\s]+,'
        block, n = re.subn(pattern, lambda m, v=v: f"{m.group(1)}{fmt_coef(v)},", block, flags=re.M)
        if n != 1:
            raise ValueError(f"coefficient {k!r} found {n} times in the COEFFICIENTS literal")
    return text[:start] + block + text[end:]


# -- reporting ----------------------------------------------------------------------------------------


def report(records: list[dict[str, Any]], new: dict[str, float], budget: float) -> str:
    ok = [r for r in records if "measured_s" in r]
    old = dict(COEFFICIENTS)
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scales", default="1e4,1e5,1e6", help="comma-separated event counts")
    p.add_argument("--work", type=Path, default=Path("/tmp/tgms-calib"), help="store cache directory")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calls-per-op", type=int, default=12, help="varied calls per operator and scale")
    p.add_argument("--budget", type=float, default=10.0, help="budget (s) of the guard-decision report")
    p.add_argument("--caches", choices=["cold", "warm"], default="cold", help="operator indexes per run")
    p.add_argument("--max-estimate", type=float, default=60.0, help="skip calls priced above this (s)")
    p.add_argument("--long-call-s", type=float, default=2.0, help="one timed rep past this warm-up time")
    p.add_argument("--json", type=Path, help="write every measurement here")
    p.add_argument("--write", action="store_true", help="rewrite COEFFICIENTS in engine/operators/cost.py")
    p.add_argument("--from-json", type=Path, help="refit the measurements of an earlier --json (no timing)")
    p.add_argument(
        "--add-recheck",
        action="store_true",
        help="with --from-json: re-price its calls with the current cost functions, run-time recheck "
        "included (same --seed, --calls-per-op, --work); the measured times are kept",
    )
    a = p.parse_args(argv)

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if a.from_json:
        records = json.loads(a.from_json.read_text())["records"]
        if a.add_recheck:
            add_rechecks(records, a.work, a.seed, a.calls_per_op)
    else:
        records = measure(
            [int(float(s)) for s in a.scales.split(",") if s.strip()],
            a.work,
            reps=a.reps,
            seed=a.seed,
            per_op=a.calls_per_op,
            cold=a.caches == "cold",
            max_estimate=a.max_estimate,
            long_s=a.long_call_s,
            progress=progress,
        )
    ok = [r for r in records if "measured_s" in r]
    new = fit([r["work"] for r in ok], [r["measured_s"] for r in ok]) if ok else dict(COEFFICIENTS)
    sys.stdout.write(report(records, new, a.budget))
    if a.json:
        a.json.write_text(json.dumps({"old": COEFFICIENTS, "new": new, "records": records}, indent=1) + "\n")
        progress(f"wrote {len(records)} records to {a.json}")
    if a.write:
        COST_PY.write_text(rewrite_coefficients(COST_PY.read_text(encoding="utf-8"), new), encoding="utf-8")
        progress(f"rewrote COEFFICIENTS in {COST_PY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
