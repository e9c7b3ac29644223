"""The planner: ask the model for a plan, verify it, run it, and repair it with what was wrong (DESIGN §3.5).

The prompt (:mod:`models.plan_prompt`) has two parts. The **static prefix** (the system message: the plan
IR's rules, the operator manual of :mod:`models.manual`, the fixed worked plans) is one constant string per
layout, byte-identical for every task, so a server reuses its cached prefix (vLLM's prefix caching,
llama.cpp's shared-prefix reuse). The **dynamic suffix** (the user message) carries what changes: the
dataset card, the memory notes of the question's weeks when memory is on (:mod:`models.memory`), the
worked plans retrieved for the question and their operators' manual blocks (when the layout says so), the
task's input uids, the question, its times as named constants and the expected answer kind, all fenced as
data. A plan may write a named time (``"T1"``); :func:`read_plan` puts the number in before the verifier
sees it (:mod:`models.worked_plans`).

The loop (:func:`plan_and_run`): the reply is parsed (think blocks and code fences tolerated), the model's
plan is completed with the task's ``plan_id`` and ``question`` (the model is not asked to copy them), and
the static verifier runs with the task's uids as the grounding set. A plan with violations, a reply with
no JSON, or a plan whose execution fails with a repairable error (``E_COST`` with its suggestions,
``E_NOT_FOUND``, ``E_INVALID_ARG``, ``E_UPSTREAM``, ``E_LIMIT``, or an ``answer_spec.from`` that names
nothing in the result) is repaired (:mod:`models.plan_repair`): the bad plan is quoted as data beside the
structured problems with their legal alternatives, in one user turn after the task's (never replayed as
the model's own turn), and the failing steps and fields are named with the rest kept. Only the latest bad
plan is quoted, so the prompt stays bounded however many repairs there are. A reply that repeats an
earlier attempt (same canonical plan, or the same bytes) is not verified or run again (its problems are
the earlier attempt's): the repair is re-sent with its failing steps left out of the quote, seeded
sampling (hotter with each repeat) and the per-operator schema as its response format (``repeat_schema``:
the keys and types it refused cannot be written again); that request is a **redraw** of the repair that
got the repeat and spends none of the budget (``repeat_redraws`` a task), so a repeat never ends the loop on
a plan already refused. Repairs after the first ``greedy_repairs`` are
seeded samples at ``repair_temperature`` even when nothing repeated: a greedy decode of a repair prompt
that differs from the last one only in the quoted plan tends to write the last repair again. Every attempt
is logged, with ``repeated``, ``redraw``, its ``sampling`` and the reply's head.

Ablation switches (:class:`PlannerConfig`): ``contracts=False`` disables the verifier's declared-output
check (an invented field then fails at run time instead), ``units=False`` its units check (issue 24: a
plan summing time points then runs), ``schema`` picks the structured-output response format:
``"generic"`` sends :func:`plan_schema` (the outline, args free), ``"per_operator"`` sends
:func:`models.plan_schema.per_operator_schema` (a union over operators, each with its own args, so a
constrained decoder cannot invent keys; ``schema_ops`` narrows the union), ``"none"`` (the default) sends
none. ``constrained=True`` is the older spelling of ``schema="generic"`` (the ``constrained_decoding``
ablation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tgms.engine.api import (
    ANSWER_KINDS,
    InvalidArgError,
    OpContext,
    TGMSError,
    Trace,
    VerifierConfig,
    all_operators,
    canonical_json,
    check_depth,
    get_operator,
    sha256_hex,
    verify_plan,
)
from tgms.models.answerer import Complete
from tgms.models.config import Sampling
from tgms.models.errors import ModelOutputError
from tgms.models.plan_prompt import (
    DEFAULT_LAYOUT,
    FIXED_EXAMPLES,
    FIXED_LAYOUT,
    PlanTask,
    PromptLayout,
    first_messages,
    shown_operators,
    static_prefix,
    task_suffix,
)
from tgms.models.plan_repair import (
    REPAIR_TEMPERATURE,
    REPEAT_TEMPERATURE,
    repair_messages,
    repeat_seed,
    repeat_temperature,
)
from tgms.models.plan_schema import (
    MAX_STEPS,
    SCHEMA_SCOPES,
    SCHEMAS,
    STEP_ID_PATTERN,
    per_operator_schema,
)
from tgms.models.plan_shape import reshape
from tgms.models.prompting import extract_json
from tgms.models.worked_plans import question_names, resolve_names

__all__ = [
    "DEFAULT_LAYOUT",
    "FIXED_EXAMPLES",
    "FIXED_LAYOUT",
    "PlanAttempt",
    "PlanOutcome",
    "PlanTask",
    "PlannerConfig",
    "PromptLayout",
    "first_messages",
    "plan_and_run",
    "plan_schema",
    "read_plan",
    "static_prefix",
    "task_suffix",
]

#: characters of a reply kept in its attempt's record
REPLY_RECORD_LIMIT = 4000
#: runtime error codes the model can act on (the rest, e.g. a backend failure, end the loop)
REPAIRABLE = ("E_COST", "E_NOT_FOUND", "E_INVALID_ARG", "E_UPSTREAM", "E_LIMIT", "E_SCHEMA", "E_GROUNDING")


def plan_schema(kind: str | None) -> dict[str, Any]:
    """The plan JSON schema for structured output: simple (servers differ in what they accept), arrays
    capped with ``maxItems`` (a tiny model otherwise loops inside one until ``max_tokens``)."""
    if kind is not None and kind not in ANSWER_KINDS:
        raise ModelOutputError(f"unknown answer kind {kind!r}", allowed=list(ANSWER_KINDS))
    kinds = [kind] if kind is not None else list(ANSWER_KINDS)
    step_id = {"type": "string", "pattern": STEP_ID_PATTERN}
    step = {
        "type": "object",
        "properties": {
            "id": step_id,
            "op": {"type": "string", "enum": [s.name for s in all_operators()]},
            "args": {"type": "object"},
            "depends_on": {"type": "array", "items": step_id, "maxItems": MAX_STEPS},
        },
        "required": ["id", "op", "args", "depends_on"],
    }
    return {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": MAX_STEPS},
            "answer_spec": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": kinds},
                    "from": {"type": "string", "maxLength": 120},
                },
                "required": ["kind", "from"],
            },
        },
        "required": ["steps", "answer_spec"],
    }


@dataclass(frozen=True)
class PlannerConfig:
    repair_budget: int = 3  # repairs after the first attempt
    contracts: bool = True  # the verifier's declared-output-field check (off: the no-contracts ablation)
    units: bool = True  # the verifier's units check (off: the no-units ablation)
    constrained: bool = False  # the older spelling of schema="generic" (kept for the existing ablation)
    #: the response format: "none", "generic" (plan_schema) or "per_operator" (models.plan_schema)
    schema: str = "none"
    #: per_operator only: the operators the union offers (None: all of them; retrieval narrows it)
    schema_ops: tuple[str, ...] | None = None
    #: per_operator, and the retry after a repeat, when ``schema_ops`` is None: the union offers the
    #: operators whose manual blocks the task's prompt shows (``"shown"``: a retrieved manual's), or every
    #: operator (``"all"``). The 17-operator union is a 74 KB schema: a grammar that large slowed the 0.5B
    #: model to ~280 s a task and let it start steps of operators it had not been shown (2026-12-05)
    schema_scope: str = "shown"
    max_tokens: int | None = None
    #: temperature of the seeded retry after a repeated reply (models.plan_repair)
    repeat_temperature: float = REPEAT_TEMPERATURE
    #: repairs sent greedy (temperature 0); later ones are seeded samples at ``repair_temperature``: a greedy
    #: decode of a repair prompt that differs from the last one only in the quoted plan tends to write the
    #: last repair again byte for byte (2 of 15 repair replies of the 1.5B model on 2026-12-05)
    greedy_repairs: int = 1
    repair_temperature: float = REPAIR_TEMPERATURE
    #: the retry after a repeated reply is also constrained by the per-operator schema (when no schema is
    #: sent otherwise): a model that keeps writing an argument its operator does not take, or a string
    #: where a number goes, cannot write it again
    repeat_schema: bool = True
    #: a reply that repeats an earlier attempt is asked again at once, sampled, without spending the
    #: budget, up to this many times a task (the 1.5B model's analyst run on 2026-12-05: 5 of 104 repair
    #: replies repeated the reply before them, and each one spent a repair on nothing)
    repeat_redraws: int = 2
    #: what goes in the static prefix and what in the task's message (models.plan_prompt): worked plans
    #: fixed or retrieved, the manual full or retrieved, the question's times as named constants
    layout: PromptLayout = DEFAULT_LAYOUT

    def __post_init__(self) -> None:
        if self.schema not in SCHEMAS:
            raise InvalidArgError(f"unknown plan schema {self.schema!r}", allowed=list(SCHEMAS))
        if self.schema_scope not in SCHEMA_SCOPES:
            raise InvalidArgError(
                f"unknown plan schema scope {self.schema_scope!r}", allowed=list(SCHEMA_SCOPES)
            )

    @property
    def schema_choice(self) -> str:
        """The schema sent: ``schema``, or "generic" when only ``constrained`` asks for one."""
        return "generic" if self.schema == "none" and self.constrained else self.schema

    def union_ops(self, task: PlanTask | None) -> tuple[str, ...] | None:
        """The operators a per-operator schema offers for ``task`` (None: all; see ``schema_scope``)."""
        if self.schema_ops is not None or task is None or self.schema_scope == "all":
            return self.schema_ops
        return shown_operators(task, self.layout)

    def response_schema(self, kind: str | None, task: PlanTask | None = None) -> dict[str, Any] | None:
        """The JSON schema the planner sends as the response format for a task of this answer kind (the
        per-operator union narrowed to what ``task``'s prompt shows, per ``schema_scope``)."""
        choice = self.schema_choice
        if choice == "per_operator":
            return per_operator_schema(kind, self.union_ops(task), self.layout.time_names)
        return plan_schema(kind) if choice == "generic" else None

    def retry_schema(self, kind: str | None, task: PlanTask | None = None) -> dict[str, Any] | None:
        """The response format of the retry after a repeated reply (see ``repeat_schema``)."""
        if self.schema_choice == "none" and self.repeat_schema:
            return per_operator_schema(kind, self.union_ops(task), self.layout.time_names)
        return self.response_schema(kind, task)

    def verifier_config(self, task_uids: frozenset[str]) -> VerifierConfig:
        off = [g for g, on in (("output_contracts", self.contracts), ("units", self.units)) if not on]
        return VerifierConfig.without(*off, task_uids=task_uids)


@dataclass
class PlanAttempt:
    """One emitted plan and what was wrong with it (the record's ``Attempt``)."""

    n: int
    sha256: str | None  # of the completed plan's canonical JSON; None when the reply held no plan
    valid: bool  # passed the static verifier
    violations: list[dict[str, Any]] = field(default_factory=list)
    runtime_error: dict[str, Any] | None = None
    #: the reply repeated an earlier attempt (same canonical plan, or byte-identical): not verified or run
    #: again; its problems are the earlier attempt's
    repeated: bool = False
    #: ``{temperature, seed}`` when this attempt's request was sampled (the retry after a repeat)
    sampling: dict[str, Any] | None = None
    #: the request re-asked a repair whose reply repeated (``PlannerConfig.repeat_redraws``): it did not
    #: spend the repair budget
    redraw: bool = False
    #: the model's reply as received (its first REPLY_RECORD_LIMIT characters): what `tgms ask --html`
    #: and a reader of the record see of a plan that never parsed or never ran
    reply: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "sha256": self.sha256,
            "valid": self.valid,
            "violations": self.violations,
            "runtime_error": self.runtime_error,
            "repeated": self.repeated,
            "sampling": self.sampling,
            "redraw": self.redraw,
            "reply": self.reply,
        }


