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
from typing import Any

from tgms.engine.api import CorruptError
from tgms.pipeline.scoring.metrics import TaskOutcome

#: the claim types the gate acts on (engine.claims.gate.GATED_TYPES; pattern claims are not gated)
GATED_TYPES = ("count", "value", "entity", "ordering")
#: query-attempt violations that still mean the query ran (text_to_cypher: "the query returned no rows")
RAN_VIOLATIONS = frozenset({"empty_result"})


def outcome_of(record: Mapping[str, Any]) -> TaskOutcome | None:
    """The scored outcome of one record, or None when it is not scored (``correct`` is None).

    Raises ``CorruptError`` for a record without ``task_id``/``system``, or whose stored ``correct``
    disagrees with the emitted answer re-scored by the typed rule (a record that contradicts itself).
    """
    for key in ("task_id", "system"):
        if not isinstance(record.get(key), str):
            raise CorruptError(f"a task record lacks {key!r}", keys=sorted(record)[:20])
    if record.get("correct") is None:
        return None
    tokens = record.get("tokens") or {}
    known_tokens = not tokens.get("unreported_calls")
    latency = record.get("latency_s")
    repeats = record.get("repeat_replies")
    out = TaskOutcome(
        task_id=record["task_id"],
        system=record["system"],
        kind=record.get("answer_kind") or "",
        gold=record.get("gold"),
        emitted=record.get("status") == "answered",
        predicted=record.get("predicted"),
        plan_valid_first=record.get("first_emission_valid"),
        repeat_replies=repeats,
        repair_replies=max(0, len(record.get("attempts") or []) - 1) if repeats is not None else None,
        executed=executed_of(record),
        unsupported=unsupported_of(record),
        tokens=int(tokens.get("prompt", 0)) + int(tokens.get("completion", 0)) if known_tokens else None,
        latency_s=float(latency) if latency is not None else None,
        family=record.get("family"),
    )
    if out.correct != bool(record["correct"]):
        raise CorruptError(
            "a task record's score disagrees with its answer re-scored by the typed rule",
            task_id=out.task_id,
            system=out.system,
            recorded=record["correct"],
            rescored=out.correct,
        )
    return out


def executed_of(record: Mapping[str, Any]) -> bool | None:
    """Whether the system's plan (or query) executed; None when the system attempted none."""
    if record.get("trace_status") is not None:
        return record["trace_status"] == "ok"
    attempts = record.get("attempts") or []
    if not attempts:
        return None
    return any(_ran(a) for a in attempts)


def _ran(attempt: Mapping[str, Any]) -> bool:
    if attempt.get("runtime_error") is not None:
        return False
    if attempt.get("valid"):
        return True
    problems = {v.get("problem") for v in attempt.get("violations") or []}
    return bool(problems) and problems <= RAN_VIOLATIONS


def unsupported_of(record: Mapping[str, Any]) -> bool | None:
    """Answer-level unsupported claim (see the module doc); None when not measured."""
    verdicts = record.get("claim_verdicts") or []
    answer = record.get("answer")
    if not verdicts or record.get("status") != "answered" or not isinstance(answer, Mapping):
        return None
    by_claim = {v.get("claim"): v.get("verdict") for v in verdicts}
    gated = [c for c in answer.get("claims") or [] if c.get("type") in GATED_TYPES]
    return any(by_claim.get(c.get("id")) == "unsupported" for c in gated)


def latest_by_task(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One record per (system, task): the last one written wins (records are appended in the order they
    finish, so a task retried on resume after an infrastructure error is represented by its retry)."""
    last: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in records:
        last[(str(r.get("system")), str(r.get("task_id")))] = r
    return list(last.values())
