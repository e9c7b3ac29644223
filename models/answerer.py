"""Ask a model for the typed answer object, check it, and retry once with what was wrong.

Every system ends the same way (DESIGN §4: the same answer format for all): a prompt that fences the
evidence it has (a trace summary, retrieved chunks, an edge list, query rows) and states the answer
contract of :mod:`models.answer_format`; the reply is read with :func:`~models.answer_format.read_answer`;
a malformed reply gets exactly one retry that quotes it, as data, with its problems. What is left unusable
after the retry is returned as ``None`` with the problems, and the caller decides the fallback (the TGMS
reporter falls back to the mechanical answer; a baseline abstains).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from tgms.models.answer_format import answer_instructions, answer_schema, read_answer
from tgms.models.client import Completion
from tgms.models.config import Sampling
from tgms.models.errors import ModelOutputError
from tgms.models.prompting import fence

#: characters of the problems, and of the bad reply, quoted in a retry
PROBLEMS_LIMIT = 1500
REPLY_LIMIT = 1500


class Complete(Protocol):
    """``complete(role, messages, schema, max_tokens)``: the caller's logged completion function.

    ``sampling`` (keyword) overrides the endpoint's temperature and seed for one request; only the
    planner's seeded retry of a repeated repair passes it, so a function without it serves every other role.
    """

    def __call__(
        self,
        role: str,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        *,
        sampling: Sampling | None = None,
    ) -> Completion: ...


@dataclass
class AnswerResult:
    answer: dict[str, Any] | None  # the checked answer object, or None after a failed retry
    source: str  # "llm" (first reply), "llm_retry" (after the retry) or "none"
    problems: list[str] = field(default_factory=list)  # of the last unusable reply


def answer_messages(*, system: str, user: str, kind: str, with_claims: bool = True) -> list[dict[str, Any]]:
    """The first request :func:`ask_answer` sends (callers measure it before asking, e.g. for a window)."""
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user + "\n\n" + answer_instructions(kind, with_claims)},
    ]


def retry_messages(messages: list[dict[str, Any]], reply: str, problems: list[str]) -> list[dict[str, Any]]:
    """The retry after a malformed reply: the first request with, in its user turn, the reply quoted as data
    and its problems. Not an assistant turn: at temperature 0 a model continues a replayed reply as its own
    and writes it again (the planner's repairs measured 14 of 14, issue 25). Both are fenced: the reply may
    quote stored data (docs/security.md)."""
    *head, user = messages
    retry = (
        "Your previous reply, quoted below as data, cannot be used:\n"
        + fence(reply, "previous_reply", REPLY_LIMIT)
        + "\nIts problems:\n"
        + fence("\n".join(f"- {p}" for p in problems), "problems", PROBLEMS_LIMIT)
        + "\nReply again with only the JSON object, following the contract exactly."
    )
    return [*head, {**user, "content": f"{user['content']}\n\n{retry}"}]


def ask_answer(
    complete: Complete,
    *,
    role: str,
    system: str,
    user: str,
    kind: str,
    with_claims: bool = True,
    structured: bool = True,
    max_tokens: int | None = None,
) -> AnswerResult:
    """The answer object for ``kind`` from one reply, or from one retry after a malformed reply.

    ``system`` should be static across tasks (servers reuse a cached prefix); the answer contract is
    appended to ``user``. ``structured`` sends :func:`answer_schema` as the response format.
    """
    schema = answer_schema(kind, with_claims) if structured else None
    messages = answer_messages(system=system, user=user, kind=kind, with_claims=with_claims)
    reply = complete(role, messages, schema, max_tokens)
    try:
        return AnswerResult(read_answer(reply.text, kind), "llm")
    except ModelOutputError as err:
        problems = [str(p) for p in err.details.get("problems", [err.message])]
    reply = complete(role, retry_messages(messages, reply.text, problems), schema, max_tokens)
    try:
        return AnswerResult(read_answer(reply.text, kind), "llm_retry")
    except ModelOutputError as err:
        return AnswerResult(None, "none", [str(p) for p in err.details.get("problems", [err.message])])
