"""The stdio transport's two ends around the SDK: stdin's lines in, and the server's replies observed on
their way out, so that every complete request is answered before the server exits (issue 26, item 9).

- **stdin** (:class:`StdinLines`) is read on a daemon thread with ``os.read`` and handed to the SDK over a
  memory stream. The SDK reads stdin on an anyio worker thread that a cancellation must wait for: a stop
  signal would then hang until the client closes stdin, and a daemon thread blocked in a buffered
  ``readline`` would hold the buffer's lock while the interpreter shuts down, which aborts it.
- **a line that is not JSON** gets the JSON-RPC parse error ``{"id": null, "error": {"code": -32700}}``
  (the SDK alone logs it and answers nothing). The error goes out through the SDK's own write stream, so
  it never interleaves with a reply.
- **end of input** is passed on only once every request read so far has its reply written (or after
  :data:`DRAIN_S`): a client that writes a request and closes stdin (``echo '…' | tgms serve``) gets its
  answer, where the SDK alone would stop at end of input and drop the call in flight.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp.types as types
from mcp.shared.message import SessionMessage

log = logging.getLogger("tgms.mcp")

#: how long end of input waits for the replies still owed (a call is bounded by the cost guard anyway)
DRAIN_S = 300.0
PARSE_ERROR = -32700


def _key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


class StdinLines:
    """stdin's lines for the SDK's stdio transport (see the module docstring). ``start()`` inside the event
    loop, then ``bind(write)`` with the SDK's write stream; pass :meth:`replies` to ``Server.run``."""

    def __init__(self, fd: int = 0, drain_s: float = DRAIN_S) -> None:
        self._fd, self._drain_s = fd, drain_s
        self._send, self._recv = anyio.create_memory_object_stream[str](16)
        self._owed: set[str] = set()  # ids of requests read and not yet answered
        self._cond = threading.Condition()
        self._write: Any = None
        self._bound = anyio.Event()

    def _lines(self) -> Iterator[bytes]:
        pending = b""
        while chunk := os.read(self._fd, 1 << 16):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            yield from lines
        if pending:
            yield pending

    def _classify(self, line: str) -> str | None:
        """The parse error's detail for a line that is not JSON, else None (the id of a request is owed)."""
        try:
            message = json.loads(line)
        except ValueError as err:
            return f"not JSON: {err}"
        if isinstance(message, dict) and "method" in message and message.get("id") is not None:
            with self._cond:
                self._owed.add(_key(message["id"]))
        return None

    def start(self) -> None:
        token = anyio.lowlevel.current_token()

        def pump() -> None:
            with contextlib.suppress(Exception):  # the loop may be gone when stdin ends: nothing to tell
                try:
                    for raw in self._lines():
                        line = raw.decode("utf-8", "replace")
                        if not line.strip():
                            continue
                        problem = self._classify(line)
                        if problem is None:
                            anyio.from_thread.run(self._send.send, line, token=token)
                        else:
                            anyio.from_thread.run(self._parse_error, problem, token=token)
                    with self._cond:  # end of input: first the replies still owed
                        if not self._cond.wait_for(lambda: not self._owed, timeout=self._drain_s):
                            log.warning("stdin closed with %d request(s) unanswered after %.0f s",
                                        len(self._owed), self._drain_s)  # fmt: skip
                finally:
                    anyio.from_thread.run_sync(self._send.close, token=token)

        threading.Thread(target=pump, name="tgms-stdin", daemon=True).start()

    def bind(self, write: Any) -> None:
        """The SDK's write stream: parse errors go out through it (never interleaved with a reply)."""
        self._write = write
        self._bound.set()

    async def _parse_error(self, detail: str) -> None:
        await self._bound.wait()
        data = types.ErrorData(code=PARSE_ERROR, message="Parse error", data=detail)
        error = types.JSONRPCError(jsonrpc="2.0", id=None, error=data)
        await self._write.send(SessionMessage(error))

    def answered(self, request_id: Any) -> None:
        with self._cond:
            self._owed.discard(_key(request_id))
            self._cond.notify_all()

    def replies(self, write: Any) -> _ObservedWrite:
        """``write`` (the SDK's write stream) with every reply's id reported to :meth:`answered`."""
        return _ObservedWrite(write, self)

    def __aiter__(self) -> Any:
        return self._recv.__aiter__()


class _ObservedWrite:
    """A write stream that tells :class:`StdinLines` which requests have their reply (duck-typed like the
    SDK's send stream: send, close, aclose, clone, async context manager)."""

    def __init__(self, inner: Any, lines: StdinLines) -> None:
        self._inner, self._lines = inner, lines

    async def send(self, item: SessionMessage) -> None:
        await self._inner.send(item)
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self._lines.answered(message.id)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def clone(self) -> _ObservedWrite:
        return _ObservedWrite(self._inner.clone(), self._lines)

    async def __aenter__(self) -> _ObservedWrite:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
