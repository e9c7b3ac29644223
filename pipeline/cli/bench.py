"""Benchmarks (not tests), one subcommand each: ``tgms bench ops`` (operators on synthetic stores and the
task templates' calls on CollegeMsg), ``peers`` (side by side with Raphtory), ``store`` (ingest, replay,
size, open), ``cold`` (open + first query in fresh processes), ``metrics``, ``motifs``, ``traversal``
(finer operator cases), ``calibrate`` (fit the cost guard's coefficients), ``campaign`` (fan-out
throughput) and ``planner`` (a planner configuration with a model, run as a campaign).

Every benchmark prints its table to stdout and, with ``--json OUT``, writes its records. Only an explicit
``--update-docs [FILE]`` rewrites the benchmark's own section of ``docs/benchmarks.md`` (or FILE), so a run
in a checkout leaves it clean; stores are built once under ``--work`` (default ``$TGMS_CACHE/bench`` or
``~/.cache/tgms/bench``, outside the checkout).
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

from tgms.pipeline.bench import BENCHES
from tgms.pipeline.bench.report import update_section
from tgms.pipeline.console import progress
from tgms.pipeline.signals import sigterm_as_interrupt

HELP = "benchmarks: `tgms bench ops --scales 1e5,1e6,1e7`, `tgms bench peers`, store, cold, calibrate, ..."
DOCS = "docs/benchmarks.md"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for name, module in BENCHES.items():
        mod = importlib.import_module(f"tgms.pipeline.bench.{module}")
        q = sub.add_parser(
            name, help=mod.HELP, description=mod.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        mod.add_arguments(q)
        q.add_argument("--work", metavar="DIR", help="where bench stores are kept (default: cache)")
        q.add_argument("--json", metavar="OUT", help="write the measured records as JSON")
        q.add_argument(
            "--update-docs",
            nargs="?",
            const=DOCS,
            metavar="FILE",
            help=f"rewrite this benchmark's section of {DOCS} (or FILE); off unless given",
        )
        q.set_defaults(_bench=mod.main)


def run(args: argparse.Namespace) -> int:
    # SIGTERM stops a benchmark in order, as Ctrl-C does: `tgms bench planner` runs a campaign in this
    # process, and a plain SIGTERM ended it at once and left its Ray runtime's agents behind (2026-12-06)
    with sigterm_as_interrupt():
        result = args._bench(args, progress)
    print(result.markdown)
    if args.json:
        Path(args.json).write_text(json.dumps(result.data, indent=2) + "\n")
    if args.update_docs and result.section is not None and result.exit_code == 0:
        name, heading = result.section
        update_section(Path(args.update_docs), name, heading, result.markdown)
        progress(f"rewrote the {name} section of {args.update_docs}")
    return result.exit_code
