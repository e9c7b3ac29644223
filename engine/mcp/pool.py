"""Store handles for concurrent tool calls: one open store per call in flight, reused, never shared.

Operator calls are synchronous numpy/DuckDB work and a server runs them on worker threads. A DuckDB
connection serves one thread at a time and an :class:`~engine.operators.context.OpContext` caches derived
arrays without locks, so each call checks out a :class:`Session` of its own (a read-only store and its
context), and gives it back when it is done; sessions are opened on demand up to ``size`` and kept, so
their caches survive from call to call. A call beyond ``size`` waits for a session to come back.

Writes (only when the server allows them) take the store exclusively: calls in flight finish, the idle
read-only sessions are closed (DuckDB refuses a read-write open of a file this process holds read-only),
the store is opened for writing, one batch is written, and the store is closed again. Readers open fresh
sessions afterwards, so no cache outlives the state it was built on. Writers are preferred: a waiting
write holds new calls back, so a steady stream of reads cannot starve it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tgms.engine.errors import ConflictError, TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.store.store import Store


class ReadWriteLock:
    """Many readers or one writer; a waiting writer holds back new readers."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._writer and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                self._cond.wait_for(lambda: not self._writer and not self._readers)
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


@dataclass
class Session:
    """One read-only open of the store and the operator context over it (one thread at a time)."""

    store: Store
    ctx: OpContext = field(init=False)

    def __post_init__(self) -> None:
        self.ctx = OpContext(self.store)


class StorePool:
    """Read-only sessions on one store directory, checked out one per call (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str], *, size: int = 8) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one session")
        self.root = Path(root)
        self.size = size
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[Session] = []
        self._mutex = threading.Lock()
        self._rw = ReadWriteLock()
        self._digests: dict[str, str] = {}  # store state token -> store digest
        self._closed = False
        # One session now: a store that does not open is refused when the server starts, not at its
        # first call (and a read-only open's warnings about the log are shown then).
        self._idle.append(Session(Store.open(self.root, read_only=True)))

    @contextlib.contextmanager
    def reader(self) -> Iterator[Session]:
        """A session for one call on this thread; returned to the pool afterwards."""
        with self._slots, self._rw.shared():
            session = self._checkout()
            broken = False
            try:
                yield session
            except TGMSError:
                raise  # a refusal or a bad argument: the session is as good as before
            except BaseException:
                broken = True  # a driver fault may leave the connection unusable: do not reuse it
                raise
            finally:
                self._checkin(session, broken)

    @contextlib.contextmanager
    def writer(self) -> Iterator[Store]:
        """The store opened for writing, with every read-only session closed (exclusive)."""
        with self._rw.exclusive():
            self._close_idle()
            with self._mutex:
                self._digests.clear()
            store = Store.open(self.root)
            try:
                yield store
            finally:
                store.close()

    def store_digest(self, session: Session) -> str:
        """The digest of the store state ``session`` sees, computed once per state (a full scan)."""
        token = session.store.state_token()
        with self._mutex:
            known = self._digests.get(token)
        if known is None:
            known = session.store.digest()
            with self._mutex:
                self._digests[token] = known
        return known

    def close(self) -> None:
        """Close every idle session; later calls are refused (calls in flight finish first)."""
        with self._rw.exclusive():
            self._closed = True
            self._close_idle()

    # -- internals ------------------------------------------------------------------------------------
    def _checkout(self) -> Session:
        with self._mutex:
            if self._closed:
                raise ConflictError("the server is shutting down", path=str(self.root))
            if self._idle:
                return self._idle.pop()
        return Session(Store.open(self.root, read_only=True))

    def _checkin(self, session: Session, broken: bool) -> None:
        if broken:
            with contextlib.suppress(Exception):
                session.store.close()
            return
        with self._mutex:
            self._idle.append(session)

    def _close_idle(self) -> None:
        with self._mutex:
            idle, self._idle = self._idle, []
        for session in idle:
            session.store.close()
