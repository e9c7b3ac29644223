"""What one trace page shows, gathered from whichever source produced it, and the document ``tgms ask
--save`` writes.

The saved document is one JSON object ``{question, record, plan, trace}``: ``record`` the per-task record
(answer, claim verdicts, gate, attempts), ``plan`` the plan that ran, ``trace`` the trace with every step's
result envelope and resolved arguments embedded (``Trace.to_dict(envelopes=True)``), so the evidence
travels with the file and is authenticated by its digest when read back. An optional ``evidence`` object
(step id -> payload) is accepted from hand-written documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tgms.pipeline.systems.record import TaskRecord

#: the ``source`` of a view, shown on the page
SOURCES = {"ask": "tgms ask", "plan_run": "tgms plan run", "trace": "a trace"}


@dataclass
class TraceView:
    question: str
    source: str  # a key of SOURCES
    trace: dict[str, Any] | None = None  # Trace.to_dict(); embedded envelopes are not needed here
    plan: dict[str, Any] | None = None  # the plan as run (or as last attempted)
    answer: dict[str, Any] | None = None  # the answer object before gating: every claim the reporter made
    emitted: dict[str, Any] | None = None  # what the gate let out (None: abstained or not gated)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    gate: dict[str, Any] | None = None  # gate(): emitted, abstained, reason, dropped
    record: TaskRecord | None = None  # the per-task record (tgms ask): model, attempts, errors
    evidence: dict[str, Any] = field(default_factory=dict)  # step id -> payload
    evidence_ok: dict[str, bool] = field(default_factory=dict)  # step id -> payload matches result digest
    resolved_args: dict[str, Any] = field(default_factory=dict)  # step id -> arguments with refs resolved
    notes: list[str] = field(default_factory=list)  # what the viewer could not show, and why

    @property
    def verified(self) -> bool:
        """Whether the claims carry verdicts (a plan-run output viewed without a store has none)."""
        return self.gate is not None or bool(self.verdicts)


def view_from_ask(
    question: str,
    record: TaskRecord,
    plan: dict[str, Any] | None,
    trace: dict[str, Any] | None,
    evidence: dict[str, Any] | None = None,
    resolved_args: dict[str, Any] | None = None,
) -> TraceView:
    """The view of one ``tgms ask`` run."""
    extras = record.extras
    answer = extras.get("reporter_answer") or record.answer
    return TraceView(
        question=question,
        source="ask",
        trace=trace,
        plan=plan or (trace or {}).get("plan") or extras.get("plan"),
        answer=answer,
        emitted=record.answer,
        verdicts=list(record.claim_verdicts),
        gate=record.gate,
        record=record,
        evidence=dict(evidence or {}),
        resolved_args=dict(resolved_args or {}),
    )


def ask_document(
    question: str, record: TaskRecord, plan: dict[str, Any] | None, trace: dict[str, Any] | None
) -> dict[str, Any]:
    """The JSON document of ``tgms ask --save`` (``trace``: ``Trace.to_dict(envelopes=True)``)."""
    return {"question": question, "record": record.model_dump(mode="json"), "plan": plan, "trace": trace}
