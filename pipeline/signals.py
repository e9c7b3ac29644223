"""SIGTERM as an orderly stop, shared by the command line (``tgms write``, ``tgms bundle build``), the
campaign driver and the benchmarks, so none of them reaches into another's private helpers.

Inside :func:`sigterm_as_interrupt` a SIGTERM raises :class:`Terminated` (a ``KeyboardInterrupt``), so
``finally`` and ``with`` clean-ups run and the exit code is 143; an error that leaves the block after a
SIGTERM (the interrupt turned into a library's own) leaves it as :class:`Terminated` too. The handler's
exception can be lost inside a library's C code (DuckDB ran a query to its end and the exception surfaced
at interpreter exit), so long work also calls :func:`raise_lost_sigterm` between its units of work.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt (:func:`sigterm_as_interrupt`): the exit code is 143, not 130."""


#: SIGTERMs received under sigterm_as_interrupt (a library may catch the interrupt and raise a plain one)
_SIGTERM_SEEN: list[float] = []
#: the sigterm_as_interrupt blocks open now (a lost SIGTERM is raised only inside one)
_ACTIVE: list[bool] = []


def interrupted_by_sigterm(exc: BaseException) -> bool:
    """Whether an interrupt came from SIGTERM: a :class:`Terminated`, or any KeyboardInterrupt after a
    SIGTERM was received (Ray's ``get``/``wait`` re-raise their own)."""
    return isinstance(exc, Terminated) or bool(_SIGTERM_SEEN)


def sigterm_received() -> bool:
    """Whether a SIGTERM arrived inside the latest :func:`sigterm_as_interrupt` block (open or ended): an
    exception that ends a command after it may be the handler's, turned into a library's own (DuckDB raises
    ``RuntimeError: Query interrupted`` for an interrupt that lands inside a query)."""
    return bool(_SIGTERM_SEEN)


def stopped(exc: BaseException) -> bool:
    """Whether ``exc`` ends work because it was stopped (an interrupt, or any error after a SIGTERM, which
    is the handler's exception turned into a library's own): a run it ends is KILLED, not FAILED."""
    return isinstance(exc, KeyboardInterrupt) or sigterm_received()


def forget_sigterms() -> None:
    """Start a command with no SIGTERM on record (one process may run several: the tests do)."""
    _SIGTERM_SEEN.clear()


def stop_on_lost_sigterm(report: Callable[[str], None]) -> Callable[[str], None]:
    """``report`` that first raises :class:`Terminated` when a SIGTERM arrived under
    :func:`sigterm_as_interrupt` and the work went on: the handler's exception, raised while DuckDB runs a
    query, can be lost in its C code (measured: a query ran to its end and the exception surfaced only at
    interpreter exit), and a bundle build under CI load then kept building for minutes. Long work reports
    progress often, so it stops at its next line."""

    def report_or_stop(msg: str) -> None:
        raise_lost_sigterm()
        report(msg)

    return report_or_stop


def raise_lost_sigterm() -> None:
    """Raise :class:`Terminated` when a SIGTERM arrived under :func:`sigterm_as_interrupt` and the work
    went on anyway (its exception lost in a library's C code, see :func:`stop_on_lost_sigterm`): loops
    call it between units of work (a bundle build's progress lines, ``tgms write``'s batches)."""
    if _ACTIVE and _SIGTERM_SEEN:
        raise Terminated


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) inside the block, so ``finally`` and
    ``with`` clean-ups run (a temporary folder is removed, runs are ended, servers stopped) and the
    boundary reports ``E_INTERRUPTED``; the previous handler is restored after."""

    def interrupt(_signum: int, _frame: Any) -> None:
        _SIGTERM_SEEN.append(time.time())
        raise Terminated

    _SIGTERM_SEEN.clear()  # only this block's SIGTERMs count (a process may run several, tests do)
    previous = signal.signal(signal.SIGTERM, interrupt)
    _ACTIVE.append(True)
    try:
        yield
    except Exception as exc:
        # the handler's Terminated, raised inside a library, came out as the library's own error (DuckDB:
        # "RuntimeError: Query interrupted", a SIGTERM during a campaign's suite build): it is the stop
        if _SIGTERM_SEEN:
            raise Terminated from exc
        raise
    finally:
        _ACTIVE.pop()
        signal.signal(signal.SIGTERM, previous)
