"""Run a function on a background thread and hand its result (or exception) to whoever waits for it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


def in_background(fn: Callable[[], Any]) -> Future[Any]:
    """Run ``fn`` on a fresh (non-daemon, so the interpreter waits for it at exit) thread."""
    fut: Future[Any] = Future()

    def run() -> None:
        try:
            fut.set_result(fn())
        except BaseException as exc:  # handed to whoever waits for the result
            fut.set_exception(exc)

    threading.Thread(target=run, name="tgms-edge-rest", daemon=False).start()
    return fut