@dataclass
class PlanOutcome:
    attempts: list[PlanAttempt]
    plan: dict[str, Any] | None = None  # the last plan that ran
    trace: Trace | None = None  # its trace (None when no plan ran)
    repaired: bool = False  # the accepted plan needed at least one repair
    exhausted: bool = False  # the budget ran out with a problem left

    @property
    def first_emission_valid(self) -> bool | None:
        return self.attempts[0].valid if self.attempts else None

    @property
    def repeat_replies(self) -> int:
        """Replies that repeated an earlier attempt (the issue-25 goal is 0 left unanswered by sampling)."""
        return sum(1 for a in self.attempts if a.repeated)


RunPlan = Callable[[dict[str, Any]], Trace]


def read_plan(reply: str, task: PlanTask, named: bool = False) -> dict[str, Any]:
    """The plan in a reply, completed with the task's plan_id and question; ModelOutputError if none.
    With ``named``, the question's named times (``"T1"``) in step args become their numbers."""
    raw = extract_json(reply)
    if isinstance(raw, dict) and set(raw) == {"plan"} and isinstance(raw["plan"], dict):
        raw = raw["plan"]  # a wrapper some models add
    if not isinstance(raw, dict):
        raise ModelOutputError("the reply's JSON is not an object {steps, answer_spec}")
    raw, _ = reshape(raw)  # a bare step wrapped, arguments beside op moved into args (models.plan_shape)
    try:
        check_depth(raw)
    except TGMSError as err:
        raise ModelOutputError("the plan is nested too deeply", problems=[err.message]) from err
    if named:
        raw, _ = resolve_names(raw, question_names(task.question, task.input_uids))
    return {**raw, "plan_id": task.task_id, "question": task.question}


