"""SIGTERM as an orderly stop (pipeline/signals.py): an error a library makes of the handler's interrupt
leaves the block as the stop, and only after a SIGTERM.

CI caught the case (2026-12-07, TGMS_SIGNAL_SEED=576030730): a campaign signalled during its suite build
ended as ``E_INTERNAL: RuntimeError: Query interrupted`` (exit 70), DuckDB's error for an interrupt that
landed inside a query, where it should stop in order (exit 143, runs KILLED)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tgms.pipeline.signals import Terminated, sigterm_as_interrupt, stopped


def _query_interrupted_by_sigterm() -> None:
    """What DuckDB does with the handler's exception raised inside a query: its own RuntimeError."""
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises Terminated here
    except Terminated:
        raise RuntimeError("Query interrupted") from None


def test_a_library_error_after_a_sigterm_leaves_the_block_as_the_stop() -> None:
    with pytest.raises(Terminated) as err, sigterm_as_interrupt():
        _query_interrupted_by_sigterm()
    assert isinstance(err.value.__cause__, RuntimeError)
    assert stopped(RuntimeError("Query interrupted"))  # a run it ends is KILLED


def test_without_a_sigterm_an_error_stays_itself() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(ValueError), sigterm_as_interrupt():
        raise ValueError("not a stop")
    assert not stopped(ValueError("not a stop")) and stopped(KeyboardInterrupt())
    assert signal.getsignal(signal.SIGTERM) is before  # the previous handler is back
