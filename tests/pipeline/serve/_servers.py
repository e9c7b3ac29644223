"""Real ``tgms serve`` processes for the MCP tests, and the SDK clients that talk to them.

A server runs as ``python -m tgms.pipeline.cli.main serve ...`` from the repository root (so this checkout's
code is imported), over stdio (the SDK's ``stdio_client`` starts it) or streamable HTTP on a free port
(the URL is read from the server's first stderr line; the rest of stderr is collected for assertions).
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import REPO_ROOT

SERVE = [sys.executable, "-m", "tgms.pipeline.cli.main", "serve"]
#: a week of CollegeMsg from its first event (epoch microseconds)
T0 = 1_082_040_961_000_000
WEEK = 7 * 86_400 * 1_000_000


def stdio_params(store: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--store", str(store), *extra], cwd=str(REPO_ROOT)
    )


@dataclass
class HttpServer:
    proc: subprocess.Popen[str]
    url: str
    stderr: list[str] = field(default_factory=list)

    def client(self) -> Client:
        return Client(self.url)


@contextlib.contextmanager
def http_server(store: Path, *extra: str, timeout_s: float = 60) -> Iterator[HttpServer]:
    """A server on 127.0.0.1 (a free port); stopped with SIGTERM afterwards, which must exit 0."""
    proc = subprocess.Popen(
        [*SERVE, "--store", str(store), "--http", "0", *extra],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", first)
        assert m, f"no URL announced: {first!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        server = HttpServer(proc, m.group(1), [first])
        drain = threading.Thread(target=lambda: server.stderr.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
        drain.start()
        yield server
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=timeout_s) == 0, "".join(server.stderr)
        drain.join(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def schema_fields(tool: Any) -> dict[str, Any]:
    """A listed tool's definition as `tgms schema` prints it (the server adds MCP's behaviour hints)."""
    d = tool.model_dump(by_alias=True, exclude_none=True)
    return {k: d[k] for k in ("name", "description", "inputSchema", "outputSchema") if k in d}


def envelope(result: Any) -> dict[str, Any]:
    """The JSON text content of a tool result (the whole envelope, or the structured error)."""
    assert len(result.content) == 1 and result.content[0].type == "text", result
    return json.loads(result.content[0].text)


def reach_args(src: str, days: int = 7, limit: int = 100) -> dict[str, Any]:
    return {"src": src, "window": {"t_a": T0, "t_b": T0 + days * 86_400 * 1_000_000}, "limit": limit}
