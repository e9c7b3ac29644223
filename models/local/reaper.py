"""No orphans: every live :class:`~models.local.server.LocalServer` is stopped when the process ends.

A server runs in its own session (so a terminal's Ctrl-C reaches only the parent, which then stops it in
order rather than leaving it half-killed), which also means nothing stops it when the parent dies. This
module holds the live servers and stops them all at interpreter exit (``atexit``) and on SIGINT/SIGTERM.
The signal handlers are installed while at least one server is live and the previous handlers restored
when the last one stops; after stopping the servers a handler defers to the previous one (SIGINT's
default raises ``KeyboardInterrupt``; SIGTERM's default is re-delivered, so the exit status stays
"killed by SIGTERM"). A SIGKILL of the parent cannot be caught: the server's watchdog
(:mod:`models.local.watchdog`, a small process started beside it) stops it then.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stoppable(Protocol):
    def stop(self) -> None: ...


_lock = threading.RLock()
_live: dict[int, Stoppable] = {}
_previous: dict[int, Any] = {}  # signal number -> the handler we replaced
_atexit_registered = False


def register(server: Stoppable) -> None:
    """Track a started server; the first one installs the handlers."""
    global _atexit_registered
    with _lock:
        if not _atexit_registered:
            atexit.register(stop_all)
            _atexit_registered = True
        if not _live:
            _install()
        _live[id(server)] = server


def unregister(server: Stoppable) -> None:
    """Forget a stopped server; the last one restores the previous handlers."""
    with _lock:
        _live.pop(id(server), None)
        if not _live:
            _restore()


def live_count() -> int:
    with _lock:
        return len(_live)


def stop_all() -> None:
    """Stop every live server (each ``stop`` unregisters itself)."""
    with _lock:
        servers = list(_live.values())
    for server in servers:
        with contextlib.suppress(Exception):  # one failing stop must not leave the others running
            server.stop()


def _install() -> None:
    # Python only lets the main thread set handlers; a server started elsewhere relies on atexit and on
    # the main thread's own Ctrl-C (KeyboardInterrupt unwinding through the owner's ``with``).
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        previous = signal.getsignal(signum)
        # ignored by the parent's choice (nohup): so do we; None: a handler set outside Python, kept
        if previous is signal.SIG_IGN or previous is None:
            continue
        _previous[signum] = previous
        signal.signal(signum, _on_signal)


def _restore() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in list(_previous.items()):
        if signal.getsignal(signum) is _on_signal:  # someone else replaced ours since: leave theirs alone
            signal.signal(signum, previous)
        del _previous[signum]


def _on_signal(signum: int, frame: FrameType | None) -> None:
    previous = _previous.get(signum, signal.SIG_DFL)
    stop_all()  # restores the previous handlers as the last server goes
    if callable(previous):
        handler: Callable[[int, FrameType | None], Any] = previous
        handler(signum, frame)  # SIGINT's default_int_handler raises KeyboardInterrupt here
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # die of the signal, as without us
