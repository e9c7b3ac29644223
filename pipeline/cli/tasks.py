"""Task suites: ``tgms tasks generate --store DIR --dataset NAME --seed S --out suite.json`` draws every
template, computes and cross-checks the gold, adds the correction probes and writes the suite (canonical
JSON); ``tgms tasks stats suite.json`` prints the paper's Table 2 for it.

Probes write their corrections into the store (through the write API, so they are in its event log) the
first time; a store whose log already holds them (a replay) is only read, so the same log and seed give
the same file byte for byte."""

from __future__ import annotations

import argparse
import sys
import time

from pipeline.cli._common import add_store, print_json, progress
from pipeline.cli.plan import read_json

HELP = "task suites: `tgms tasks generate --store DIR --dataset NAME --seed S --out F`, `tgms tasks stats F`"
DATASETS = ("collegemsg", "bitcoin-otc", "email-eu", "synthetic")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="tasks_command", required=True, metavar="generate|stats")
    g = sub.add_parser("generate", help="generate a suite file")
    add_store(g)
    g.add_argument("--dataset", required=True, choices=DATASETS)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True, metavar="suite.json")
    g.add_argument("--no-probes", action="store_true", help="no correction probes (the store is not written)")
    g.add_argument("--no-crosscheck", action="store_true", help="skip the brute-force oracle cross-check")
    s = sub.add_parser("stats", help="Table 2 of a suite")
    s.add_argument("suite", metavar="suite.json")
    s.add_argument("--json", action="store_true", help="print the statistics as JSON")


def run(args: argparse.Namespace) -> int:
    from pipeline.tasks.stats import suite_stats, table2_markdown

    if args.tasks_command == "stats":
        suite = read_json(args.suite, "suite")
        if args.json:
            print_json(suite_stats(suite))
        else:
            sys.stdout.write(table2_markdown(suite))
        return 0
    return _generate(args)


def _generate(args: argparse.Namespace) -> int:
    from pipeline.tasks.build import build_suite, write_suite
    from pipeline.tasks.stats import table2_markdown

    t0 = time.perf_counter()
    progress(f"generating the {args.dataset} suite (seed {args.seed}) ...")
    suite = build_suite(
        args.store,
        args.dataset,
        args.seed,
        probes=not args.no_probes,
        crosscheck=not args.no_crosscheck,
        progress=progress,
    )
    write_suite(suite, args.out)
    progress(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")
    sys.stdout.write(table2_markdown(suite))
    return 0
