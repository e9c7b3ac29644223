"""A :class:`TraceView` from a TRACE.json document of any accepted form.

Accepted (told apart by their keys):

- ``tgms ask --save``: ``{question, record, plan, trace[, evidence]}`` (the record carries the verdicts and
  the gate's decision);
- ``tgms plan run`` output: ``{verification, trace, answer}`` (``answer`` the mechanical one);
- a bare trace (``Trace.to_dict()``, with or without embedded envelopes).

Evidence comes, per step, from the document (checked against the step's result digest), from envelopes
embedded in the trace, or from a result store by digest (authenticated on read). With a store, claims that
carry no verdict yet (a plan-run output, or ``answer=`` given) are verified by the real claim verifier and
gated, unless the trace was recorded on another store state. Nothing here writes: embedded objects go to
an in-memory layer in front of the result store.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.api import (
    GateConfig,
    MemoryResults,
    OpContext,
    ResultStore,
    SchemaError,
    Store,
    TGMSError,
    Trace,
    VerifyConfig,
    digest,
    gate,
    parse_answer,
    trace_from_dict,
    verify_claims,
)
from tgms.pipeline.boundary import validation_problems
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.viewer.view import TraceView, view_from_ask

FORMS = "a `tgms ask --save` document {question, record, plan, trace}, `tgms plan run` output or a trace"


class _Lookup(MemoryResults):
    """Objects embedded in the document, in memory, in front of an on-disk result store that is only read."""

    def __init__(self, fallback: ResultStore | None) -> None:
        super().__init__()
        self.fallback = fallback

    def has(self, digest: str) -> bool:
        return super().has(digest) or (self.fallback is not None and self.fallback.has(digest))

    def get(self, digest: str) -> Any:
        if super().has(digest) or self.fallback is None:
            return super().get(digest)
        return self.fallback.get(digest)


def document_form(doc: Any) -> tuple[str, dict[str, Any] | None]:
    """The form of ``doc`` (``ask`` | ``plan_run`` | ``trace``) and its trace part (None: no plan ran);
    ``E_SCHEMA`` for anything else."""
    if isinstance(doc, dict):
        trace = doc.get("trace")
        if isinstance(doc.get("record"), dict) and isinstance(doc.get("question"), str):
            form = "ask"
        elif "verification" in doc and "trace" in doc:
            form = "plan_run"
        elif isinstance(doc.get("steps"), list) and "plan_digest" in doc:
            return "trace", doc
        else:
            form = ""
        if form and (trace is None or isinstance(trace, dict)):
            return form, trace
    raise SchemaError(f"TRACE.json is not {FORMS}", field="trace", expected=FORMS)


def load_view(
    doc: Any,
    *,
    results: ResultStore | None = None,
    store: Store | None = None,
    answer: dict[str, Any] | None = None,
) -> TraceView:
    """The view of ``doc`` (its trace part already checked by the caller); ``answer`` replaces the answer
    shown (and verified, with ``store``)."""
    form, trace_raw = document_form(doc)
    view = _view(form, doc, trace_raw)
    if answer is not None:
        parse_answer(answer)  # E_SCHEMA listing every problem
        view.answer, view.emitted, view.verdicts, view.gate = answer, None, [], None
    if isinstance(doc, dict) and isinstance(doc.get("evidence"), dict):
        view.evidence.update({str(k): v for k, v in doc["evidence"].items()})
    trace = _fetch(view, trace_raw, results) if trace_raw is not None else None
    if store is not None and trace is not None and view.answer and not view.verified:
        _verify(view, trace, store)
    return view


def _view(form: str, doc: dict[str, Any], trace: dict[str, Any] | None) -> TraceView:
    question = str((trace or {}).get("question") or "")
    if form == "ask":
        record = _record(doc["record"])
        plan = doc.get("plan") if isinstance(doc.get("plan"), dict) else None
        return view_from_ask(doc["question"], record, plan, trace)
    answer = doc.get("answer") if form == "plan_run" else None
    view = TraceView(
        question=question or "(the trace names no question)",
        source=form,
        trace=trace,
        plan=(trace or {}).get("plan") or None,
        answer=answer if isinstance(answer, dict) else None,
    )
    if view.answer is not None:
        parse_answer(view.answer)
    if form == "plan_run" and trace is None:
        view.notes.append("the plan did not pass the static verifier, so it was not run")
    return view


def _record(raw: dict[str, Any]) -> TaskRecord:
    """The per-task record, checked against its schema (a hand-edited file fails here, not on the page)."""
    from pydantic import ValidationError

    try:
        return TaskRecord.model_validate(raw)
    except ValidationError as exc:
        problems = validation_problems(exc, 20)
        raise SchemaError(
            f"TRACE.json's record is not a task record: {problems[0]}", field="record", problems=problems
        ) from None


def _fetch(view: TraceView, trace_raw: dict[str, Any], results: ResultStore | None) -> Trace:
    """Each successful step's payload and resolved arguments, authenticated by the trace's digests."""
    trace = trace_from_dict(trace_raw, _Lookup(results))
    for rec in trace.steps:
        if rec.id in view.evidence:  # given by the document: shown, and marked when it is not the result
            view.evidence_ok[rec.id] = digest(view.evidence[rec.id]) == rec.result_digest
            continue
        if not rec.ok:
            continue
        try:
            payload = trace.payload(rec.id)
        except TGMSError as exc:
            where = "the trace or the result store" if results is not None else "the trace (pass --store)"
            view.notes.append(f"evidence of step {rec.id}: {exc.message}; looked in {where}")
            continue
        if payload is not None:
            view.evidence[rec.id], view.evidence_ok[rec.id] = payload, True
        try:
            args = trace.resolved_args(rec.id)
        except TGMSError as exc:
            view.notes.append(f"resolved arguments of step {rec.id}: {exc.message}")
            continue
        if args is not None:
            view.resolved_args[rec.id] = args
    return trace


def _verify(view: TraceView, trace: Trace, store: Store) -> None:
    """Verify and gate the view's claims with the engine's own verifier, on the store the trace ran on."""
    if trace.store_digest and trace.store_digest != store.digest():
        view.notes.append(
            "claims not verified: the trace was recorded on another store state "
            f"({trace.store_digest[:12]}…); view it with that store"
        )
        return
    answer = parse_answer(view.answer)
    verdicts = verify_claims(answer, trace, OpContext(store), VerifyConfig())
    decision = gate(answer, verdicts, GateConfig())
    view.verdicts = [v.to_dict() for v in verdicts]
    view.gate = {k: v for k, v in decision.items() if k != "verdicts"}
    view.emitted = (
        {k: decision[k] for k in ("text", "answer", "claims") if k in decision}
        if decision["emitted"]
        else None
    )
