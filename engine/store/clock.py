"""A hybrid logical clock for transaction time: strictly increasing microseconds per batch.

``tt = max(wall clock, last tt + 1)``: it follows the wall clock when it can and never repeats or goes
back (a clock step backwards, or two batches within one microsecond, still give increasing ``tt``).
Replay does not consult the clock at all: it reuses every batch's recorded ``tt``.

Built stores (a data set load, a suite's probe corrections) use the :class:`CanonicalClock` instead:
``tt = max(CANONICAL_BASE, last tt + CANONICAL_STEP)``, a function of the log alone, so the same data
set, seed and options give the same event-log bytes, store digest and suite on every machine and at any
time (DESIGN §3.3). The base, 2025-01-01T00:00:00Z, lies before any wall-clock write made since, so a
user's later wall-clock batch on a built store still gets a larger ``tt``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, Protocol

from tgms.engine.errors import InvalidArgError
from tgms.engine.timeutil import OPEN_END


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


#: the canonical clock's first transaction time: 2025-01-01T00:00:00Z in microseconds
CANONICAL_BASE = 1_735_689_600_000_000
#: one second between canonical batches (a probe's "as recorded at" time then reads as a whole second)
CANONICAL_STEP = 1_000_000

ClockKind = Literal["wall", "canonical"]
CLOCK_KINDS: tuple[str, ...] = ("wall", "canonical")


class Clock(Protocol):
    last_tt: int

    def next(self) -> int: ...


class CanonicalClock:
    """Deterministic transaction time for built stores: the fixed base, then one step per batch."""

    def __init__(self, last_tt: int = 0) -> None:
        self.last_tt = last_tt

    def next(self) -> int:
        tt = max(CANONICAL_BASE, self.last_tt + CANONICAL_STEP)
        if tt >= OPEN_END:
            raise InvalidArgError("transaction time would reach OPEN_END", tt=tt)
        self.last_tt = tt
        return tt


def make_clock(kind: str, last_tt: int, now: Callable[[], int] | None = None) -> Clock:
    """The clock of a write session: ``wall`` (the hybrid logical clock, ``now`` its time source) or
    ``canonical``."""
    if kind == "canonical":
        return CanonicalClock(last_tt)
    if kind == "wall":
        return HybridLogicalClock(last_tt, now)
    raise InvalidArgError(f"unknown clock {kind!r}", clock=kind, allowed=list(CLOCK_KINDS))
