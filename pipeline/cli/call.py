"""Call one operator on a store (opened read-only) and print its result envelope as JSON:
``{op, args_echo, dataset_extent, payload, result_digest}``. Bad arguments, unknown operators and cost
refusals exit non-zero with the structured error ``{error, message, details}`` on stderr."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tgms.engine.api import OpContext, SchemaError, call, canonical_json_of_canonical, get_operator
from tgms.pipeline.cli._common import add_store, read_store
from tgms.pipeline.console import print_json
from tgms.pipeline.inputs import add_seconds, parse_json

HELP = "call an operator: `tgms call OP 'JSON-ARGS' --store DIR` (result envelope as JSON)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("op", metavar="OP", help="operator name (see `tgms ops`)")
    p.add_argument(
        "json_args", metavar="JSON-ARGS", nargs="?", default="{}", help="arguments as a JSON object"
    )
    add_store(p)
    add_seconds(p, "--budget-s", metavar="S", help="cost budget in seconds (>= 0)")
    p.add_argument("--compact", action="store_true", help="print canonical one-line JSON")


def parse_json_args(text: str) -> Any:
    value = parse_json(text, "JSON-ARGS", field="args")
    if not isinstance(value, dict):
        raise SchemaError("JSON-ARGS must be a JSON object", field="args", got=type(value).__name__)
    return value


def run(args: argparse.Namespace) -> int:
    get_operator(args.op)  # an unknown operator is E_NOT_FOUND before the store is opened
    raw = parse_json_args(args.json_args)
    with read_store(args) as store:
        envelope = call(OpContext(store), args.op, raw, budget_s=args.budget_s)
    if args.compact:
        sys.stdout.write(canonical_json_of_canonical(envelope) + "\n")
    else:
        print_json(envelope)
    return 0
