"""The per-task record: one JSON line per (task, system) — what was asked, what came back, how it scored.

The campaign logs these as its raw results; every table is computed from them. A record carries enough to
audit a score without rerunning anything: the hash of every prompt and completion (the texts themselves
live in the response cache, keyed by request hash), each plan attempt with its violations, the trace
digest, the answer object as emitted, the claim verdicts and the gate's decision, and the score by the
suite's typed rule.

``status`` says how the task ended:

- ``answered``: an answer object was emitted and scored;
- ``abstained``: the system chose not to answer (the gate abstained, or no usable answer) — scored wrong;
- ``model_error``: the model never produced a usable plan/query/answer — scored wrong;
- ``refused``: the system refused honestly before asking (e.g. the context exceeds the model's window) —
  scored wrong and counted apart;
- ``infra_error``: the infrastructure failed (endpoint down, retries exhausted) — **not scored**
  (``correct`` is None), and listed in ``errors`` with its code, never silently counted as wrong.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from tgms.engine.api import CorruptError
from tgms.pipeline.boundary import validation_problems

RECORD_VERSION = "1"
Status = Literal["answered", "abstained", "model_error", "refused", "infra_error"]
STATUSES: tuple[str, ...] = ("answered", "abstained", "model_error", "refused", "infra_error")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    return sha256_text(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LLMCall(_Strict):
    """One chat completion a system asked for."""

    role: str  # planner | reporter | answerer | cypher | ...
    request_hash: str  # the response-cache key (model, messages, sampling, response format)
    prompt_sha256: str  # sha256 of the canonical JSON of the message list
    completion_sha256: str  # sha256 of the completion text
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cached: bool
    attempts: int
    #: per-request sampling ``{temperature, seed}`` when it overrode the run's (a repeated repair)
    sampling: dict[str, Any] | None = None


class Attempt(_Strict):
    """One plan (tgms) or query (text_to_cypher) the model emitted, and what was wrong with it."""

    n: int  # 1 = the first emission
    sha256: str | None  # of the parsed plan's canonical JSON / the query text; None when unparseable
    valid: bool  # passed the static verifier (plan) / ran and returned rows (query)
    violations: list[dict[str, Any]] = Field(default_factory=list)  # structured, as given to the repair
    runtime_error: dict[str, Any] | None = None  # executor / database error, when it ran
    #: the reply repeated an earlier attempt (same canonical plan, or byte-identical reply)
    repeated: bool = False
    #: the request was sent with seeded sampling ``{temperature, seed}`` (the retry after a repeat)
    sampling: dict[str, Any] | None = None
    #: the request re-asked a repair whose reply repeated (tgms: models.planner, ``repeat_redraws``)
    redraw: bool = False
    #: the model's reply as received (its head; models.planner.REPLY_RECORD_LIMIT), when recorded
    reply: str | None = None


class Tokens(_Strict):
    prompt: int = 0
    completion: int = 0
    unreported_calls: int = 0  # calls whose server reported no usage


class TaskRecord(_Strict):
    """One task answered by one system (one line of the campaign's JSONL)."""

    record_version: str = RECORD_VERSION
    task_id: str
    template: str | None = None
    family: str | None = None
    system: str
    model: str
    seed: int
    ablation: str = "none"
    serving: dict[str, Any] = Field(default_factory=dict)  # flavour, replicas, sampling, max_tokens
    status: Status = "model_error"
    answer_kind: str | None  # None for a user's question: the plan decides the kind
    gold: Any = None
    answer: dict[str, Any] | None = None  # the answer object as emitted ({text, answer, claims})
    predicted: Any = None  # answer.answer.value, or None
    correct: bool | None = None  # None: not scored (infra_error)
    llm_calls: list[LLMCall] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    first_emission_valid: bool | None = None  # tgms / text_to_cypher: was attempt 1 valid
    #: tgms: repair replies that repeated an earlier attempt (each retried with seeded sampling)
    repeat_replies: int | None = None
    trace_digest: str | None = None
    trace_status: str | None = None
    claim_verdicts: list[dict[str, Any]] = Field(default_factory=list)
    gate: dict[str, Any] | None = None
    reporter: str | None = None  # "llm" | "llm_retry" | "mechanical_fallback"
    context: dict[str, Any] | None = None  # baselines: what was put in the prompt (chars, tokens, items)
    tokens: Tokens = Field(default_factory=Tokens)
    latency_s: float = 0.0  # wall time of the whole task
    errors: list[dict[str, Any]] = Field(default_factory=list)  # structured errors, infra and model
    extras: dict[str, Any] = Field(default_factory=dict)  # system-specific detail
    #: the SHA-256 of the campaign cell's spec (pipeline.campaign.cell_spec), stamped by the campaign driver
    #: as it writes the record; absent outside a campaign
    cell_spec_sha256: str | None = None

    @model_serializer(mode="wrap")
    def _omit_unset_spec(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # left out while unset, so a record made outside a campaign keeps the bytes it had before the field
        data: dict[str, Any] = handler(self)
        if data.get("cell_spec_sha256") is None:
            data.pop("cell_spec_sha256", None)
        return data

    def to_json(self) -> str:
        """One canonical JSON line (sorted keys)."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)


def parse_record(value: Any, *, source: str = "a task record") -> TaskRecord:
    """A record read back (a JSON object from a records file or an artifact) as a :class:`TaskRecord`.

    Records cross every module boundary typed (actors, executor, driver, progress, tracking, reports); this is
    where an untyped one becomes typed, so a line that is JSON but not a record fails here, named, with its
    first problems (``E_CORRUPT``), instead of as a ``KeyError`` three modules later.
    """
    try:
        return TaskRecord.model_validate(value)
    except ValidationError as err:
        problems = validation_problems(err, 5, root="(record)")
        raise CorruptError(f"{source} is not a task record", problems=problems) from None


def record_schema() -> dict[str, Any]:
    """The JSON schema of a record (documented in docs/, checked by tests)."""
    return TaskRecord.model_json_schema()
