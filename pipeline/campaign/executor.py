"""Fan a campaign's tasks out to Ray actors and bring every result back to the driver, exactly once.

:func:`start_actors` starts ``cluster.actors`` :class:`~pipeline.campaign.actors.TaskActor` per suite; each
gets the suite's event log through the object store (one ``ray.put`` per suite) and proves its digest. The
driver waits for every proof; one refusal stops the campaign before any task runs, with an error that names
the suite, the expected and found digest and why.

:func:`run_jobs` keeps at most ``actor_concurrency`` tasks in flight on each live actor (so at most
actors × actor_concurrency per suite; optionally fewer over the whole pool), the least loaded actor
first, and hands every finished result to ``on_record`` **in the driver process**, one at a time, in
completion order; the driver appends it with flush + fsync (:func:`write_result`), so a task is done
exactly when its record is on disk. Tasks already done in a cell's records file are skipped (resume, as
:func:`pipeline.campaign.resume.resume_cell` decides: finished, and under the job's cell spec). A
task whose actor died is resubmitted to another actor (after Ray's own retry on the restarted actor), at
most ``max_resubmits`` times; after that it is recorded as ``infra_error`` (unscored, rerun on resume) —
never lost, never scored.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tgms.engine.api import CorruptError, TGMSError
from tgms.models.config import EndpointConfig, GenerationConfig
from tgms.models.errors import InfraError
from tgms.pipeline.campaign.actors import infra_record, task_actor_class
from tgms.pipeline.campaign.bundle import EVENTLOG, Manifest, train_split
from tgms.pipeline.campaign.cells import Cell
from tgms.pipeline.campaign.config import ClusterConf
from tgms.pipeline.campaign.endpoints import endpoint_to_dict
from tgms.pipeline.campaign.ray_runtime import actors_per_suite, import_ray
from tgms.pipeline.campaign.records import TaskResult, append_line, append_record
from tgms.pipeline.campaign.resume import resume_cell
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import RunSettings
from tgms.pipeline.systems.record import TaskRecord

#: warnings (a memory kill, fewer actors than asked) go to Hydra's console and job log (driver.log) alike
log = logging.getLogger("tgms.campaign")
READY_TIMEOUT_S = 600.0  # a proof replays a whole store; a big one on a busy node takes a while
CLOSE_TIMEOUT_S = 10.0
#: a task killed for memory: the first pause before it is retried (doubling per kill, up to the max), and
#: how many more times such a task is retried than one whose actor died otherwise
MEMORY_BACKOFF_S = 2.0
MEMORY_BACKOFF_MAX_S = 60.0
MEMORY_RETRIES = 3


#: how :func:`run_jobs` builds the cells' systems before their tasks. ``off``: a task builds its system when
#: it first needs it. ``overlap``: builds start at once and other cells' tasks run meanwhile (a remote
#: model: the builds use the actors' cores, the model its own). ``first``: every build ends before any
#: task starts (a model server on the same cores: on 2 cores llama.cpp's two threads beside one embedder
#: thread prefilled at ~40 tokens/s instead of ~100, and the embedding took 651 s instead of 277 s alone
#: with both cores; 2026-12-06, the main job)
Prepare = Literal["off", "overlap", "first"]


@dataclass(frozen=True)
class CellJob:
    """One cell's tasks and where their results go."""

    cell: Cell
    system_config: dict[str, Any]
    settings: RunSettings  # the cell's (see run_settings)
    tasks: list[Task]
    records_path: Path
    traces_path: Path
    #: the cell spec's hash, stamped on each record as it is written (None: records are written as made)
    cell_spec_sha256: str | None = None


def run_settings(cell: Cell, generation: GenerationConfig, repair_budget: int = 3) -> RunSettings:
    """The :class:`~pipeline.systems.base.RunSettings` of a cell: ``generation`` (as served,
    :func:`~pipeline.campaign.endpoints.open_model`) with the cell's seed."""
    return RunSettings(
        generation=generation.model_copy(update={"seed": cell.seed}),
        repair_budget=repair_budget,
        ablation=cell.ablation,
    )


@dataclass
class _Actor:
    handle: Any
    suite: str
    index: int
    info: dict[str, Any] = field(default_factory=dict)
    in_flight: int = 0
    alive: bool = True


