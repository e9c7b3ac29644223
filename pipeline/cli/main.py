"""``tgms``: thin commands over the library, one module per command.

Every command prints human-readable output (or JSON where its help says so). Errors exit non-zero with the
structured error ``{"error", "message", "details"}`` on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

# NumPy madvises transparent huge pages for large arrays; on VMs whose memory is fragmented every such
# fault can stall in direct compaction (measured here: building the 10^7 adjacency 4.1-4.9 s with it,
# 2.9-3.1 s without; loading the believed edges 2.3 s vs 2.0 s). Off unless the user sets it; NumPy reads
# the variable when it is first imported, which is below this line.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

from engine.errors import TGMSError

# command name -> module under pipeline.cli (each defines ``add_arguments(parser)`` and ``run(args)``)
COMMANDS: dict[str, str] = {
    "ingest": "ingest",
    "write": "write",
    "replay": "replay",
    "digest": "digest",
    "stats": "stats",
    "ops": "ops",
    "schema": "schema",
    "call": "call",
    "plan": "plan",
    "verify-answer": "verify_answer",
    "tasks": "tasks",
    "quickstart": "quickstart",
    "bench": "bench",
    "mutations": "mutations",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tgms", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = importlib.import_module(f"pipeline.cli.{module}")
        p = sub.add_parser(name, help=mod.HELP, description=mod.__doc__)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except TGMSError as exc:
        print(exc.to_json(), file=sys.stderr)
        return 2 if exc.code in ("E_SCHEMA", "E_INVALID_ARG", "E_NOT_FOUND") else 1
    except BrokenPipeError:  # the reader went away (`| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except KeyboardInterrupt:
        print('{"error": "E_INTERRUPTED", "message": "interrupted", "details": {}}', file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
