"""``TaskActor``: a Ray actor that proves its store before it answers a single task.

The bundle's event log reaches the actor through Ray's object store (the constructor gets the bytes of an
``ObjectRef`` from ``ray.put``), so no shared filesystem is assumed: the actor writes the log into its own
scratch directory, replays it into its own DuckDB store and computes the digest. Only if the digest equals
``manifest.store_digest`` does it serve; otherwise every call raises one structured
:class:`~engine.api.CorruptError` (``E_CORRUPT``) naming the suite, the expected and found digest and where
the actor runs, so the driver can say which actor refused and why. A log that does not even replay is the
same refusal, with the replay's error as the reason.

Tasks run on the actor's threads (``max_concurrency``): a model call is I/O-bound, so one actor holds many
tasks in flight. A system is built once per (system, config, settings) key and reused by every later task
of its cell (building means an index, a Kùzu graph, a dataset card); its model client is the endpoint
asking with the cell's :class:`~models.config.GenerationConfig` (:func:`~models.config.with_generation`),
so the sampling seed is part of every request (and of its cache key). :meth:`TaskActor.run` never
raises for a task: a task that fails in a way that is neither the model's fault nor a scored outcome
comes back as an ``infra_error`` record (unscored, rerun on resume).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tgms.engine.api import CorruptError, TGMSError, replay
from tgms.models.client import ChatClient
from tgms.models.config import with_generation
from tgms.models.errors import InfraError
from tgms.pipeline.campaign.bundle import Manifest
from tgms.pipeline.campaign.cells import Cell
from tgms.pipeline.campaign.endpoints import endpoint_from_dict
from tgms.pipeline.campaign.ray_runtime import import_ray
from tgms.pipeline.campaign.records import TaskResult
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import BuiltSystem, RunSettings, SystemEnv, build_system, run_draft
from tgms.pipeline.systems.record import TaskRecord


class TaskActor:
    """The actor's body: plain Python (unit-testable without Ray); :func:`task_actor_class` is the Ray actor
    class made from it."""

    def __init__(
        self,
        suite: str,
        eventlog: bytes,
        manifest: Manifest,
        endpoint: dict[str, Any],
        work_dir: str | None = None,
        train: list[Task] | None = None,
    ) -> None:
        t0 = time.perf_counter()
        self.suite = suite
        self.train = list(train or [])  # the suite's train split only (worked plans; never dev or test)
        self.manifest = manifest
        self.endpoint = endpoint_from_dict(endpoint)
        self.node = socket.gethostname()
        # Ray's id of the node: hosts can run several raylets (tests, a fat SLURM node), so the hostname
        # alone does not say where an actor runs
        self.node_id = _ray_node_id()
        self.pid = os.getpid()
        base = Path(work_dir) if work_dir else None
        if base is not None:
            try:
                base.mkdir(parents=True, exist_ok=True)
            except OSError:  # the driver's path need not exist (or be writable) on another node
                base = None
        # the replayed store is this actor's own; system caches (embeddings, Kùzu graphs keyed by digest)
        # are shared by the actors of a node under work_dir/systems
        where = scratch_base(len(eventlog), base)
        sweep_stale(where)
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{self.pid}-{suite}-", dir=where))
        atexit.register(shutil.rmtree, self.scratch, True)
        self.systems_dir = (base / "systems") if base is not None else self.scratch / "systems"
        self.store_dir = self.scratch / "store"
        self.expected = manifest.store_digest
        self.refusal: CorruptError | None = None
        self.digest: str | None = None
        try:
            log = self.scratch / "eventlog.jsonl"
            log.write_bytes(eventlog)
            with replay(log, self.store_dir, "duckdb") as store:
                self.digest = store.digest()
            log.unlink()  # replay keeps its own copy inside the store
        except TGMSError as err:
            self.refusal = self._refuse(
                f"its event log does not replay: {err.message}", replay_error=err.to_dict()
            )
        if self.refusal is None and self.digest != self.expected:
            self.refusal = self._refuse("the replayed store's digest differs from the manifest's")
        self.seconds = round(time.perf_counter() - t0, 4)
        self._systems: dict[str, BuiltSystem] = {}
        self._build_locks: dict[str, threading.Lock] = {}
        self._broken: dict[str, TGMSError] = {}
        self._lock = threading.Lock()

    def _refuse(self, why: str, **more: Any) -> CorruptError:
        return CorruptError(
            f"actor for suite {self.suite!r} refuses to serve: {why} "
            f"(expected {self.expected}, found {self.digest})",
            suite=self.suite,
            expected=self.expected,
            found=self.digest,
            reason=why,
            node=self.node,
            pid=self.pid,
            **more,
        )

    def _check(self) -> None:
        if self.refusal is not None:
            raise self.refusal

    def ready(self) -> dict[str, Any]:
        """The proof: ``{"suite", "digest", "seconds", "node", "node_id", "pid"}`` (``E_CORRUPT`` if
        refused)."""
        self._check()
        return {
            "suite": self.suite,
            "digest": self.digest,
            "seconds": self.seconds,
            "node": self.node,
            "node_id": self.node_id,
            "pid": self.pid,
        }

    def prepare(self, cell: Cell, system_config: dict[str, Any], settings: RunSettings) -> dict[str, Any]:
        """Build the cell's system now (its index, embeddings, Kùzu graph), before its first task, so a
        long one-off build runs while other cells' tasks keep the model busy. ``{"ok", "seconds"}``; a
        failed build is not raised here: the cell's tasks report it, unscored, as they would anyway."""
        self._check()
        t0 = time.perf_counter()
        try:
            self._system(cell, system_config, settings)
        except Exception:
            return {"ok": False, "seconds": round(time.perf_counter() - t0, 4)}
        return {"ok": True, "seconds": round(time.perf_counter() - t0, 4)}

    def run(
        self,
        task: Task,
        cell: Cell,
        system_config: dict[str, Any],
        settings: RunSettings,
    ) -> TaskResult:
        """One task of one cell: its record, and its trace when the system ran a plan."""
        self._check()
        try:
            built = self._system(cell, system_config, settings)
        except Exception as err:
            # a system that cannot be built (bad knobs, a missing optional package, an unreachable
            # endpoint) fails the task unscored, so a fixed setup reruns it on resume
            return TaskResult(self._failed(task, cell, settings, _structured(err)))
        try:
            draft = run_draft(built, task)
        except Exception as err:  # a bug in a system must not cost the actor's other tasks
            return TaskResult(self._failed(task, cell, settings, _structured(err, task)))
        trace = draft.artifacts.get("trace")
        return TaskResult(draft.record, trace.to_dict() if trace is not None else None)

    def _system(self, cell: Cell, system_config: dict[str, Any], settings: RunSettings) -> BuiltSystem:
        key = json.dumps([cell.system, system_config, settings.model_dump(mode="json")], sort_keys=True)
        with self._lock:
            built = self._systems.get(key)
            if built is not None:
                return built
            lock = self._build_locks.setdefault(key, threading.Lock())
        with lock:  # one build per key; tasks of other cells keep running meanwhile
            if key in self._broken:  # a failed build is not retried for every task of the cell
                raise self._broken[key]
            built = self._systems.get(key)
            if built is None:
                try:
                    built = self._build(cell, system_config, settings)
                except Exception as err:
                    if not isinstance(err, InfraError):  # an endpoint may come back; a bad setup not
                        self._broken[key] = _structured(err)
                    raise
                with self._lock:
                    self._systems[key] = built
        return built

    def _build(self, cell: Cell, system_config: dict[str, Any], settings: RunSettings) -> BuiltSystem:
        client = ChatClient(with_generation(self.endpoint, settings.generation))
        env = SystemEnv(
            self.store_dir,
            client,
            settings,
            self.systems_dir,
            dataset=self.manifest.dataset,
            train=self.train,
        )
        try:
            with node_build_lock(self.systems_dir, cell.system, system_config, self.expected):
                return build_system(cell.system, env, system_config)
        except BaseException:
            env.close()
            client.close()
            raise

    def _failed(self, task: Task, cell: Cell, settings: RunSettings, err: TGMSError) -> TaskRecord:
        return infra_record(
            task, cell, settings, err.to_dict(), serving={"replicas": list(self.endpoint.base_urls)}
        )

    def close(self) -> None:
        """Close the systems' stores and clients and remove the scratch store (the driver calls it)."""
        with self._lock:
            systems, self._systems = list(self._systems.values()), {}
        for built in systems:
            built.env.close()
            built.env.client.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


