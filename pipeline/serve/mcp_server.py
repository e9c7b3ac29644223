"""The MCP binding of the engine's tool layer: the official ``mcp`` SDK (2.x) over stdio or streamable HTTP.

The engine's :class:`~engine.api.ToolServer` owns the tools (schemas generated from the operator registry,
dispatch, error mapping, store sessions); this module only speaks the protocol. It uses the SDK's
low-level :class:`mcp.server.lowlevel.Server` rather than ``MCPServer``'s decorators, because those infer
a tool's schema from a Python signature and ours must be exactly the generated ones (``tgms schema``).

A tool result carries the whole JSON result as its text content and, as ``structuredContent``, the part
the tool's ``outputSchema`` describes (an operator's payload; the SDK's client validates it). A failure is
``isError`` with the structured error ``{"error", "message", "details"}`` as both.

Calls run on worker threads (``anyio.to_thread``): operator work is synchronous numpy/DuckDB code, and on
the event loop one slow call would stall every other client. HTTP binds 127.0.0.1 only (the SDK then also
turns on its DNS-rebinding protection). SIGINT and SIGTERM stop the server cleanly.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp.types as types
import uvicorn
from mcp.server.lowlevel import Server

from tgms.engine.api import ConflictError, ToolResult, ToolServer
from tgms.pipeline.serve.stdio_lines import StdinLines

HOST = "127.0.0.1"
PATH = "/mcp"
INSTRUCTIONS = (
    "TGMS: a bi-temporal temporal-graph store. Every operator is a tool; times are int epoch microseconds "
    "(UTC) and intervals half-open [s, e). List results are paged (limit, cursor) and report rows_total "
    "and truncated. verify_plan / run_plan check and run a plan (a DAG of operator calls); verify_answer "
    "rates an answer's claims against the trace. Errors are {error, message, details}."
)


#: the tools that change the store (everything else only reads it, the same call giving the same result)
WRITE_TOOLS = frozenset({"write_batch"})


def _tool(definition: dict[str, Any]) -> types.Tool:
    """The SDK's tool from a generated definition (schemas as they are), with MCP's behaviour hints so a
    client can tell the reading tools from the writing one."""
    writes = definition["name"] in WRITE_TOOLS
    hints = types.ToolAnnotations(
        read_only_hint=not writes, destructive_hint=False, idempotent_hint=not writes, open_world_hint=False
    )
    return types.Tool.model_validate({**definition, "annotations": hints})


def _result(r: ToolResult) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=r.text())],
        structured_content=r.structured_content,
        is_error=r.is_error,
    )


def build_server(tools: ToolServer, *, version: str = "") -> Server[Any]:
    """The SDK server over ``tools``: ``tools/list`` and ``tools/call``, calls on worker threads."""
    listed = [_tool(t) for t in tools.tools()]
    # at most one worker thread per store session: calls beyond wait here, not on a blocked thread
    limiter = anyio.CapacityLimiter(tools.workers)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        r = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments, limiter=limiter)
        return _result(r)

    return Server(
        "tgms",
        version=version,
        title="TGMS temporal-graph tools",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# -- transports ------------------------------------------------------------------------------------------


async def _stop_on_signal(
    scope: anyio.CancelScope, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for _ in signals:
            scope.cancel()
            return


async def serve_stdio(server: Server[Any], ready: Callable[[], None]) -> None:
    """Serve one client over this process's stdin/stdout until stdin closes or a stop signal arrives;
    ``ready()`` once a stop signal would be handled (a signal before that would kill the process)."""
    from mcp.server.stdio import stdio_server

    stdin = StdinLines()
    stdin.start()
    async with anyio.create_task_group() as tg:
        await tg.start(_stop_on_signal, tg.cancel_scope)
        ready()
        async with stdio_server(stdin=stdin) as (read, write):  # type: ignore[arg-type]
            stdin.bind(write)  # a line that is not JSON gets its parse error through the SDK's writer
            await server.run(read, stdin.replies(write), server.create_initialization_options())
        tg.cancel_scope.cancel()


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: a free one); bound here so the URL is known up front."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConflictError(
            f"cannot listen on {HOST}:{port}: {exc.strerror or exc}", host=HOST, port=port
        ) from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}{PATH}"


async def serve_http(
    server: Server[Any], sock: socket.socket, ready: Callable[[], None], *, grace_s: int = 5
) -> None:
    """Serve streamable HTTP on ``sock`` (many clients, one session each) until a stop signal arrives;
    ``ready()`` once requests are served and a stop signal would be handled."""
    app = server.streamable_http_app(streamable_http_path=PATH, host=HOST)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=grace_s, lifespan="on")
    await _Uvicorn(config, ready).serve(sockets=[sock])


class _Uvicorn(uvicorn.Server):
    """uvicorn, stopped by SIGINT/SIGTERM without re-raising the signal afterwards: a stop signal is how a
    server is meant to end, so the process exits 0 after the graceful shutdown (uvicorn re-raises it).
    ``ready()`` runs after start-up, inside the signal handlers' scope."""

    def __init__(self, config: uvicorn.Config, ready: Callable[[], None]) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if not self.should_exit:  # start-up failed (uvicorn then stops by itself)
            self._ready()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous: dict[int, Callable[..., Any] | int | None] = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def run(main: Callable[..., Any], *args: Any) -> None:
    """Run one of the ``serve_*`` coroutines to completion on a fresh event loop."""
    anyio.run(main, *args)


def announce(message: str) -> None:
    """A status line on stderr (stdout is the protocol's in stdio mode)."""
    print(f"tgms serve: {message}", file=sys.stderr, flush=True)
