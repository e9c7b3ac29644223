"""engine/execute/background.py: large work runs on a worker thread and gives what it gives inline; small
work runs in place; a failure surfaces when the result is asked for."""

from __future__ import annotations

import hashlib
import threading

import pytest

from tgms.engine.execute import background


def _where() -> tuple[int, str]:
    return threading.get_ident(), hashlib.sha256(b"x" * 3_000_000).hexdigest()


def test_large_work_runs_on_a_worker_thread_and_small_work_in_place() -> None:
    here = threading.get_ident()
    ident, text = background.later(_where, background.LARGE)()
    assert ident != here and text == hashlib.sha256(b"x" * 3_000_000).hexdigest()
    ident, _ = background.later(_where, background.LARGE - 1)()
    assert ident == here


def test_a_failure_is_raised_when_the_result_is_asked_for() -> None:
    def fails() -> str:
        raise OSError("disk full")

    result = background.later(fails, background.LARGE)  # submitted: nothing raised yet
    with pytest.raises(OSError, match="disk full"):
        result()
    with pytest.raises(OSError, match="disk full"):  # in place: raised at once
        background.later(fails, 0)
