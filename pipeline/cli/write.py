"""Write batches of assert/retract/correct ops from a JSONL file: one batch per line.

A line is a JSON array of ops, or one op object (a batch of one). Batches are written in order; the
command stops at the first batch that fails (it is recorded in the event log as failed and changes
nothing) and exits non-zero with its structured error. A malformed line is refused before it is logged.
"""

from __future__ import annotations

import argparse
import json

from engine.errors import SchemaError
from engine.store import Store
from engine.store.ops import parse_batch
from pipeline.cli._common import add_store, print_json

HELP = "write batches of ops (one JSON batch per line)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_store(p)
    p.add_argument("ops_file", metavar="OPS.jsonl", help="one batch per line: a JSON array of ops, or one op")


def read_batches(path: str) -> list[list[dict]]:
    batches = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise SchemaError("line is not JSON", file=path, line=lineno, detail=str(exc)) from exc
            batch = value if isinstance(value, list) else [value]
            try:
                parse_batch(batch, where=f"line {lineno}")  # refuse the whole file before writing any
            except SchemaError as exc:
                exc.details.setdefault("file", path)
                raise
            batches.append(batch)
    if not batches:
        raise SchemaError("no batches in file", file=path)
    return batches


def run(args: argparse.Namespace) -> int:
    batches = read_batches(args.ops_file)
    results = []
    with Store.open(args.store) as store:
        for batch in batches:
            r = store.write(batch)
            results.append({"seq": r.seq, "tt": r.tt, "status": r.status, **r.stats})
    print_json({"batches": results})
    return 0