@contextmanager
def node_build_lock(systems_dir: Path, system: str, config: dict[str, Any], digest: str) -> Iterator[None]:
    """Hold the node-wide lock of one system build (system, knobs, store digest; not the seed).

    The systems keep what they build under ``systems_dir`` keyed by the store digest (vector_rag's chunk
    embeddings, text_to_cypher's Kùzu graph), so the actors of a node need build it only once: the first
    one builds it while the others wait on this lock, then find it on disk. Without the lock every actor
    computes the same embeddings at the same time (minutes each, on shared cores)."""
    import fcntl

    key = hashlib.sha256(json.dumps([system, config, digest], sort_keys=True).encode()).hexdigest()[:16]
    systems_dir.mkdir(parents=True, exist_ok=True)
    with open(systems_dir / f".build-{system}-{key}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes, also if the actor dies
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _structured(err: BaseException, task: Task | None = None) -> TGMSError:
    """``err`` itself when it is structured, else an ``E_INTERNAL`` naming its type and message."""
    if isinstance(err, TGMSError):
        return err
    where = {"task_id": task.id} if task is not None else {}
    return TGMSError(f"{type(err).__name__}: {err}", where="actor", **where)


SCRATCH_PREFIX = "tgms-actor-"


def sweep_stale(base: Path | None) -> list[Path]:
    """Remove the scratch stores of actors whose process is gone (a SIGKILLed driver's actors are killed
    without a chance to clean up; on tmpfs their stores would hold memory until reboot). A directory
    whose pid is alive is kept, even if the pid was reused: only the certainly dead are removed."""
    root = Path(base) if base is not None else Path(tempfile.gettempdir())
    removed = []
    for path in root.glob(f"{SCRATCH_PREFIX}*"):
        pid = path.name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists() or not Path("/proc/self").exists():
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def scratch_base(log_bytes: int, fallback: Path | None) -> Path | None:
    """Where the actor's store goes: tmpfs (``/dev/shm``) when it has room for it, else ``fallback``.

    The store is a throwaway rebuilt from the bundle at every start, so its durability buys nothing,
    while its replay's fsyncs and writes on a disk cost a good part of the start-up. Room means 8× the
    log's size free (a store is a few times its log), so a small tmpfs (a container's 64 MB) is skipped."""
    shm = Path("/dev/shm")
    try:
        st = os.statvfs(shm)
    except OSError:
        return fallback
    if os.access(shm, os.W_OK) and st.f_bavail * st.f_frsize > 8 * log_bytes:
        return shm
    return fallback


def infra_record(
    task: Task,
    cell: Cell,
    settings: RunSettings,
    error: dict[str, Any],
    serving: dict[str, Any] | None = None,
) -> TaskRecord:
    """An unscored ``infra_error`` record for a task that produced no record of its own."""
    return TaskRecord(
        task_id=task.id,
        template=task.template,
        family=task.family,
        system=cell.system,
        model=settings.generation.model,
        seed=settings.generation.seed,
        ablation=settings.ablation,
        serving=serving or {},
        status="infra_error",
        answer_kind=task.answer_kind,
        gold=task.gold,
        correct=None,
        errors=[error],
    )


_ACTOR_CLASS: Any = None


def task_actor_class() -> Any:
    """``TaskActor``: :class:`TaskActor` as a Ray actor class (made on first use: Ray is optional)."""
    global _ACTOR_CLASS
    if _ACTOR_CLASS is None:
        ray = import_ray()
        _ACTOR_CLASS = ray.remote(TaskActor)
    return _ACTOR_CLASS


def _ray_node_id() -> str | None:
    """The Ray node id of this process, or None outside a Ray worker (an actor class used directly)."""
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id()) if ray.is_initialized() else None
    except Exception:  # no runtime context: not in a Ray worker
        return None