def plan_sha256(plan: dict[str, Any]) -> str | None:
    try:
        return sha256_hex(canonical_json(plan))
    except (TGMSError, TypeError, ValueError):
        return None


def runtime_problem(trace: Trace) -> dict[str, Any] | None:
    """The first failure of a run as ``{error, message, details}`` with the step, or None when it answered.
    A step skipped because its dependency failed is not reported (the dependency is)."""
    for rec in trace.steps:
        if rec.status in ("error", "refused") and rec.error:
            return {**rec.error, "step": rec.id}
    got = trace.answer()
    if got is not None and "error" in got:
        return {
            "error": "E_INVALID_ARG",
            "message": f"answer_spec.from = {got['from']}: {got['error']}",
            "details": {"field": "answer_spec.from"},
            "step": got["from"].split(".", 1)[0],
        }
    return None


def plan_and_run(
    complete: Complete,
    task: PlanTask,
    ctx: OpContext,
    run_plan: RunPlan,
    config: PlannerConfig | None = None,
    outcome: PlanOutcome | None = None,
) -> PlanOutcome:
    """Plan, verify, run, and repair up to ``config.repair_budget`` times (see the module docstring).

    Attempts are appended to ``outcome`` as they happen (pass one in to keep them when the client raises
    part way, e.g. an endpoint that fails after two attempts). A repeated reply spends one attempt of the
    budget like any other: the budget bounds the requests a task makes.

    Raises only what the client raises (InfraError, ResponseError): a model that never produces a usable
    plan ends with ``outcome.exhausted`` and every attempt logged.
    """
    cfg = config or PlannerConfig()
    vcfg = cfg.verifier_config(frozenset(task.input_uids))
    schema = cfg.response_schema(task.kind, task)
    base = first_messages(task, cfg.layout)
    messages = base
    outcome = outcome if outcome is not None else PlanOutcome(attempts=[])
    by_plan: dict[str, tuple[PlanAttempt, list[dict[str, Any]], bool]] = {}
    by_reply: dict[str, tuple[PlanAttempt, list[dict[str, Any]], bool]] = {}
    sampling: Sampling | None = None
    constrain_retry = False  # the retry after a repeat also sends the per-operator schema
    tries = cfg.repair_budget + 1
    counted = 0  # requests that spent the budget (a redraw after a repeat does not)
    redraws = 0
    redraw = False  # the next request is a redraw
    n = 0
    while True:
        n += 1
        # the keyword only when sampling: a completion function without it serves every greedy request
        extra = {"sampling": sampling} if sampling is not None else {}
        sent = cfg.retry_schema(task.kind, task) if constrain_retry else schema
        completion = complete("planner", messages, sent, cfg.max_tokens, **extra)
        reply = completion.text
        plan, parse_problem = _read(reply, task, completion.finish_reason, cfg.layout.time_names)
        sha = plan_sha256(plan) if plan is not None else None
        earlier = by_reply.get(reply) or (by_plan.get(sha) if sha is not None else None)
        if earlier is not None:  # the same plan again: the same problems, nothing to verify or run twice
            first, problems, runtime = earlier
            attempt = PlanAttempt(
                n, sha, first.valid, list(first.violations), first.runtime_error, repeated=True
            )
        else:
            attempt, problems, runtime = _attempt(
                n, plan, parse_problem, sha, ctx, vcfg, run_plan, outcome, task
            )
            by_reply[reply] = (attempt, problems, runtime)
            if sha is not None:
                by_plan[sha] = (attempt, problems, runtime)
        attempt.sampling = sampling.to_dict() if sampling is not None else None
        attempt.reply = reply[:REPLY_RECORD_LIMIT]
        attempt.redraw = redraw
        outcome.attempts.append(attempt)
        counted += 0 if redraw else 1
        if not problems:
            outcome.repaired = n > 1
            return outcome
        if runtime and attempt.runtime_error and attempt.runtime_error.get("error") not in REPAIRABLE:
            return outcome  # nothing the model can change: the caller reports the failed trace
        # a repeated reply is asked again at once (a redraw, up to ``repeat_redraws`` a task) without
        # spending the budget: the repair it repeated never got an answer, and the budget's last request
        # repeating would otherwise end the loop on a plan already refused
        redraw = attempt.repeated and redraws < cfg.repeat_redraws
        redraws += redraw
        if counted >= tries and not redraw:
            break
        if attempt.repeated:
            # the repair again without the failing steps in the quote, sampled: at temperature 0 the same
            # prompt can only get the same reply; the seed keeps the sampled request one fixed, cacheable
            # request, and each further repeat samples hotter
            repeats = outcome.repeat_replies
            sampling = Sampling(
                repeat_temperature(repeats, cfg.repeat_temperature), repeat_seed(task.task_id, n + 1)
            )
            constrain_retry = True
            messages = repair_messages(base, reply, plan, problems, runtime, counted, tries, repeated=True)
        else:
            # the next request is repair n: greedy for the first ``greedy_repairs``, then seeded samples
            greedy = counted <= cfg.greedy_repairs
            sampling = None if greedy else Sampling(cfg.repair_temperature, repeat_seed(task.task_id, n + 1))
            constrain_retry = False
            messages = repair_messages(base, reply, plan, problems, runtime, counted, tries)
    outcome.exhausted = True
    return outcome


