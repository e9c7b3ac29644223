"""From a campaign's per-task records (``TaskRecord`` JSON) to the scoring layer's :class:`TaskOutcome`.

The records are the campaign's raw results; the metrics and the paired bootstrap are computed from these
outcomes, never from a second bookkeeping path. What each field is read from:

- ``emitted``: ``status == "answered"`` (the runner sets it only when a typed answer was emitted; an
  abstention, a model error or an honest refusal emitted nothing and is scored wrong);
- ``predicted`` / ``gold`` / ``kind``: the record's ``predicted``, ``gold`` and ``answer_kind``;
- ``plan_valid_first``: ``first_emission_valid`` (None for a system without plans or queries);
- ``repeat_replies`` / ``repair_replies``: the record's ``repeat_replies`` (tgms: repair replies that
  repeated an earlier attempt) and its attempts after the first; both None when it has no count;
- ``executed``: for ``tgms`` the accepted plan's trace ran every step (``trace_status == "ok"``); for a
  system with query attempts but no trace (``text_to_cypher``) some attempt ran — valid, or valid but for
  an empty result; None when nothing was attempted (the baselines without plans);
- ``unsupported``: answer level — among the *emitted* answer's claims of a gated type (count, value,
  entity, ordering: the gate's types), at least one has the claim verifier's verdict ``unsupported``.
  Measured only when the claims were verified (``claim_verdicts`` present) and an answer was emitted; with
  gating on the gate has dropped such claims already, so a non-zero rate shows up under ``no_gating``;
- ``tokens``: prompt + completion tokens, None when a model call reported no usage (a partial sum would
  understate the mean);
- ``latency_s``: the task's wall time.

A record with ``correct is None`` (``infra_error``, or a question without gold) is not scored:
:func:`outcome_of` returns None and the caller counts it in ``n_unscored_infra``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tgms.engine.api import CorruptError
from tgms.pipeline.scoring.metrics import TaskOutcome
from tgms.pipeline.systems.record import Attempt, TaskRecord

#: the claim types the gate acts on (engine.claims.gate.GATED_TYPES; pattern claims are not gated)
GATED_TYPES = ("count", "value", "entity", "ordering")
#: query-attempt violations that still mean the query ran (text_to_cypher: "the query returned no rows")
RAN_VIOLATIONS = frozenset({"empty_result"})


def outcome_of(record: TaskRecord) -> TaskOutcome | None:
    """The scored outcome of one record, or None when it is not scored (``correct`` is None).

    Raises ``CorruptError`` for a record whose stored ``correct`` disagrees with the emitted answer
    re-scored by the typed rule (a record that contradicts itself).
    """
    if record.correct is None:
        return None
    tokens = record.tokens
    known_tokens = not tokens.unreported_calls
    repeats = record.repeat_replies
    out = TaskOutcome(
        task_id=record.task_id,
        system=record.system,
        kind=record.answer_kind or "",
        gold=record.gold,
        emitted=record.status == "answered",
        predicted=record.predicted,
        plan_valid_first=record.first_emission_valid,
        repeat_replies=repeats,
        repair_replies=max(0, len(record.attempts) - 1) if repeats is not None else None,
        executed=executed_of(record),
        unsupported=unsupported_of(record),
        tokens=tokens.prompt + tokens.completion if known_tokens else None,
        latency_s=record.latency_s,
        family=record.family,
    )
    if out.correct != record.correct:
        raise CorruptError(
            "a task record's score disagrees with its answer re-scored by the typed rule",
            task_id=out.task_id,
            system=out.system,
            recorded=record.correct,
            rescored=out.correct,
        )
    return out


def executed_of(record: TaskRecord) -> bool | None:
    """Whether the system's plan (or query) executed; None when the system attempted none."""
    if record.trace_status is not None:
        return record.trace_status == "ok"
    if not record.attempts:
        return None
    return any(_ran(a) for a in record.attempts)


def _ran(attempt: Attempt) -> bool:
    if attempt.runtime_error is not None:
        return False
    if attempt.valid:
        return True
    problems = {v.get("problem") for v in attempt.violations}
    return bool(problems) and problems <= RAN_VIOLATIONS


def unsupported_of(record: TaskRecord) -> bool | None:
    """Answer-level unsupported claim (see the module doc); None when not measured."""
    verdicts = record.claim_verdicts
    answer = record.answer
    if not verdicts or record.status != "answered" or not isinstance(answer, Mapping):
        return None
    by_claim = {v.get("claim"): v.get("verdict") for v in verdicts}
    gated = [c for c in answer.get("claims") or [] if c.get("type") in GATED_TYPES]
    return any(by_claim.get(c.get("id")) == "unsupported" for c in gated)


def latest_by_task(records: Iterable[TaskRecord]) -> list[TaskRecord]:
    """One record per (system, task): the last one written wins (records are appended in the order they
    finish, so a task retried on resume after an infrastructure error is represented by its retry)."""
    last: dict[tuple[str, str], TaskRecord] = {}
    for r in records:
        last[(r.system, r.task_id)] = r
    return list(last.values())
