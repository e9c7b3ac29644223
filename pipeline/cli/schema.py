"""Print the artifacts generated from the operator registry: the MCP tool definitions
``[{name, description, inputSchema, outputSchema}]`` as JSON (default), the args/output JSON Schemas of
every operator (``--schemas``), or the planner's manual as text (``--manual``)."""

from __future__ import annotations

import argparse
import sys

from tgms.engine.api import operator_schemas, planner_manual, schema_json, tool_definitions

HELP = "generated tool definitions (JSON); --schemas / --manual for the other artifacts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument("--schemas", action="store_true", help="args and output JSON Schemas per operator")
    what.add_argument("--manual", action="store_true", help="the planner's manual (text)")


def run(args: argparse.Namespace) -> int:
    if args.manual:
        sys.stdout.write(planner_manual())
    elif args.schemas:
        sys.stdout.write(schema_json(operator_schemas()))
    else:
        sys.stdout.write(schema_json(tool_definitions()))
    return 0