def _read(
    reply: str, task: PlanTask, finish_reason: str | None = None, named: bool = False
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The reply's plan, or the problem that says why it holds none: an empty reply, a reply cut off at
    ``max_tokens`` (a model that loops inside a list until the limit), or one with no JSON object."""
    try:
        return read_plan(reply, task, named), None
    except ModelOutputError as err:
        if finish_reason == "length":
            return None, {
                "code": "max_tokens",
                "message": "the reply reached the token limit before the plan was complete; write a shorter "
                "plan (fewer steps, no repeated list items) as one JSON object {steps, answer_spec}",
                "legal": None,
            }
        if not reply.strip():
            return None, {
                "code": "empty_reply",
                "message": "the reply was empty; reply with one JSON object {steps, answer_spec}",
                "legal": None,
            }
        return None, {
            "code": "unparseable",
            "message": err.message + "; reply with one JSON object {steps, answer_spec}",
            "legal": err.details.get("problems"),
        }


#: fields of a step that never answer a question (page bookkeeping)
_BOOKKEEPING = frozenset({"truncated", "cursor"})


def answer_spec_choices(plan: dict[str, Any], kind: str | None) -> list[dict[str, Any]]:
    """Concrete answer_specs for a plan that has none: the last step's declared output fields (page
    bookkeeping left out). Concrete, because Qwen2.5-Coder-0.5B copied a placeholder such as
    ``"<step id>.<declared output field>"`` into its repaired plan word for word."""
    steps = plan.get("steps") if isinstance(plan.get("steps"), list) else []
    last = steps[-1] if steps and isinstance(steps[-1], dict) else {}
    op, sid = last.get("op"), last.get("id")
    try:
        fields = get_operator(op).declared_outputs if isinstance(op, str) and isinstance(sid, str) else ()
    except TGMSError:  # an unknown operator: its own violation says so
        fields = ()
    chosen = kind or "count"
    return [{"kind": chosen, "from": f"{sid}.{f}"} for f in fields if f not in _BOOKKEEPING]


def _attempt(
    n: int,
    plan: dict[str, Any] | None,
    parse_problem: dict[str, Any] | None,
    sha: str | None,
    ctx: OpContext,
    vcfg: VerifierConfig,
    run_plan: RunPlan,
    outcome: PlanOutcome,
    task: PlanTask,
) -> tuple[PlanAttempt, list[dict[str, Any]], bool]:
    """One new attempt: (its log entry, the problems to send back, whether they came from a run)."""
    if plan is None:
        problem = parse_problem or {"code": "unparseable", "message": "the reply holds no plan"}
        return PlanAttempt(n, None, False, [problem]), [problem], False
    try:
        report = verify_plan(plan, ctx, vcfg)
        violations = [v.to_dict() for v in report.violations]
    except TGMSError as err:  # a plan the verifier cannot even walk
        violations = [{"code": "schema", "message": err.message, "legal": err.details.get("problems")}]
    if "answer_spec" not in plan:  # the engine runs such a plan, but nothing in it answers the question
        violations.append(
            {
                "code": "answer_spec",
                "field": "answer_spec",
                "step": None,
                "message": "the plan has no answer_spec: add {kind, from} naming the step field that answers",
                "legal": answer_spec_choices(plan, task.kind),
            }
        )
    if violations:
        return PlanAttempt(n, sha, False, violations), violations, False
    try:
        trace = run_plan(plan)
    except TGMSError as err:  # e.g. E_SCHEMA from build_plan with checks switched off
        error = {**err.to_dict(), "step": None}
        return PlanAttempt(n, sha, True, [], error), [error], True
    outcome.plan, outcome.trace = plan, trace
    run_problem = runtime_problem(trace)
    if run_problem is None:
        return PlanAttempt(n, sha, True), [], False
    return PlanAttempt(n, sha, True, [], run_problem), [run_problem], True
