"""Speculative cross-checks: the oracles run in worker processes while a suite is generated.

The brute-force oracles take nine tenths of a suite's generation (CollegeMsg: ~29 of 32 s on one core),
and a draw's cross-check can only drop it, which in a correct engine never happens. So
:class:`SpeculativeCheck` answers "agrees" at once, sends the check to a process pool, and, once
generation is done, :meth:`SpeculativeCheck.disagreements` waits for every answer. If one disagreed (or
a worker failed), the caller generates again with every check in line (:func:`generate_suite`): the
decisions taken on the speculation are then replaced by the exact ones, so the suite is always the one
the serial path makes, and a fast suite costs one pass.

Workers are spawned (not forked: the parent holds a DuckDB connection and its threads) and load the
oracle store, pickled once to a temporary file, in their initializer. Not in the initializer's arguments:
those travel in the bytes the parent writes to a starting worker's pipe, and a worker that dies before
reading them (a script without an ``if __name__ == "__main__"`` guard re-runs itself in the child, which
then may not start processes) left the parent blocked on that write for ever with a store of megabytes.
A path fits the pipe: the worker's death breaks the pool and the suite is generated in line. Workers
ignore SIGINT: the parent stops them in order on Ctrl-C, the ``with`` block ends them on every exit, and a
worker whose parent was SIGKILLed ends itself.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import tempfile
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Any

from tgms.engine.api import OracleStore

_STORE: OracleStore | None = None  # the worker's oracle store, set by its initializer
PARENT_POLL_S = 0.5


def _init_worker(store_file: str, parent: int) -> None:
    global _STORE
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # watch first, with the pid the parent gave: a parent SIGKILLed while this worker was still starting
    # (loading the store) is then noticed too, where os.getppid() read now would name its new parent
    threading.Thread(target=_exit_with, args=(parent, store_file), name="parent-watch", daemon=True).start()
    with open(store_file, "rb") as fh:
        _STORE = pickle.load(fh)


def _exit_with(parent: int, store_file: str) -> None:
    # a SIGKILLed parent runs no clean-up and its pool would wait on the call queue for ever: a worker
    # re-parented (its parent gone) ends itself, and removes the store file the parent cannot
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    with contextlib.suppress(OSError):  # another worker was first
        os.unlink(store_file)
    os._exit(0)


def _check_in_worker(plan: dict[str, Any], kind: str, gold: Any) -> bool:
    from tgms.pipeline.tasks.crosscheck import oracle_agrees

    assert _STORE is not None, "worker not initialised"
    return oracle_agrees(_STORE, plan, kind, gold)


def usable_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_workers() -> int:
    """Cross-check processes for a suite build: every usable core, at most 4 (the oracles' share of the
    work does not feed more), 1 inside a daemonic process (which may not start children)."""
    if multiprocessing.current_process().daemon:
        return 1
    return max(1, min(4, usable_cores()))


class SpeculativeCheck:
    """A :data:`~pipeline.tasks.crosscheck.GoldCheck` that says yes now and asks the oracles in a pool."""

    def __init__(self, ostore: OracleStore, workers: int) -> None:
        fd, self._store_file = tempfile.mkstemp(prefix="tgms-oracle-", suffix=".pickle")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(ostore, fh, protocol=pickle.HIGHEST_PROTOCOL)
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self._store_file, os.getpid()),
        )
        self._pending: list[tuple[str, Future[bool]]] = []

    def __call__(self, plan: dict[str, Any], kind: str, gold: Any) -> bool:
        try:
            fut = self._pool.submit(_check_in_worker, plan, kind, gold)
        except BrokenProcessPool as exc:  # a worker died: the check fails, so the suite is made in line
            fut = Future()
            fut.set_exception(exc)
        self._pending.append((str(plan.get("plan_id")), fut))
        return True

    def disagreements(self) -> list[str]:
        """Waits for every check; the plan ids whose oracles disagreed or whose check failed (with why)."""
        bad = []
        for plan_id, fut in self._pending:
            try:
                if not fut.result():
                    bad.append(plan_id)
            except Exception as exc:  # a worker died or the oracle raised: the in-line pass will say
                bad.append(f"{plan_id} ({type(exc).__name__}: {exc})")
        return bad

    def __enter__(self) -> SpeculativeCheck:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        # on an error or Ctrl-C the queued checks are dropped and the running ones end within a check
        try:
            self._pool.shutdown(wait=True, cancel_futures=et is not None)
        finally:
            os.unlink(self._store_file)
