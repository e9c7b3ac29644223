"""Shared fixtures: the store backends, a store factory with a deterministic clock, shared data.

Every store test takes the ``backend`` fixture (parametrized over :data:`engine.store.backends.BACKENDS`,
the one list of backends), so one suite runs on DuckDB and on Kùzu. A backend parameter is skipped only
while the backend's optional driver package is not installed; any other import failure of an adapter is a
real failure.

A test that a backend does not implement yet says so with a marker instead of branching on the name::

    @pytest.mark.notimpl("kuzu", reason="...")          # or notimpl(["kuzu", ...], reason=..., raises=...)
    def test_something(backend): ...

On the named backends the test is expected to fail (strict ``xfail``: once it passes, the marker must go).
The marker applies to any test parametrized by ``backend`` (the fixture or ``@pytest.mark.parametrize``).
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import os
import random
import secrets
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tgms.engine.errors import NotFoundError
from tgms.engine.store import Store
from tgms.engine.store.backends import BACKENDS, backend_class

REPO_ROOT = Path(__file__).resolve().parents[1]
# one torch thread per test process (a user's own setting wins): the suite runs three workers on two cores,
# and a two-thread embedding's threads then wait on each other while spinning (measured beside two busy
# processes, 2026-12-07: the worked-plan retrieval tests 68 → 49 s); the campaign driver sets the same
# for a model server that shares the machine (pipeline.systems.embeddings.limit_threads)
os.environ.setdefault("TGMS_EMBED_THREADS", "1")
#: the shared test data beside the repository; ``TGMS_SHARED_DATA=DIR`` points elsewhere (a missing
#: directory runs the data tests as a clone without ``../shared`` does: CollegeMsg from the package)
SHARED_DATA = Path(os.environ.get("TGMS_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data").resolve()


def signal_point(name: str, lo: int, hi: int) -> tuple[int, random.Random]:
    """A random point in ``[lo, hi]`` at which a test sends its signal (a count of committed batches,
    progress lines, records), so that over CI runs every phase of the work is interrupted, and the seeded
    generator it came from (for any further draw, e.g. a delay). Printed with its seed: a failing test's
    captured output names it, and ``TGMS_SIGNAL_SEED=<seed>`` replays that run."""
    seed = int(os.environ.get("TGMS_SIGNAL_SEED") or secrets.randbelow(2**32))
    rng = random.Random(f"{seed}:{name}")
    point = rng.randint(lo, hi)
    print(f"{name}: the signal goes at point {point} of [{lo}, {hi}] (TGMS_SIGNAL_SEED={seed})")
    return point, rng


def collegemsg_file() -> Path:
    """CollegeMsg as SNAP ships it: ``../shared/data/CollegeMsg.txt`` when there is one, else the gzipped
    copy the package ships (the same content; every loader here reads either), so a test of real data never
    skips for want of ``../shared``."""
    from tgms.engine.ingest.snap import packaged_collegemsg

    source = SHARED_DATA / "CollegeMsg.txt"
    return source if source.is_file() else packaged_collegemsg()


def collegemsg_head(root: Path, events: int) -> Path:
    """``root/CollegeMsg.head.txt``: the first ``events`` lines of CollegeMsg (real data, small enough for
    a test), written once: from the shared copy when there is one, else from the copy the package ships
    (the same content; ``engine.ingest.snap.packaged_collegemsg``), so the test never skips for want of
    ``../shared``."""
    head = Path(root) / "CollegeMsg.head.txt"
    if not head.exists():
        path = collegemsg_file()
        with (
            gzip.open(path, "rt", encoding="utf-8")
            if path.suffix == ".gz"
            else path.open(encoding="utf-8") as f,
            head.open("w", encoding="utf-8") as out,
        ):
            for i, line in enumerate(f):
                if i >= events:
                    break
                out.write(line)
    return head


__all__ = ["BACKENDS", "FakeClock", "MakeStore", "require_backend"]

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


def _missing_driver(exc: BaseException) -> str | None:
    """The package whose absence caused ``exc`` (an adapter's ImportError) when it is not installed at all;
    None when the cause is anything else (a bug in the adapter, a broken or mismatched driver)."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ImportError):
        cause = cause.__cause__
    top = (getattr(cause, "name", None) or "").split(".")[0]
    return top if top and importlib.util.find_spec(top) is None else None


def _unavailable_reason(name: str) -> str | None:
    """Why ``name`` cannot be used here, or None. Only a missing driver package is a reason to skip."""
    try:
        backend_class(name)
    except NotFoundError as exc:
        # backend_class maps the ImportError of an adapter (or of its driver) to E_NOT_FOUND; only the
        # driver's absence is an installation matter, anything else is a bug in the adapter
        driver = _missing_driver(exc)
        if driver is None:
            raise
        return f"{name} backend: its driver package {driver!r} is not installed ({exc.message})"
    return None


def require_backend(name: str) -> str:
    """Return ``name``, or skip the test with the reason the backend is unavailable."""
    reason = _unavailable_reason(name)
    if reason is not None:
        pytest.skip(reason)
    return name


def _notimpl_backends(marker: pytest.Mark) -> tuple[str, ...]:
    names = marker.args[0] if marker.args else marker.kwargs.get("backends", ())
    names = (names,) if isinstance(names, str) else tuple(names)
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise pytest.UsageError(f"notimpl names unknown backend(s) {unknown}; known: {list(BACKENDS)}")
    return names


#: the test files whose tests take tens of seconds each (real campaigns, SLURM jobs, suite builds, the type
#: check): run first, so that under ``-n 2`` none of them starts last and leaves the other worker idle
#: while it finishes (the suite's last minute ran at half the CPU on a 2-core VM, 2026-12-07)
HEAVY_FIRST = (
    "tests/pipeline/campaign/",
    "tests/slurm/",
    "tests/reports/test_mlflow_server.py",
    "tests/pipeline/tasks/test_suites.py",
    "tests/pipeline/tasks/test_speculative_checks.py",
    "tests/pipeline/bench/test_planner_bench.py",
    "tests/pipeline/mutations/",
    "tests/test_style.py",
)


def _heavy_rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return next((i for i, prefix in enumerate(HEAVY_FIRST) if path.startswith(prefix)), len(HEAVY_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Turn ``notimpl(backends)`` into a strict xfail on the items parametrized with those backends, and
    put the heavy test files first (a stable sort: the order within each group is collection order)."""
    items.sort(key=_heavy_rank)
    for item in items:
        backend = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
        for marker in item.iter_markers("notimpl"):
            if backend in _notimpl_backends(marker):
                reason = marker.kwargs.get("reason", "not implemented")
                raises = marker.kwargs.get("raises")
                item.add_marker(pytest.mark.xfail(reason=f"{backend}: {reason}", raises=raises, strict=True))


@pytest.fixture(scope="session", autouse=True)
def shared_bundle_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One bundle cache (``TGMS_BUNDLE_CACHE``, ``conf/config.yaml`` ``run.bundle_cache``) for every campaign
    the tests start, shared by the xdist workers (the parent of their base temp directories): the small
    CollegeMsg bundle is built once or twice per session instead of once per campaign test. Each campaign
    still verifies the copy it takes (:mod:`pipeline.campaign.bundle_cache`)."""
    if "TGMS_BUNDLE_CACHE" in os.environ:
        yield
        return
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if base.name.startswith("popen-gw") else base) / "bundle-cache"
    os.environ["TGMS_BUNDLE_CACHE"] = str(root)
    yield
    os.environ.pop("TGMS_BUNDLE_CACHE", None)


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
