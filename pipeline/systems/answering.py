"""The last step every baseline shares: fit the evidence into the window, ask for the answer, record it.

A baseline builds a static system prompt and a user prompt with its fenced evidence; this module measures
the exact first request (:func:`models.answerer.answer_messages`), refuses honestly when it does not fit
the endpoint's window (status ``refused``, no model call), and otherwise asks once, with one retry on a
malformed reply (:func:`models.answerer.ask_answer`). The baselines ask without claims: they have no trace
steps a claim could cite, and they are scored on the typed answer alone, like every system. After a failed
retry the baseline abstains (status ``abstained``, the reply's problems in ``errors``).
"""

from __future__ import annotations

from typing import Any

from tgms.engine.api import InvalidArgError
from tgms.models.answerer import answer_messages, ask_answer
from tgms.models.errors import ModelOutputError
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import RecordDraft, SystemEnv
from tgms.pipeline.systems.prompt_size import over_window, prompt_size, refusal

WITH_CLAIMS = False


def required_kind(task: Task) -> str:
    """The answer kind a baseline asks for: a baseline has no planner to choose one, so a task without it
    (a user's question) is refused (``E_INVALID_ARG``, recorded as the task's error)."""
    if task.answer_kind is None:
        raise InvalidArgError(f"task {task.id}: a baseline needs the task's answer_kind", task_id=task.id)
    return task.answer_kind


def answer_from_context(
    rec: RecordDraft,
    env: SystemEnv,
    *,
    system: str,
    user: str,
    kind: str,
    tokenizer: str | None,
    context: dict[str, Any],
) -> None:
    """Record ``context`` plus the prompt's size, then refuse, abstain or answer (see the module doc)."""
    s = env.settings.generation
    size = prompt_size(
        answer_messages(system=system, user=user, kind=kind, with_claims=WITH_CLAIMS), tokenizer
    )
    rec.record.context = {**context, **size.as_dict()}
    if over_window(size, s.max_model_len, s.max_tokens):
        rec.record.status = "refused"
        rec.record.errors.append(refusal(size, s.max_model_len, s.max_tokens))
        return
    result = ask_answer(
        rec.calls.complete, role="answerer", system=system, user=user, kind=kind, with_claims=WITH_CLAIMS
    )
    rec.record.extras["answer_source"] = result.source
    if result.answer is None:
        rec.record.status = "abstained"
        rec.record.errors.append(
            ModelOutputError("no usable answer object", problems=result.problems).to_dict()
        )
        return
    rec.record.answer = result.answer
    rec.record.status = "answered"
