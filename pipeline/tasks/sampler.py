"""Sampling template parameters from a store, deterministically in a seed.

A :class:`Sampler` gives the templates entities (busy ones, ordinary active ones), times and windows that
lie inside the data, and renders times the way questions show them: readable UTC and exact microseconds,
``2004-05-01T12:00:00Z (1083412800000000 µs)``. Every choice comes from one ``numpy`` generator, so a
seed fixes the whole suite.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any

import numpy as np

from tgms.engine.api import OpContext, call, us_to_iso

SECOND = 1_000_000
MINUTE = 60 * SECOND
HOUR = 3600 * SECOND
DAY = 24 * HOUR
WEEK = 7 * DAY
MONTH = 30 * DAY
REFERENCE_EVENTS_PER_DAY = 310  # CollegeMsg: 59,835 events over 193 days


def fmt_time(t: int) -> str:
    return f"{us_to_iso(t)} ({t} µs)"


def window_words(w: dict[str, int], start: str = "t_a", end: str = "t_b") -> dict[str, str]:
    """A window's two ends as the paraphrase fields ``start`` and ``end``, rendered by :func:`fmt_time`."""
    return {start: fmt_time(w["t_a"]), end: fmt_time(w["t_b"])}


def fmt_duration(d: int) -> str:
    for unit, size in (("week", WEEK), ("day", DAY), ("hour", HOUR), ("minute", 60 * SECOND)):
        if d % size == 0:
            n = d // size
            return f"{n} {unit}{'s' if n != 1 else ''} ({d} µs)"
    return f"{d} µs"


class Sampler:
    def __init__(
        self, ctx: OpContext, dataset: str, rng: np.random.Generator, manifest: dict[str, Any] | None = None
    ) -> None:
        self.ctx = ctx
        self.dataset = dataset
        self.rng = rng
        self.manifest = manifest or {}

    # -- the data
    @cached_property
    def _edges(self) -> Any:
        return self.ctx.edges(None)

    @cached_property
    def lo(self) -> int:
        return int(self._edges.vt_s[0])

    @cached_property
    def hi(self) -> int:
        """One past the last event start."""
        return int(self._edges.vt_s[-1]) + 1

    @cached_property
    def lasting_types(self) -> list[str]:
        """The relationship types most of whose versions last (``vt_e > vt_s + 1``: not instantaneous
        events), sorted."""
        e = self._edges
        types = e.column("rel_type").to_numpy(zero_copy_only=False)
        lasting = Counter(types[e.vt_e > e.vt_s + 1].tolist())
        every = Counter(types.tolist())
        return sorted(t for t, n in lasting.items() if 2 * n > every[t])

    @cached_property
    def _deg(self) -> np.ndarray:
        return self.ctx.degrees(None)

    @cached_property
    def active(self) -> np.ndarray:
        return np.flatnonzero(self._deg)

    @cached_property
    def busy(self) -> np.ndarray:
        """The top 5 % of nodes by endpoint count (at least 20)."""
        order = np.argsort(-self._deg, kind="stable")
        return order[: max(20, len(self.active) // 20)]

    def uid(self, nid: int) -> str:
        return self.ctx.uids()[int(nid)]

    def busy_uid(self) -> str:
        return self.uid(self.rng.choice(self.busy))

    def active_uid(self) -> str:
        return self.uid(self.rng.choice(self.active))

    def some_uids(self, n: int, pool: str = "active") -> list[str]:
        src = self.busy if pool == "busy" else self.active
        pick = self.rng.choice(src, size=min(n, len(src)), replace=False)
        return sorted(self.uid(i) for i in pick)

    # -- time
    def day_start(self, t: int) -> int:
        return t - (t % DAY)

    def time(self, margin: int = 0) -> int:
        """A whole second inside the data, ``margin`` away from both ends."""
        lo, hi = self.lo + margin, self.hi - margin
        if hi <= lo:
            lo, hi = self.lo, self.hi
        if hi // SECOND <= lo // SECOND:  # the data spans less than a whole second: its first event
            return self.lo
        return int(self.rng.integers(lo // SECOND, hi // SECOND)) * SECOND

    def event_time(self) -> int:
        """The start of a random event (busy periods are drawn as often as they are busy)."""
        return int(self._edges.vt_s[int(self.rng.integers(0, self._edges.n))])

    @cached_property
    def stretch(self) -> int:
        """How many times longer than on CollegeMsg a window must be here to hold as many events (>= 1):
        template lengths are written for CollegeMsg's ~310 events a day; bitcoin-otc has ~19."""
        per_day = self._edges.n / max((self.hi - self.lo) / DAY, 1.0)
        return max(1, round(REFERENCE_EVENTS_PER_DAY / per_day))

    def span(self, length: int) -> int:
        """A template duration scaled to this dataset's event density (see :attr:`stretch`)."""
        return length * self.stretch

    def window(self, length: int, *, aligned: bool = True) -> dict[str, int]:
        """A window of ``length`` (scaled by :attr:`stretch`) around a random event, aligned to midnight
        UTC, inside the data."""
        length = self.span(length)
        t = self.event_time()
        t_a = self.day_start(t) if aligned else t - length // 2
        t_a = max(min(t_a, self.hi - length), self.day_start(self.lo))
        return {"t_a": t_a, "t_b": t_a + length}

    def reachable(self, src: str, window: dict[str, int]) -> list[str]:
        env = call(
            self.ctx,
            "temporal_reachability",
            {"src": src, "window": window, "limit": 10_000},
            check_cost=False,
        )
        return [r["uid"] for r in env["payload"]["rows"]]

    def choice(self, items: list[Any]) -> Any:
        return items[int(self.rng.integers(0, len(items)))]
