"""SHA-256 digests of a step's large texts, taken while the step goes on.

A step that reads a whole result holds one large text in three objects it digests: the read itself, its
resolved arguments and its envelope (~17 MB each for 10^6 event times, ~9 ms a SHA-256 on the 2-core
VM). hashlib releases the GIL while it hashes a large buffer, so the executor takes the read's digest and
the arguments' on worker threads while the step's call runs, and waits for them before the step's record
is complete (:meth:`engine.execute.executor.Executor._run_step`). The bytes hashed are the same either
way; only when the digest is taken moves. Work under :data:`LARGE` bytes is done in place: handing it to a
thread costs more than doing it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

#: the fewest bytes whose hashing goes to a worker thread
LARGE = 1 << 20
#: worker threads (the read's digest and the arguments' run beside the step's call)
WORKERS = 2

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the parent's worker threads are not there; a pool is started when one is asked."""
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def later(work: Callable[[], T], size: int) -> Callable[[], T]:
    """A function giving ``work()``'s result (or raising its exception): run on a worker thread when
    ``size``, the bytes it hashes, is at least :data:`LARGE`, else run now."""
    if size < LARGE:
        value = work()
        return lambda: value
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="tgms-digest")
        future = _pool.submit(work)
    return future.result
