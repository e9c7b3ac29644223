"""The systems registry, the environment a system runs in, and the one wrapper that turns a run into a record.

A system is registered once, like a task template::

    @system("vector_rag", config=VectorRagConfig)
    def vector_rag(config: VectorRagConfig, env: SystemEnv) -> Runner:
        ...prepare once (index, database)...
        def run(task: Task, rec: RecordDraft) -> None:
            ...ask the model through rec.calls, set rec.record.answer (and attempts, context, ...)...
        return run

:func:`build_system` validates the config (a pydantic model: an unknown or ill-typed key fails at build
time, before any task runs) and calls the factory; :func:`run_task` runs one task through the runner and
finalizes its :class:`~pipeline.systems.record.TaskRecord`: it times the task, sums the tokens of its model
calls, labels an :class:`~models.errors.InfraError` ``infra_error`` (not scored), a model failure
``model_error``, and scores the emitted typed answer by the suite's rule. Every system gets the same
:class:`RunSettings` (the model's :class:`~models.config.GenerationConfig`: model, temperature, seed, token
limits, context window; plus the repair budget and ablation), so they differ only in how they use them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tgms.engine.api import InvalidArgError, Store, TGMSError
from tgms.models.client import ChatClient, Completion
from tgms.models.config import GenerationConfig, Sampling
from tgms.models.errors import ContextLengthError, InfraError
from tgms.pipeline.boundary import validation_problems
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.scoring.typed import score
from tgms.pipeline.systems.record import LLMCall, TaskRecord, sha256_json, sha256_text


class SystemConfig(BaseModel):
    """Base of every system's config model: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RunSettings(BaseModel):
    """What every system gets alike (DESIGN §4): the model's generation settings (the cell's seed in
    them) and what is not about the model. Crosses to Ray actors as ``model_dump(mode="json")``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    generation: GenerationConfig
    """Model, served name, temperature, seed, token limit per completion, context window (a larger
    prompt is refused honestly), ..."""
    repair_budget: int = 3
    """Repairs after the first attempt (planner, Cypher)."""
    ablation: str = "none"
    """The tgms ablation this cell runs (recorded; its switches are in the system's config)."""


class SystemEnv:
    """Where a system runs: the store, the model client, the common settings, a work directory.

    ``store()`` is a read-only :class:`Store` per thread (a task runs on one thread; DuckDB connections are
    not shared across threads).
    """

    def __init__(
        self,
        store_dir: str | Path,
        client: ChatClient,
        settings: RunSettings,
        work_dir: str | Path,
        *,
        dataset: str | None = None,
        train: list[Task] | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        #: the suite's train split (worked plans a planner may retrieve); never dev or test tasks
        self.train = list(train or [])
        self.client = client
        self.settings = settings
        self.work_dir = Path(work_dir)
        self.dataset = dataset
        self._local = threading.local()
        self._stores: list[Store] = []
        self._lock = threading.Lock()

    def store(self) -> Store:
        st = getattr(self._local, "store", None)
        if st is None:
            st = Store.open(self.store_dir, read_only=True)
            self._local.store = st
            with self._lock:
                self._stores.append(st)
        return st

    def serving(self) -> dict[str, Any]:
        """The serving configuration recorded with every result: the generation settings the answer
        depends on, and which replicas served it at what concurrency."""
        cfg = self.client.config
        return {
            **self.settings.generation.model_dump(mode="json"),
            "replicas": list(cfg.base_urls),
            "concurrency": cfg.concurrency,
        }

    def close(self) -> None:
        with self._lock:
            stores, self._stores = self._stores, []
        for st in stores:
            st.close()


@dataclass
class CallLog:
    """Model calls of one task: every completion goes through here so the record lists its hashes."""

    client: ChatClient
    max_tokens: int
    calls: list[LLMCall] = field(default_factory=list)

    def complete(
        self,
        role: str,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        *,
        sampling: Sampling | None = None,
    ) -> Completion:
        c = self.client.complete(
            messages, schema=schema, max_tokens=max_tokens or self.max_tokens, sampling=sampling
        )
        self.calls.append(
            LLMCall(
                role=role,
                request_hash=c.request_hash,
                prompt_sha256=sha256_json(messages),
                completion_sha256=sha256_text(c.text),
                prompt_tokens=c.prompt_tokens,
                completion_tokens=c.completion_tokens,
                latency_s=c.latency_s,
                cached=c.cached,
                attempts=c.attempts,
                sampling=sampling.to_dict() if sampling is not None else None,
            )
        )
        return c


@dataclass
class RecordDraft:
    """What a runner fills in for one task: the record (answer, attempts, ...) and its call log."""

    record: TaskRecord
    calls: CallLog
    #: objects a caller may want beyond the record (the final plan, the Trace, ...); never serialized
    artifacts: dict[str, Any] = field(default_factory=dict)


Runner = Callable[[Task, RecordDraft], None]
Factory = Callable[[Any, SystemEnv], Runner]


@dataclass(frozen=True)
class SystemSpec:
    name: str
    config: type[SystemConfig]
    factory: Factory
    doc: str


SYSTEMS: dict[str, SystemSpec] = {}


def system(name: str, *, config: type[SystemConfig]) -> Callable[[Factory], Factory]:
    """Register the decorated factory ``(config, env) -> runner`` as the system ``name``."""

    def register(factory: Factory) -> Factory:
        if name in SYSTEMS:
            raise RuntimeError(f"system {name!r} registered twice")
        SYSTEMS[name] = SystemSpec(name, config, factory, (factory.__doc__ or "").strip())
        return factory

    return register


def load_systems() -> dict[str, SystemSpec]:
    """Every registered system (importing the package registers them)."""
    import tgms.pipeline.systems  # noqa: F401

    return SYSTEMS


@dataclass
class BuiltSystem:
    name: str
    config: SystemConfig
    env: SystemEnv
    runner: Runner


def check_config(name: str, config: dict[str, Any] | None = None) -> SystemConfig:
    """The validated config of system ``name``; ``E_INVALID_ARG`` for an unknown name or a bad config
    (callers check before they start a model server)."""
    specs = load_systems()
    if name not in specs:
        raise InvalidArgError(f"unknown system {name!r}", allowed=sorted(specs))
    if not isinstance(config, (dict, type(None))):
        raise InvalidArgError(f"the config of system {name!r} must be a JSON object")
    try:
        return specs[name].config(**(config or {}))
    except ValidationError as err:
        raise InvalidArgError(
            f"bad config for system {name!r}",
            problems=validation_problems(err),
        ) from err


def build_system(name: str, env: SystemEnv, config: dict[str, Any] | None = None) -> BuiltSystem:
    """The system ``name`` built for ``env``; ``E_INVALID_ARG`` for an unknown name or a bad config."""
    cfg = check_config(name, config)
    return BuiltSystem(name, cfg, env, SYSTEMS[name].factory(cfg, env))


def new_record(system: BuiltSystem, task: Task) -> TaskRecord:
    s = system.env.settings
    return TaskRecord(
        task_id=task.id,
        template=task.template,
        family=task.family,
        system=system.name,
        model=s.generation.model,
        seed=s.generation.seed,
        ablation=s.ablation,
        serving=system.env.serving(),
        answer_kind=task.answer_kind,
        gold=task.gold,
    )


@contextmanager
def _timed(rec: TaskRecord) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        rec.latency_s = round(time.perf_counter() - start, 6)


def run_task(system: BuiltSystem, task: Task) -> TaskRecord:
    """Run ``task`` through ``system`` and return its finished, scored record (never raises for a task)."""
    return run_draft(system, task).record


def run_draft(system: BuiltSystem, task: Task) -> RecordDraft:
    """:func:`run_task`, returning the draft with its artifacts too. A task without ``gold`` (a user's
    question) is not scored (``correct`` stays None)."""
    rec = new_record(system, task)
    draft = RecordDraft(rec, CallLog(system.env.client, system.env.settings.generation.max_tokens))
    with _timed(rec):
        try:
            system.runner(task, draft)
        except InfraError as err:
            rec.status = "infra_error"
            rec.errors.append(err.to_dict())
        except ContextLengthError as err:  # the server measured the prompt over its window: an honest refusal
            rec.status = "refused"
            rec.errors.append(err.to_dict())
        except TGMSError as err:
            rec.status = "model_error" if rec.answer is None else rec.status
            rec.errors.append(err.to_dict())
    rec.llm_calls = draft.calls.calls
    for c in rec.llm_calls:
        rec.tokens.prompt += c.prompt_tokens or 0
        rec.tokens.completion += c.completion_tokens or 0
        rec.tokens.unreported_calls += c.prompt_tokens is None or c.completion_tokens is None
    _score(rec, scored=task.scored)
    return draft


def _score(rec: TaskRecord, scored: bool = True) -> None:
    if rec.status == "infra_error":
        rec.correct = None
        return
    typed = (rec.answer or {}).get("answer")
    if rec.answer is not None and isinstance(typed, dict) and "value" in typed:
        rec.predicted = typed["value"]
        if rec.status == "model_error":
            rec.status = "answered"
    elif rec.status == "answered":
        rec.status = "abstained"
    if not scored:
        rec.correct = None
    elif rec.status != "answered" or rec.answer_kind is None:
        rec.correct = False
    else:
        rec.correct = score(rec.answer_kind, rec.gold, rec.predicted)
