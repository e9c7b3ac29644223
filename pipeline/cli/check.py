"""Check a store against its event log: ``tgms check --store DIR [--repair] [--json]``.

Reports the state (``in sync``; ``repairable``: a pending batch, logged and acknowledged but without its
outcome, and/or a torn tail, the bytes of an append a crash cut short; ``damaged``: the log is damaged
before its tail, or the database holds a batch the log does not, or lacks a committed one), the log's
counts, the last batch the database applied and the store digest. ``--repair`` completes a pending batch
(applying it if the database has not, then appending only its outcome record) and trims a torn tail; it
never adds a batch, so the repaired store's digest equals a replay of its log. Exit status: 0 when the
store is (now) in sync, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

from tgms.engine.api import check_store
from tgms.pipeline.cli._common import add_store
from tgms.pipeline.console import print_json

HELP = "check a store against its event log; --repair completes a pending batch, trims a torn tail"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_store(p)
    p.add_argument("--repair", action="store_true", help="complete a pending batch and trim a torn tail")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    report = check_store(args.store, repair=args.repair)
    if args.json:
        print_json(report.to_dict())
    else:
        sys.stdout.write(report.text())
    return 0 if report.state == "in_sync" else 1
