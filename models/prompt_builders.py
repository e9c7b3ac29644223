"""The registry of prompt builders: every function that puts stored (or user-given) strings into a prompt.

The prompt-injection boundary (DESIGN §3.5, docs/security.md) holds only if *every* such builder fences
what it is given. This registry makes the builders discoverable, so the red-team tests
(``tests/redteam/``) can run every fixture through every builder: a :class:`PromptBuilder` has a name
and a ``build(s)`` that returns the messages the builder makes when the string ``s`` stands in every slot
that holds untrusted text (node uids, labels and properties, relation types, operator rows, error details,
query rows, retrieved chunks, the question, ...). It is a function of ``s`` only, so a test can call it
with a benign string and with each fixture and compare.

The LLM-side builders of :mod:`models` are registered below; the systems of :mod:`pipeline` register
theirs in :mod:`pipeline.systems.prompt_builders` (``models`` may not import ``pipeline``). Adding a
builder is one entry (see the evolution memory's two at the end)::

    register(PromptBuilder("memory.notes", lambda s: notes_block(_notes(s)), slots="stored notes"))

:func:`with_fixture` puts ``s`` into every string of a sample value; ``build`` may return a message list
or one prompt string (taken as a user message).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tgms.engine.api import MemoryResults, Trace, digest, trace_from_dict
from tgms.models.answerer import answer_messages, retry_messages
from tgms.models.memory import notes_block, summary_messages
from tgms.models.memory_facts import Fact, WeekFacts, week_of
from tgms.models.memory_store import Note
from tgms.models.plan_repair import repair_messages
from tgms.models.planner import PlanTask, PromptLayout, first_messages
from tgms.models.reporter import SYSTEM as REPORTER_SYSTEM
from tgms.models.reporter import reporter_prompt
from tgms.models.worked_plans import WorkedPlan

Prompt = str | list[dict[str, Any]]


@dataclass(frozen=True)
class PromptBuilder:
    """One prompt builder, fed a fixture string in every slot that holds untrusted text."""

    name: str
    build: Callable[[str], Prompt]
    #: the whole prompt's characters at most, whatever ``s`` is (a 1 MB fixture included)
    max_chars: int = 64_000
    #: what ``s`` stands for (read by people, and by docs/security.md)
    slots: str = ""

    def messages(self, s: str) -> list[dict[str, Any]]:
        return messages_of(self.build(s))


_BUILDERS: dict[str, PromptBuilder] = {}


def register(builder: PromptBuilder) -> PromptBuilder:
    if builder.name in _BUILDERS:
        raise RuntimeError(f"prompt builder {builder.name!r} registered twice")
    _BUILDERS[builder.name] = builder
    return builder


def prompt_builders() -> list[PromptBuilder]:
    """Every registered builder, by name (import :mod:`pipeline.systems.prompt_builders` for the systems')."""
    return [_BUILDERS[k] for k in sorted(_BUILDERS)]


def messages_of(prompt: Prompt) -> list[dict[str, Any]]:
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt


def storable(s: str) -> str:
    """``s`` as the store would hold it: a lone surrogate is not UTF-8, so the store refuses it
    (``E_INVALID_ARG``) and no stored value can carry one; user-given text (a question) still can."""
    return s.encode("utf-8", "replace").decode("utf-8")


def with_fixture(sample: Any, s: str) -> Any:
    """A copy of a JSON-like ``sample`` with every string (dict keys too) replaced by ``s``; keys get a
    numbered suffix so that none collide."""
    if isinstance(sample, str):
        return s
    if isinstance(sample, dict):
        return {f"{s}{i}": with_fixture(v, s) for i, v in enumerate(sample.values())}
    if isinstance(sample, (list, tuple)):
        return [with_fixture(v, s) for v in sample]
    return sample


def fixture_trace(s: str) -> Trace:
    """A two-step trace whose rows, labels, properties and error details hold ``s``: an ``entity_history``
    that answered, a ``temporal_reachability`` that failed with an error echoing ``s``; its answer_spec
    reads a uid (so the engine's answer value is ``s`` too)."""
    s = storable(s)
    payload = {
        "rows": [
            {"uid": s, "label": s, "props": {s: s, "note": s}, "vt_s": 1, "vt_e": 2, "source": s},
            {"uid": "n1", "label": "node", "props": {}, "vt_s": 2, "vt_e": 3, "source": None},
        ],
        "rows_total": 2,
        "edges": [{"src": s, "dst": "n1", "rel_type": s, "props": {"w": s}}],
        "edges_total": 1,
        "truncated": False,
        "cursor": None,
    }
    envelope = {"op": "entity_history", "args_echo": {"uid": s}, "payload": payload}
    envelope["result_digest"] = digest(payload)
    results = MemoryResults()
    ok = {
        "id": "s1", "op": "entity_history", "depends_on": [], "status": "ok", "rows": 2, "rows_total": 2,
        "result_digest": digest(payload), "envelope_digest": results.put(envelope),
    }  # fmt: skip
    failed = {
        "id": "s2", "op": "temporal_reachability", "depends_on": [], "status": "error",
        "error": {"error": "E_NOT_FOUND", "message": f"no node {s}", "details": {"uid": s, "legal": [s]}},
    }  # fmt: skip
    spec = {"kind": "entity", "from": "s1.rows[0].uid"}
    return trace_from_dict(
        {"plan_id": "fixture", "question": s, "answer_spec": spec, "steps": [ok, failed]}, results
    )


def _plan_task(s: str, kind: str | None = "count") -> PlanTask:
    return PlanTask("t/fixture", s, (s, "n1"), kind, s)


def _problems(s: str) -> list[dict[str, Any]]:
    """Verifier violations and a runtime error whose messages, legal lists and details echo ``s``."""
    return [
        {"code": "grounding", "step": "s1", "field": "args.uid", "message": f"uid {s} is not grounded",
         "legal": [s, "n1"]},
        {"error": "E_NOT_FOUND", "message": f"no node {s}", "step": "s2",
         "details": {"suggestions": [s], "legal": [s], "allowed": [s]}},
    ]  # fmt: skip


register(
    PromptBuilder(
        "planner.first_request",
        lambda s: first_messages(_plan_task(s)),
        slots="the task's question, input uids and dataset card",
    )
)


def _worked(s: str) -> WorkedPlan:
    """A retrieved worked plan (from a suite file: data) whose question, uids and plan echo ``s``."""
    plan = {"steps": [{"id": "s1", "op": "resolve_entities", "args": {"query": s}, "depends_on": []}],
            "answer_spec": {"kind": "entity", "from": "s1.rows[0].uid"}}  # fmt: skip
    return WorkedPlan(f"Who is {s} at 1083369600000000 µs?", (s,), "entity", plan, "train/fixture")


register(
    PromptBuilder(
        "plan_prompt.worked_plans",
        lambda s: first_messages(
            PlanTask("t/fixture", "How many?", ("n1",), "count", "card", examples=(_worked(s),)),
            PromptLayout("retrieved", "retrieved"),
        ),
        slots="a retrieved worked plan's question, input uids and plan (a suite's train split)",
    )
)
register(
    PromptBuilder(
        "planner.first_request_kind",
        lambda s: first_messages(_plan_task("How many?", kind=s)),
        slots="an answer kind from outside the contract",
    )
)


def _bad_plan(s: str) -> dict[str, Any]:
    """A plan the model wrote that echoes ``s`` in its step ids, operator, arguments and answer_spec."""
    return {
        "plan_id": "t/fixture",
        "question": s,
        "steps": [{"id": s, "op": s, "args": {"uid": s, s: [s]}, "depends_on": [s]}],
        "answer_spec": {"kind": "count", "from": f"{s}.rows_total"},
    }


def _step_problems(s: str) -> list[dict[str, Any]]:
    """Problems naming a step and a field the model wrote (``s``), as the verifier reports them."""
    return [{"code": "output_field", "step": s, "field": f"args.{s}", "message": s, "legal": [s, "rows"]}]


register(
    PromptBuilder(
        "plan_repair.unreadable_reply",
        lambda s: repair_messages(first_messages(_plan_task(s)), s, None, _problems(s), True, 1, 4),
        slots="the bad reply (quoted as data), violations and runtime errors echoing stored values",
    )
)
register(
    PromptBuilder(
        "plan_repair.plan",
        lambda s: repair_messages(
            first_messages(_plan_task(s)), "{}", _bad_plan(s), _step_problems(s), False, 2, 4
        ),
        slots="the bad plan (quoted as data), its step ids and fields named as repair targets",
    )
)
register(
    PromptBuilder(
        "reporter.first_request",
        lambda s: answer_messages(
            system=REPORTER_SYSTEM, user=reporter_prompt(s, fixture_trace(s)), kind="entity"
        ),
        slots="the question, operator rows (uids, labels, props, rel types), error details, answer value",
    )
)
register(
    PromptBuilder(
        "answerer.retry",
        lambda s: retry_messages(
            answer_messages(system="You answer.", user="Evidence: none.", kind="count"),
            "{}",
            [s, f"answer.value must be a non-negative integer ({s})"],
        ),
        slots="the problems of a malformed reply (they quote the reply, which may quote stored data)",
    )
)


def _week_facts(s: str) -> WeekFacts:
    """A week's facts whose stored values (a top sender's uid, the args it was read with) hold ``s``."""
    s = storable(s)
    week = week_of(1_082_000_000_000_000)
    return WeekFacts(
        week,
        7,
        [
            Fact("events", 12, "aggregate_events", {"window": week.window}, "rows[0].count"),
            Fact("top_sender_1", s, "aggregate_events", {"node": s}, "rows[0].src"),
        ],
    )


def _notes(s: str) -> list[Note]:
    """Two notes whose text (the model's summary of stored values) holds ``s``."""
    s = storable(s)
    week = week_of(1_082_000_000_000_000)
    w = week.window
    return [
        Note(f"m{i}", week.label, w["t_a"], w["t_b"], s, 7, "m", "0" * 64, [{"value": s}]) for i in (1, 2)
    ]


register(
    PromptBuilder(
        "memory.summary",
        lambda s: summary_messages(_week_facts(s)),
        slots="a week's operator-computed facts (uids of top senders, the calls' args)",
    )
)
register(
    PromptBuilder(
        "memory.notes",
        lambda s: notes_block(_notes(s)),
        slots="stored notes: the model's summaries of stored values",
    )
)
