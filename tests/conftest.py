"""Shared fixtures: the two store backends, a store factory with a deterministic clock, shared data.

Every store test takes the ``backend`` fixture, so one suite runs on DuckDB and on Kùzu. The Kùzu
parameter is skipped only while the adapter module (or its optional ``kuzu`` driver) cannot be imported;
once ``engine/store/backends/kuzu_backend.py`` exists and imports, every store test runs on it and its
failures are real failures.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.errors import NotFoundError
from engine.store import Store
from engine.store.backends import backend_class

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"

BACKENDS = ("duckdb", "kuzu")

#: transaction times of the fake clock: T0, T0 + STEP, T0 + 2 * STEP, ... (microseconds)
CLOCK_T0 = 1_700_000_000_000_000
CLOCK_STEP = 1_000


class FakeClock:
    """A deterministic wall clock: each call returns the next tick (``start``, ``start + step``, ...)."""

    def __init__(self, start: int = CLOCK_T0, step: int = CLOCK_STEP) -> None:
        self.t = start
        self.step = step

    def __call__(self) -> int:
        now = self.t
        self.t += self.step
        return now


def _adapter_present(name: str) -> bool:
    """The adapter module exists and a driver for it is installed (then an ImportError is a bug)."""
    module = REPO_ROOT / "engine" / "store" / "backends" / f"{name}_backend.py"
    drivers = ("kuzu", "ladybug") if name == "kuzu" else (name,)
    return module.exists() and any(importlib.util.find_spec(d) is not None for d in drivers)


def _unavailable_reason(name: str) -> str | None:
    """Why ``name`` cannot be used here, or None. Only a missing module/driver is a reason to skip."""
    try:
        backend_class(name)
    except (ImportError, NotFoundError) as exc:
        # backend_class maps the ImportError of the adapter module or of its driver to E_NOT_FOUND.
        # If the module is there and its driver is installed, the import failure is a real failure.
        if _adapter_present(name):
            raise
        module = REPO_ROOT / "engine" / "store" / "backends" / f"{name}_backend.py"
        if not module.exists():
            return f"{name} backend not written yet ({module.relative_to(REPO_ROOT)} does not exist)"
        return f"{name} backend driver not installed: {exc}"
    return None


def require_backend(name: str) -> str:
    """Return ``name``, or skip the test with the reason the backend is unavailable."""
    reason = _unavailable_reason(name)
    if reason is not None:
        pytest.skip(reason)
    return name


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The storage backend under test ("duckdb" | "kuzu")."""
    return require_backend(request.param)


@pytest.fixture(params=BACKENDS)
def other_backend(request: pytest.FixtureRequest) -> str:
    """A second backend parameter, for cross-backend tests (replay A's log into B)."""
    return require_backend(request.param)


MakeStore = Callable[..., Store]


@pytest.fixture
def make_store(tmp_path: Path, backend: str) -> Iterator[MakeStore]:
    """Factory: ``make_store(name="store", backend=<fixture>, clock=None) -> Store`` under ``tmp_path``.

    Each store gets its own :class:`FakeClock` unless one is given (``store.test_clock``), so two stores
    fed the same writes get the same transaction times. Stores still open at teardown are closed.
    """
    opened: list[Store] = []

    def make(name: str = "store", *, backend: str = backend, clock: FakeClock | None = None) -> Store:
        clock = clock or FakeClock()
        store = Store.create(tmp_path / name, backend, now=clock)
        store.test_clock = clock  # type: ignore[attr-defined]
        opened.append(store)
        return store

    yield make
    for store in opened:
        with contextlib.suppress(Exception):  # some tests close (or crash) their stores themselves
            store.close()


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` next to the repository (SNAP copies); skips when the directory is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data directory not found: {SHARED_DATA}")
    return SHARED_DATA


def _scratch_base() -> str | None:
    """A tmpfs directory when there is one: tests that fsync thousands of times are IO-bound on disk,
    and durability against power loss is not something a test can observe anyway."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


@pytest.fixture
def scratch_dir() -> Iterator[Path]:
    """A fresh scratch directory, on tmpfs if available (else the system temp dir); removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="tgms-test-", dir=_scratch_base()) as d:
        yield Path(d)


@pytest.fixture
def fake_clock() -> type[FakeClock]:
    """The :class:`FakeClock` class, for tests that create or reopen stores themselves."""
    return FakeClock
