"""A pool of replicas of one model: which replica takes the next request, and which are down.

Each replica has its own concurrency limit (a semaphore: a vLLM replica batches the requests it holds, a
llama.cpp server runs them one at a time) and an in-flight count. :meth:`EndpointPool.acquire` picks the
live replica with the fewest requests in flight, ties broken round-robin, and holds one of its slots.
A replica that fails with a connection error is marked down; it is health-checked again (``GET
/health``, falling back to ``GET /v1/models``) once its cool-down has passed and rejoins when it answers.
When every replica is down and none recovers, :class:`~models.errors.NoLiveReplicaError` is raised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx

from tgms.models.errors import NoLiveReplicaError

#: the health probes, tried in order: the first that answers 2xx makes a replica healthy
HEALTH_PATHS = ("/health", "/v1/models")


@dataclass
class Replica:
    """One server of the pool and its bookkeeping (guarded by the pool's lock)."""

    url: str
    slots: threading.BoundedSemaphore
    in_flight: int = 0
    down_until: float | None = None  # monotonic time; None while live
    failures: int = 0
    last_error: str | None = field(default=None)


class EndpointPool:
    """Replicas of one model, least in-flight first, dropping a failed replica until it recovers."""

    def __init__(
        self,
        urls: tuple[str, ...],
        concurrency: int,
        cooldown_s: float,
        http: httpx.Client,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._replicas = [Replica(u, threading.BoundedSemaphore(concurrency)) for u in urls]
        self._cooldown_s = cooldown_s
        self._http = http
        self._clock = clock
        self._lock = threading.Lock()
        self._next = 0  # round-robin start for ties

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple(r.url for r in self._replicas)

    def live(self) -> list[str]:
        """The URLs of the replicas not marked down."""
        with self._lock:
            return [r.url for r in self._replicas if r.down_until is None]

    def healthy(self, url: str) -> bool:
        """Probe one replica: ``/health``, then ``/v1/models``; any 2xx counts."""
        for path in HEALTH_PATHS:
            try:
                if self._http.get(url + path, timeout=5.0).is_success:
                    return True
            except httpx.HTTPError:
                continue
        return False

    def mark_down(self, url: str, reason: str) -> None:
        with self._lock:
            for r in self._replicas:
                if r.url == url:
                    r.down_until = self._clock() + self._cooldown_s
                    r.failures += 1
                    r.last_error = reason

    def _recover(self) -> None:
        """Health-check every down replica whose cool-down has passed; a healthy one rejoins."""
        now = self._clock()
        with self._lock:
            due = [r for r in self._replicas if r.down_until is not None and r.down_until <= now]
        for r in due:
            ok = self.healthy(r.url)
            with self._lock:
                r.down_until = None if ok else self._clock() + self._cooldown_s

    def _pick(self, avoid: frozenset[str]) -> Replica | None:
        with self._lock:
            live = [r for r in self._replicas if r.down_until is None]
            preferred = [r for r in live if r.url not in avoid] or live
            if not preferred:
                return None
            n = len(self._replicas)
            order = {id(r): (self._replicas.index(r) - self._next) % n for r in preferred}
            best = min(preferred, key=lambda r: (r.in_flight, order[id(r)]))
            self._next = (self._replicas.index(best) + 1) % n
            best.in_flight += 1
            return best

    @contextmanager
    def acquire(self, avoid: frozenset[str] = frozenset()) -> Iterator[str]:
        """Hold a slot on a live replica (preferring one not in ``avoid``) and yield its URL.

        The replica is chosen before waiting for its slot, so its in-flight count includes requests that
        wait for a slot there; that is what makes "least in flight" spread a burst over the replicas.
        """
        replica = self._pick(avoid)
        if replica is None:
            self._recover()
            replica = self._pick(avoid)
        if replica is None:
            with self._lock:
                details = {r.url: r.last_error for r in self._replicas}
            raise NoLiveReplicaError("every replica of the endpoint is down", replicas=details)
        try:
            with replica.slots:
                yield replica.url
        finally:
            with self._lock:
                replica.in_flight -= 1
