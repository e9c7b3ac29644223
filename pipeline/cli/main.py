"""``tgms``: thin commands over the library, one module per command.

Every command prints human-readable output (or JSON where its help says so). Errors exit non-zero with the
structured error ``{"error", "message", "details"}`` on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

# NumPy madvises transparent huge pages for large arrays; on VMs whose memory is fragmented every such
# fault can stall in direct compaction (measured here: building the 10^7 adjacency 4.1-4.9 s with it,
# 2.9-3.1 s without; loading the believed edges 2.3 s vs 2.0 s). Off unless the user sets it; NumPy reads
# the variable when it is first imported, which is below this line.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

from tgms.engine.api import InvalidArgError, SchemaError, StoreWarning
from tgms.pipeline.boundary import exit_code, structured, write_error
from tgms.pipeline.signals import forget_sigterms, interrupted_by_sigterm, sigterm_received

# command name -> module under pipeline.cli (each defines ``add_arguments(parser)`` and ``run(args)``)
COMMANDS: dict[str, str] = {
    "ingest": "ingest",
    "write": "write",
    "replay": "replay",
    "digest": "digest",
    "stats": "stats",
    "check": "check",
    "ops": "ops",
    "schema": "schema",
    "call": "call",
    "plan": "plan",
    "verify-answer": "verify_answer",
    "tasks": "tasks",
    "quickstart": "quickstart",
    "bench": "bench",
    "mutations": "mutations",
    "systems": "systems",
    "ask": "ask",
    "trace": "trace",
    "local": "local",
    "bundle": "bundle",
    "serve": "serve",
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are the one structured error (``E_SCHEMA``; a bad value of a typed
    option ``E_INVALID_ARG``) instead of a usage line and ``SystemExit(2)``."""

    def error(self, message: str) -> NoReturn:
        cls = (
            InvalidArgError if "invalid" in message else SchemaError
        )  # "invalid choice", "invalid int value"
        raise cls(f"{self.prog}: {message}", usage=self.format_usage().strip())


#: entry point group of commands other packages add (``reports`` adds ``report``); the pipeline never
#: imports them by name, so the layering holds (``pipeline`` must not import ``reports``)
PLUGIN_GROUP = "tgms.commands"


def plugin_commands() -> dict[str, str]:
    """Command name -> module of the installed plugins (``[project.entry-points."tgms.commands"]``); a
    plugin may not replace a built-in command."""
    eps = importlib.metadata.entry_points(group=PLUGIN_GROUP)
    return {ep.name: ep.value for ep in sorted(eps, key=lambda e: e.name) if ep.name not in COMMANDS}


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="tgms", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = {name: f"tgms.pipeline.cli.{module}" for name, module in COMMANDS.items()}
    for name, module in {**modules, **plugin_commands()}.items():
        mod = importlib.import_module(module)  # plugins too: HELP, add_arguments, run
        p = sub.add_parser(name, help=mod.HELP, description=mod.__doc__)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def _show_warning(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
    print(f"tgms: warning: {message}", file=sys.stderr, flush=True)


def _interrupted(name: str) -> int:
    print(json.dumps({"error": "E_INTERRUPTED", "message": f"interrupted ({name})",
                      "details": {"signal": name}}), file=sys.stderr)  # fmt: skip
    return 143 if name == "SIGTERM" else 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure is the structured error on stderr and a non-zero exit code."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", StoreWarning)
        warnings.showwarning = _show_warning  # restored by catch_warnings
        forget_sigterms()  # only this command's SIGTERMs decide how it ended
        try:
            args = build_parser().parse_args(argv)
            return int(args._run(args) or 0)
        except BrokenPipeError:  # the reader went away (`| head`): not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            return 0
        except KeyboardInterrupt as exc:
            return _interrupted("SIGTERM" if interrupted_by_sigterm(exc) else "SIGINT")
        except Exception as exc:  # the boundary: nothing raw reaches the user (see boundary.structured)
            if sigterm_received():  # the handler's exception turned into a library's own (DuckDB's
                return _interrupted("SIGTERM")  # "Query interrupted"): the stop, not an internal error
            err = structured(exc)
            write_error(err)
            return exit_code(err)


if __name__ == "__main__":
    sys.exit(main())