@dataclass
class TaskActorPool:
    """The proven actors of each suite (see :func:`start_actors`); close it to stop them."""

    actors: dict[str, list[_Actor]]
    concurrency: int
    startup_s: float  # from the first actor's creation to the last proof
    _refs: list[Any] = field(default_factory=list)  # the event logs in the object store, kept while in use

    def ready(self) -> list[dict[str, Any]]:
        """Every actor's proof: ``{"suite", "digest", "seconds", "node", "pid"}``."""
        return [a.info for actors in self.actors.values() for a in actors]

    def live(self, suite: str) -> list[_Actor]:
        return [a for a in self.actors.get(suite, []) if a.alive]

    def close(self) -> None:
        """Ask every actor to clean up (bounded wait), then kill it; idempotent."""
        ray = import_ray()
        everyone = [a for actors in self.actors.values() for a in actors]
        pending = []
        for a in everyone:
            try:
                pending.append(a.handle.close.remote())
            except Exception:
                continue
        if pending:
            ray.wait(pending, num_returns=len(pending), timeout=CLOSE_TIMEOUT_S)
        for a in everyone:
            try:
                ray.kill(a.handle, no_restart=True)
            except Exception:
                continue
            a.alive = False
        self.actors = {}
        self._refs = []

    def __enter__(self) -> TaskActorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_actors(
    bundles: dict[str, tuple[Path, Manifest]],
    endpoint: EndpointConfig | dict[str, Any],
    cluster: ClusterConf,
    work_dir: str | Path | None,
    *,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> TaskActorPool:
    """``cluster.actors`` proven actors per suite (capped to what the cluster's CPUs hold,
    :func:`~pipeline.campaign.ray_runtime.actors_per_suite`) of ``bundles`` (suite → (bundle dir, manifest)).

    Raises :class:`~engine.api.CorruptError` naming every refusing actor's suite, expected and found digest
    and reason (the other actors are stopped first), or :class:`~models.errors.InfraError` when an actor
    could not start at all."""
    ray = import_ray()
    actor_class = task_actor_class().options(
        max_concurrency=cluster.actor_concurrency,
        num_cpus=cluster.actor_cpus,
        # a memory kill takes the actor with it: restarts let it come back (its store replayed again)
        max_restarts=1 + MEMORY_RETRIES,
        max_task_retries=1,
    )
    data = endpoint if isinstance(endpoint, dict) else endpoint_to_dict(endpoint)
    t0 = time.perf_counter()
    pool = TaskActorPool({}, cluster.actor_concurrency, 0.0)
    proofs: list[tuple[_Actor, Any]] = []
    per_suite = actors_per_suite(cluster, float(ray.cluster_resources().get("CPU", 0.0)), len(bundles))
    if per_suite < cluster.actors:
        log.warning(
            "starting %d task actor(s) per suite, not cluster.actors=%d: that many at actor_cpus=%g do not "
            "fit the cluster's CPUs",
            per_suite,
            cluster.actors,
            cluster.actor_cpus,
        )
    try:
        for suite, (bundle_dir, manifest) in bundles.items():
            # one copy in the object store per suite: every actor, on any node, reads it from there
            ref = ray.put((Path(bundle_dir) / EVENTLOG).read_bytes())
            train = ray.put(train_split(bundle_dir))  # worked plans: the train split, never dev or test
            pool._refs += [ref, train]
            for i in range(per_suite):
                handle = actor_class.remote(
                    suite, ref, manifest, data, str(work_dir) if work_dir else None, train
                )
                actor = _Actor(handle, suite, i)
                pool.actors.setdefault(suite, []).append(actor)
                proofs.append((actor, handle.ready.remote()))
        refusals, failures = _gather_proofs(ray, proofs, ready_timeout_s)
        if refusals:
            raise _refusal_error(refusals)
        if failures:
            raise InfraError(
                f"{len(failures)} task actor(s) did not start: " + "; ".join(f["message"] for f in failures),
                actors=failures,
            )
    except BaseException:
        pool.close()
        raise
    pool.startup_s = round(time.perf_counter() - t0, 4)
    return pool


def _gather_proofs(
    ray: Any, proofs: list[tuple[_Actor, Any]], timeout_s: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    refusals, failures = [], []
    deadline = time.monotonic() + timeout_s
    for actor, ref in proofs:
        where = {"suite": actor.suite, "actor": actor.index}
        try:
            actor.info = {**ray.get(ref, timeout=max(0.1, deadline - time.monotonic())), "actor": actor.index}
        except ray.exceptions.GetTimeoutError:
            failures.append({**where, "message": f"no proof within {timeout_s:g} s"})
        except ray.exceptions.RayTaskError as err:
            cause = _cause(err)
            if isinstance(cause, CorruptError):
                refusals.append({**where, **cause.details, "message": cause.message})
            else:
                failures.append({**where, "message": _message(err)})
        except ray.exceptions.RayActorError as err:
            failures.append({**where, "message": f"actor died while starting: {_message(err)}"})
    return refusals, failures


def _refusal_error(refusals: list[dict[str, Any]]) -> CorruptError:
    lines = [
        f"suite {r['suite']} actor {r['actor']} on {r.get('node')}: {r.get('reason')} "
        f"(expected {r.get('expected')}, found {r.get('found')})"
        for r in refusals
    ]
    return CorruptError(
        f"{len(refusals)} task actor(s) refused to serve: " + "; ".join(lines),
        refusals=refusals,
        suites=sorted({r["suite"] for r in refusals}),
    )


def _cause(err: BaseException) -> BaseException | None:
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, BaseException) else None


def _message(err: BaseException) -> str:
    cause = _cause(err)
    if isinstance(cause, TGMSError):
        return cause.message
    text = str(cause if cause is not None else err).strip().splitlines()
    return text[-1] if text else type(err).__name__


def write_result(job: CellJob, result: TaskResult) -> None:
    """The default ``on_record``: append the record (and the trace, when there is one) durably, stamped
    with the job's cell-spec hash when it has one (here, on the driver: infra records made by the executor
    get it as well as those the actors return)."""
    record = result.record
    if job.cell_spec_sha256 is not None:
        record = record.model_copy(update={"cell_spec_sha256": job.cell_spec_sha256})
    if result.trace is not None:  # the trace first: a record on disk always has its trace
        append_line(
            job.traces_path,
            _json({"task_id": record.task_id, "cell_id": job.cell.cell_id, "trace": result.trace}),
        )
    append_record(job.records_path, record)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass
class _Flight:
    job: CellJob
    task: Task
    actor: _Actor
    resubmits: int


OnRecord = Callable[[CellJob, TaskResult], None]


Item = tuple[CellJob, Task, int]  # a queued task: its job, the task, resubmits so far


class _Scheduler:
    """One :func:`run_jobs` call's state and steps: the per-suite queues, the tasks in flight, the cells
    being prepared, the cap on tasks in flight and a memory kill's pause. :meth:`run` loops
    :meth:`submit` then :meth:`collect` until every task is recorded."""

    def __init__(
        self,
        ray: Any,
        pool: TaskActorPool,
        on_record: OnRecord,
        *,
        max_resubmits: int,
        max_in_flight: int | None,
        prepare: Prepare,
    ) -> None:
        self.ray, self.pool, self.on_record = ray, pool, on_record
        self.max_resubmits, self.prepare = max_resubmits, prepare
        self.queues: dict[str, deque[Item]] = {}
        self.stats = {"submitted": 0, "finished": 0, "skipped": 0, "resubmitted": 0, "infra_errors": 0}
        self.flights: dict[Any, _Flight] = {}
        self.cap = max_in_flight if max_in_flight is not None else 1 << 30
        # cell id -> prepare calls still running; a cell is ready when it has none left
        self.preparing: dict[str, set[Any]] = {}
        self.prep_refs: dict[Any, str] = {}
        self.last = ""  # the cell of the task submitted last
        # after a memory kill nothing new is submitted until this time (time.monotonic); finished tasks are
        # still collected meanwhile, so the driver's progress and records do not stall behind the pause
        self.hold_until = 0.0

    def enqueue(self, jobs: Iterable[CellJob], resume: bool) -> None:
        """Queue every job's tasks per suite, skipping those already recorded (resume, as
        :func:`~pipeline.campaign.resume.resume_cell` decides)."""
        for job in jobs:
            to_run = job.tasks
            if resume:
                to_run = resume_cell(job.records_path, job.tasks, job.cell_spec_sha256).todo
            self.stats["skipped"] += len(job.tasks) - len(to_run)
            self.queues.setdefault(job.cell.suite, deque()).extend((job, task, 0) for task in to_run)
        missing = [s for s, q in self.queues.items() if q and not self.pool.live(s)]
        if missing:
            raise InfraError(f"no task actor serves suite(s) {missing}", suites=missing)

    def start_prepares(self) -> None:
        """Ask every live actor of each queued cell's suite to build the cell's system now."""
        if self.prepare == "off":
            return
        todo = {id(j): j for q in self.queues.values() for j, _, _ in q}
        for job in todo.values():
            for actor in self.pool.live(job.cell.suite):
                ref = actor.handle.prepare.remote(job.cell, job.system_config, job.settings)
                self.prep_refs[ref] = job.cell.cell_id
                self.preparing.setdefault(job.cell.cell_id, set()).add(ref)

    def _ready(self, item: Item) -> bool:
        return not self.preparing.get(item[0].cell.cell_id)

    def _take(self, queue: deque[Item], i: int) -> Item:
        item = queue[i]
        del queue[i]
        self.last = item[0].cell.cell_id
        return item

    def next_task(self, queue: deque[Item]) -> Item | None:
        """The next task of the cell submitted last while it is ready, else the first task of a ready cell;
        None while no queued cell is ready and some are still being prepared (a task of a cell being built
        would only hold a slot waiting for its build: with two slots, two vector_rag tasks held both for
        the whole embedding while the model server sat idle); else the first task. Cells run one after
        another."""
        if self._ready(queue[0]) and queue[0][0].cell.cell_id == self.last:
            return self._take(queue, 0)  # the usual case: the queue is cell-major
        ready_at = next((i for i, item in enumerate(queue) if self._ready(item)), None)
        if ready_at is None and self.prep_refs:
            return None  # wait for a build to finish
        if ready_at is None:
            same = next((i for i, item in enumerate(queue) if item[0].cell.cell_id == self.last), 0)
            return self._take(queue, same)
        same_ready = next(
            (i for i, it in enumerate(queue) if it[0].cell.cell_id == self.last and self._ready(it)), None
        )
        return self._take(queue, same_ready if same_ready is not None else ready_at)

    def submit(self) -> None:
        """Fill the free slots of the live actors, the least loaded first, up to the cap."""
        if time.monotonic() < self.hold_until or (self.prepare == "first" and self.prep_refs):
            return
        for suite, queue in self.queues.items():
            while queue and len(self.flights) < self.cap:
                free = [a for a in self.pool.live(suite) if a.in_flight < self.pool.concurrency]
                if not free:
                    break
                picked = self.next_task(queue)
                if picked is None:
                    break
                job, task, resubmits = picked
                actor = min(free, key=lambda a: (a.in_flight, a.index))
                ref = actor.handle.run.remote(task, job.cell, job.system_config, job.settings)
                actor.in_flight += 1
                self.flights[ref] = _Flight(job, task, actor, resubmits)
                self.stats["submitted"] += 1

    def finish(self, flight: _Flight, result: TaskResult) -> None:
        if result.record.status == "infra_error":
            self.stats["infra_errors"] += 1
        self.on_record(flight.job, result)
        self.stats["finished"] += 1

    def busy(self) -> bool:
        """Tasks in flight, or queued ones waiting for a build or a memory kill's pause."""
        waiting = bool(self.prep_refs) or time.monotonic() < self.hold_until
        return bool(self.flights) or (any(self.queues.values()) and waiting)

    def collect(self) -> bool:
        """Wait for a finished task or build and handle it (True), or only wait out a memory kill's pause
        when nothing is in flight (False)."""
        pending = [*self.flights, *self.prep_refs]
        pause = self.hold_until - time.monotonic()
        if not pending:  # only tasks held back by a memory kill's pause: wait it out
            time.sleep(max(pause, 0.0))
            return False
        ready, _ = self.ray.wait(pending, num_returns=1, timeout=pause if pause > 0 else None)
        for ref in ready:
            if ref in self.prep_refs:
                # built (the node's other actors then load the build from the node cache), failed or its
                # actor died: either way the cell waits no longer
                self.preparing[self.prep_refs.pop(ref)].clear()
                continue
            self._landed(ref)
        return True

    def _landed(self, ref: Any) -> None:
        flight = self.flights.pop(ref)
        flight.actor.in_flight -= 1
        ray = self.ray
        try:
            self.finish(flight, ray.get(ref))
        except ray.exceptions.RayTaskError as err:
            cause = _cause(err)
            if isinstance(cause, CorruptError):  # an actor that no longer proves its store
                raise cause from None
            error = {
                "error": "E_INFRA",
                "message": f"the actor failed the task: {_message(err)}",
                "details": {},
            }
            self.finish(flight, TaskResult(_infra(flight, error)))
        except ray.exceptions.RayError as err:
            # the actor died or is restarting, its worker crashed, an object was lost: run the task again
            self._actor_lost(err, flight)

    def _actor_lost(self, err: BaseException, flight: _Flight) -> None:
        budget = self.max_resubmits
        if memory_kill(self.ray, err):
            # Ray's memory monitor (or the kernel) killed the worker: retry after a pause with fewer tasks in
            # flight (the pressure may be another process's) instead of ending the campaign. The other tasks
            # of a killed actor fail with it: errors arriving during the pause are that one kill, not new
            # ones (each would halve the cap and double the pause again)
            if time.monotonic() >= self.hold_until:
                self.cap, pause = _memory_backoff(err, self.cap, len(self.flights) + 1, self.stats)
                self.hold_until = time.monotonic() + pause
            budget += MEMORY_RETRIES
        if isinstance(err, self.ray.exceptions.ActorDiedError):
            flight.actor.alive = False
        if flight.resubmits < budget:
            self.stats["resubmitted"] += 1
            self.queues[flight.job.cell.suite].appendleft((flight.job, flight.task, flight.resubmits + 1))
            return
        error = {
            "error": "E_INFRA",
            "message": f"the task's actor died {flight.resubmits + 1} times: {_message(err)}",
            "details": {"suite": flight.job.cell.suite, "actor": flight.actor.index},
        }
        self.finish(flight, TaskResult(_infra(flight, error)))

    def check_stranded(self) -> None:
        """Every actor of a suite with queued tasks died and nothing is in flight: stop, resumably."""
        stranded = [s for s, q in self.queues.items() if q and not self.pool.live(s)]
        if stranded and not self.flights:
            raise InfraError(
                f"every task actor of suite(s) {stranded} died; finished tasks are recorded, rerun to resume",
                suites=stranded,
                left=sum(len(self.queues[s]) for s in stranded),
            )

    def run(self) -> dict[str, int]:
        self.start_prepares()
        self.submit()
        while self.busy():
            collected = self.collect()
            self.submit()
            if collected:
                self.check_stranded()
        return self.stats


def run_jobs(
    pool: TaskActorPool,
    jobs: Iterable[CellJob],
    on_record: OnRecord | None = write_result,
    *,
    resume: bool = True,
    max_resubmits: int = 2,
    max_in_flight: int | None = None,
    prepare: Prepare = "off",
) -> dict[str, int]:
    """Run every job's tasks on the pool (see the module docstring); returns counts
    ``{"submitted", "finished", "skipped", "resubmitted", "infra_errors"}``.

    ``max_in_flight`` caps the tasks in flight over the whole pool (None: actors × actor_concurrency). A
    server that answers one request at a time (llama.cpp) keeps a prompt prefix only across consecutive
    requests: with a small cap the tasks run cell by cell and each request reuses the previous one's prefix
    instead of re-reading ~3k tokens. ``prepare`` (other than ``off``) has every actor build each cell's
    system before its tasks (:meth:`TaskActor.prepare`): with ``overlap`` only tasks of cells whose systems
    are ready are sent meanwhile, so a long one-off build (vector_rag's embeddings) overlaps other cells'
    tasks instead of holding their slots; with ``first`` no task is sent until every build has ended, for
    a model server on the actors' own cores: there a build beside it slowed both (see :data:`Prepare`)."""
    scheduler = _Scheduler(
        import_ray(), pool, on_record or write_result,
        max_resubmits=max_resubmits, max_in_flight=max_in_flight, prepare=prepare,
    )  # fmt: skip
    scheduler.enqueue(jobs, resume)
    return scheduler.run()


def memory_kill(ray: Any, err: BaseException) -> bool:
    """Whether a task or its actor was killed for memory (Ray's memory monitor, or the kernel's)."""
    if isinstance(err, ray.exceptions.OutOfMemoryError):
        return True
    text = str(err)
    return "OutOfMemory" in text or "out of memory" in text.lower() or "memory monitor" in text.lower()


def _memory_backoff(err: BaseException, cap: int, in_flight: int, stats: dict[str, int]) -> tuple[int, float]:
    """The new cap (half the tasks in flight) and the pause before the next submission (doubling per
    kill, capped). The caller holds submissions for the pause; it does not sleep on the driver's loop."""
    stats["memory_kills"] = stats.get("memory_kills", 0) + 1
    new_cap = max(1, min(cap, in_flight) // 2)
    pause = min(MEMORY_BACKOFF_S * 2 ** (stats["memory_kills"] - 1), MEMORY_BACKOFF_MAX_S)
    log.warning(
        "a task was killed for memory (%s); retrying it in %g s with at most %d task(s) in flight",
        _message(err)[:160],
        pause,
        new_cap,
    )
    return new_cap, pause


def _infra(flight: _Flight, error: dict[str, Any]) -> TaskRecord:
    return infra_record(flight.task, flight.job.cell, flight.job.settings, error)
