"""A hybrid logical clock for transaction time: strictly increasing microseconds per batch.

``tt = max(wall clock, last tt + 1)``: it follows the wall clock when it can and never repeats or goes
back (a clock step backwards, or two batches within one microsecond, still give increasing ``tt``).
Replay does not consult the clock at all: it reuses every batch's recorded ``tt``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.errors import InvalidArgError
from engine.timeutil import OPEN_END


def wall_clock_us() -> int:
    return time.time_ns() // 1000


class HybridLogicalClock:
    def __init__(self, last_tt: int = 0, now: Callable[[], int] | None = None) -> None:
        self.last_tt = last_tt
        self._now = now or wall_clock_us

    def next(self) -> int:
        tt = max(int(self._now()), self.last_tt + 1)
        if tt >= OPEN_END:
            raise InvalidArgError("transaction time would reach OPEN_END", tt=tt)
        self.last_tt = tt
        return tt
