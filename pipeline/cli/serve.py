"""Serve the store's tools over MCP: ``tgms serve --store DIR [--http PORT] [--allow-writes]``.

Every operator is a tool (its schema is the one ``tgms schema`` prints, its description the operator's
manual entry), plus ``verify_plan``, ``run_plan`` and ``verify_answer``; ``write_batch`` only with
``--allow-writes``, each write logged in the store's event log like any other (and an audit line on
stderr). By default the server speaks stdio (one client: the process that started it); ``--http PORT``
serves streamable HTTP at ``http://127.0.0.1:PORT/mcp`` instead (many clients; ``0`` picks a free port;
the URL is printed on stderr). Calls run concurrently, each on a store session of its own, under the cost
guard (``--budget-s``). Ctrl-C or SIGTERM stops the server. Needs the ``mcp`` extra. See docs/mcp.md.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import sys
from types import ModuleType

from tgms.engine.api import NotFoundError, ResultStore, ToolServer
from tgms.pipeline.cli._common import add_results, add_store, results_dir
from tgms.pipeline.inputs import add_seconds, add_whole

HELP = "MCP tool server: `tgms serve --store DIR [--http PORT] [--allow-writes]` (stdio by default)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_store(p)
    add_whole(
        p,
        "--http",
        0,
        65535,
        default=None,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1:PORT (0: a free port) instead of stdio",
    )
    p.add_argument(
        "--allow-writes", action="store_true", help="offer the write tool (read-only without this flag)"
    )
    add_seconds(p, "--budget-s", metavar="S", help="cost budget per operator call in seconds (>= 0)")
    add_whole(
        p, "--workers", 1, 64, default=8, metavar="N", help="calls served at once (default 8; more wait)"
    )
    add_results(p, "where run_plan keeps step results (default STORE/results, as `tgms plan run`)")


def import_binding() -> ModuleType:
    """:mod:`pipeline.serve.mcp_server`, or ``E_NOT_FOUND`` naming the extra that installs the SDK."""
    try:
        from tgms.pipeline.serve import mcp_server
    except ImportError as exc:
        raise NotFoundError(
            "tgms serve needs the MCP SDK, which is not installed: pip install -e '.[mcp]'",
            package="mcp",
            extra="mcp",
            missing=str(exc),
        ) from exc
    return mcp_server


def _log_to_stderr() -> None:
    """Audit lines of the tool layer (every write) on stderr, which no transport uses for protocol."""
    logger = logging.getLogger("tgms.mcp")
    if any(getattr(h, "_tgms_serve", False) for h in logger.handlers):
        return  # once per process (the command may run more than once in one, e.g. in tests)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("tgms serve: %(message)s"))
    handler._tgms_serve = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def run(args: argparse.Namespace) -> int:
    binding = import_binding()
    _log_to_stderr()
    tools = ToolServer(  # opens the store now: a missing or damaged store fails before anything listens
        args.store, allow_writes=args.allow_writes, budget_s=args.budget_s, workers=args.workers
    )
    # where run_plan keeps results: chosen once the store is known to exist (the default may create it)
    tools.results = ResultStore(args.results or results_dir(args.store, write=True))
    sock = None
    try:
        server = binding.build_server(tools, version=importlib.metadata.version("tgms"))
        what = f"({'read-write' if args.allow_writes else 'read-only'}, {len(tools.tools())} tools)"
        if args.http is None:
            ready = f"MCP over stdio, store {args.store} {what}"
            binding.run(binding.serve_stdio, server, lambda: binding.announce(ready))
        else:
            sock = binding.bind(args.http)
            ready = f"MCP over streamable HTTP at {binding.url_of(sock)}, store {args.store} {what}"
            binding.run(binding.serve_http, server, sock, lambda: binding.announce(ready))
        binding.announce("stopped")
    finally:
        if sock is not None:
            sock.close()
        tools.close()
    return 0
