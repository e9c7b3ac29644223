"""Plans: ``tgms plan verify PLAN.json --store DIR [--task-uids a,b]`` prints every violation as JSON and
exits 1 when the plan is invalid; ``tgms plan run PLAN.json --store DIR`` verifies it, runs it and prints
``{verification, trace, answer}`` as JSON (the answer is the mechanical one the trace determines).

Results (each step's envelope and resolved arguments) are kept by digest under ``--results`` (default
``DIR/results``), where ``tgms verify-answer`` finds them; ``--embed`` also puts them into the trace. A
read-only store is run all the same: its results then go to a cache directory of their own
(``$TGMS_CACHE`` or ``~/.cache/tgms``, ``results/<hash of the store path>``; named on stderr), where
``tgms verify-answer`` looks for them too.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tgms.engine.api import CHECKS, OpContext, Store, VerifierConfig, verify_plan
from tgms.pipeline.cli._common import add_results, add_store, read_store, results_dir
from tgms.pipeline.console import print_json
from tgms.pipeline.inputs import add_seconds, read_json

HELP = "plans: `tgms plan verify PLAN.json --store DIR`, `tgms plan run PLAN.json --store DIR`"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("plan", metavar="PLAN.json", help="the plan")
    add_store(p)
    p.add_argument(
        "--task-uids",
        default=None,
        metavar="A,B",
        help="uids given in the task input (default: the store uids mentioned in the plan's question)",
    )
    p.add_argument(
        "--without",
        action="append",
        default=[],
        choices=CHECKS,
        metavar="CHECK",
        help=f"switch a verifier check off (ablations); one of {', '.join(CHECKS)}; repeatable",
    )
    add_seconds(p, "--budget-s", metavar="S", help="cost budget per call in seconds (>= 0)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="plan_command", required=True, metavar="verify|run")
    v = sub.add_parser("verify", help="static verification: violations as JSON, exit 1 when invalid")
    _common(v)
    r = sub.add_parser("run", help="verify, execute, and print {verification, trace, answer} as JSON")
    _common(r)
    add_results(r, "result store (default STORE/results; for a read-only store, a per-store cache directory)")
    r.add_argument("--no-verify", action="store_true", help="run even if static verification fails")
    r.add_argument("--no-taint", action="store_true", help="do not propagate truncation taint (ablation)")
    add_seconds(r, "--plan-wall-s", metavar="S", help="wall budget of the plan")
    r.add_argument("--embed", action="store_true", help="embed envelopes and resolved args in the trace")
    r.add_argument("--no-store-digest", action="store_true", help="do not compute the store digest")


def verifier_config(args: argparse.Namespace) -> VerifierConfig:
    kw: dict[str, Any] = {}
    if args.task_uids is not None:
        kw["task_uids"] = frozenset(u for u in args.task_uids.split(",") if u)
    if args.budget_s is not None:
        kw["budget_s"] = args.budget_s
    return VerifierConfig.without(*args.without, **kw)


def run(args: argparse.Namespace) -> int:
    raw = read_json(args.plan, "plan")
    with read_store(args) as store:
        ctx = OpContext(store)
        report = verify_plan(raw, ctx, verifier_config(args))
        if args.plan_command == "verify":
            print_json(report.to_dict())
            return 0 if report.valid else 1
        if not report.valid and not args.no_verify:
            print_json({"verification": report.to_dict(), "trace": None, "answer": None})
            return 1
        return _run(args, raw, store, ctx, report.to_dict())


def _run(
    args: argparse.Namespace, raw: Any, store: Store, ctx: OpContext, verification: dict[str, Any]
) -> int:
    from tgms.engine.api import ExecConfig, ResultStore, build_plan, execute, mechanical_answer

    plan = build_plan(raw)
    kw: dict[str, Any] = {"taint": not args.no_taint}
    if args.budget_s is not None:
        kw["budget_s"] = args.budget_s
    if args.plan_wall_s is not None:
        kw["plan_wall_s"] = args.plan_wall_s
    results = ResultStore(args.results or results_dir(args.store, write=True))
    digest = None if args.no_store_digest else store.digest()
    trace = execute(plan, ctx, results, ExecConfig(**kw), store_digest=digest)
    out = {
        "verification": verification,
        "trace": trace.to_dict(envelopes=args.embed),
        "answer": mechanical_answer(trace),
    }
    print_json(out)
    sys.stdout.flush()
    return 0 if trace.status == "ok" else 1
