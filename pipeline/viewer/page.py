"""The trace page: question, answer and the gate's decision, every claim with its verdict, the plan as a DAG
with its attempts, the step table, and the evidence.

The claims come first: what was claimed and whether the evidence holds it up is what a reader opens the
page for, so it is on the first screen. Each verdict is shown as text on a badge of its own colour
(:data:`pipeline.viewer.style.VERDICT_COLOURS`), and each claim says what the gate did with it.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.api import GateConfig
from tgms.pipeline.systems.record import Attempt
from tgms.pipeline.viewer.dag import render_dag
from tgms.pipeline.viewer.evidence import render_evidence
from tgms.pipeline.viewer.html import anchor, badge, clip, compact, esc, json_cell, table
from tgms.pipeline.viewer.steps import render_steps
from tgms.pipeline.viewer.style import CSS, VERDICT_COLOURS
from tgms.pipeline.viewer.view import SOURCES, TraceView

CLAIM_KEYS = ("value", "uids", "a", "b", "relation", "assertion")


def _meta(view: TraceView) -> str:
    rec = view.record
    parts = [f"from {esc(SOURCES.get(view.source, view.source))}"]
    if rec is not None:
        parts += [
            f"model <code>{esc(rec.model)}</code>",
            f"status <b>{esc(rec.status)}</b>",
            f"reporter {esc(rec.reporter)}",
            f"{rec.latency_s:.1f} s",
            f"{esc(rec.tokens.prompt)} prompt + {esc(rec.tokens.completion)} completion tokens",
        ]
    return '<div class="kv muted">' + "".join(f"<span>{p}</span>" for p in parts) + "</div>"


def _reason(view: TraceView) -> str:
    gate = view.gate or {}
    if gate.get("reason"):
        return str(gate["reason"])
    rec = view.record
    errors = rec.errors if rec is not None else []
    if errors:
        return f"{errors[0].get('error')}: {errors[0].get('message')}"
    extras = rec.extras if rec is not None else {}
    return str(extras.get("no_answer") or "no usable answer")


def _typed(answer: dict[str, Any] | None) -> str:
    typed = (answer or {}).get("answer")
    if not isinstance(typed, dict):
        return ""
    value = json_cell(typed.get("value"))
    return f'<div class="kv"><span>typed answer: {esc(typed.get("kind"))} = {value}</span></div>'


def _answer(view: TraceView) -> str:
    """The decision, what was emitted, and the reporter's own text when the gate did not emit it."""
    gate, reporter_text = view.gate, str((view.answer or {}).get("text") or "")
    if gate is not None and gate.get("emitted"):
        head = badge("emitted", "d-emit")
        dropped = [str(d.get("claim")) for d in gate.get("dropped") or [] if isinstance(d, dict)]
        shown = str((view.emitted or {}).get("text") or gate.get("text") or reporter_text)
        body = f'<div class="answer">{clip(shown, 600)}</div>' + _typed(view.emitted or view.answer)
        if dropped:
            body += (
                f"<p>The gate dropped {esc(', '.join(dropped))}; the reporter's text is replaced by the kept "
                f"claims.</p>{_reporter_text(reporter_text)}"
            )
    elif gate is not None or (view.record is not None and view.record.status != "answered"):
        status = "abstained" if gate is not None or view.record is None else view.record.status
        head = badge(status.replace("_", " "), "d-abst")
        body = f"<div><b>Why:</b> {clip(_reason(view), 600)}</div>" + _reporter_text(reporter_text)
    elif view.answer is not None:
        head = badge("not verified", "d-none")
        body = (
            f'<div class="answer">{clip(reporter_text, 600)}</div>{_typed(view.answer)}'
            '<p class="muted">No verdicts: view it with <code>--store DIR</code> to verify the claims.</p>'
        )
    else:
        head, body = badge("no answer", "d-none"), '<p class="muted">The document holds no answer.</p>'
    return f"<h2>Answer — {head}</h2>{body}"


def _reporter_text(text: str) -> str:
    if not text:
        return ""
    return (
        "<details><summary>the reporter's text (not emitted)</summary>"
        f'<div class="answer">{clip(text, 4000)}</div></details>'
    )


def _decision(claim: dict[str, Any], view: TraceView) -> str:
    gate = view.gate
    if gate is None:
        return badge("not gated", "d-none")
    cid = claim.get("id")
    dropped = {d.get("claim"): d for d in gate.get("dropped") or [] if isinstance(d, dict)}
    if cid in dropped:
        why = f"not emitted: {dropped[cid].get('verdict')}"
        return badge("dropped", "d-drop") + f'<div class="small">{esc(why)}</div>'
    ungated = claim.get("type") not in GateConfig().gated_types
    note = '<div class="small muted">not a gated type</div>' if ungated else ""
    if gate.get("emitted"):
        return badge("emitted", "d-emit") + note
    return (
        badge("kept", "d-abst") + f'<div class="small">the answer abstained: {clip(_reason(view), 160)}</div>'
    )


def _evidence_links(ids: Any) -> str:
    if not isinstance(ids, list):
        return esc(ids)
    return ", ".join(f'<a href="#{anchor("step", str(s))}">{esc(s)}</a>' for s in ids)


def _claims(view: TraceView) -> str:
    claims = [c for c in (view.answer or {}).get("claims") or [] if isinstance(c, dict)]
    if not claims:
        return '<p class="muted">No claims.</p>'
    verdicts = {v.get("claim"): v for v in view.verdicts if isinstance(v, dict)}
    rows, attrs = [], []
    for c in claims:
        v = verdicts.get(c.get("id")) or {}
        verdict = str(v.get("verdict") or "not verified")
        known = verdict in VERDICT_COLOURS
        tip = "capped: it rests on truncated evidence" if v.get("tainted") else None
        rows.append(
            [
                f"<b>{esc(c.get('id'))}</b>",
                esc(c.get("type")),
                json_cell({k: c[k] for k in CLAIM_KEYS if k in c}, 200),
                _evidence_links(c.get("evidence")),
                clip(str(c.get("from") or ""), 60, code=True),
                badge(verdict, f"verdict v-{verdict}" if known else "verdict d-none", tip),
                clip(str(v.get("reason") or ""), 240),
                _decision(c, view),
            ]
        )
        attrs.append(f' class="v-{esc(verdict)}"' if known else "")
    headers = ["claim", "type", "claimed", "evidence", "from", "verdict", "why", "gate"]
    widths = ["6%", "7%", "18%", "9%", "11%", "15%", "22%", "12%"]
    return table(headers, rows, widths=widths, row_attrs=attrs, cls="claims")


def _problem(p: Any) -> str:
    if not isinstance(p, dict):
        return esc(p)
    code = p.get("code") or p.get("error") or "?"
    text = f"<code>{esc(code)}</code> {clip(str(p.get('message', '')), 300)}"
    if p.get("legal"):
        text += f' <span class="muted">legal: {clip(compact(p["legal"]), 300)}</span>'
    return text


def _reply(a: Attempt) -> str:
    """How the attempt's reply came about: greedy, or sampled after a repeat; and whether it repeated."""
    parts = []
    if a.repeated:
        parts.append(badge("repeat", "st-error", "the same plan (or reply) as an earlier attempt"))
    sampling = a.sampling
    if sampling is not None:
        parts.append(
            badge(
                f"sampled T={sampling.get('temperature')} seed={sampling.get('seed')}",  # badge escapes
                "muted",
                "asked again with seeded sampling after a repeated reply",
            )
        )
    if a.redraw:
        parts.append(badge("redraw", "muted", "the repair asked again after a repeat: no budget spent"))
    head = " ".join(parts) or '<span class="muted">greedy</span>'
    if a.reply:
        # the reply as received: what the model wrote, whether or not it parsed
        head += f"<details><summary>reply</summary><pre>{clip(a.reply, 4000)}</pre></details>"
    return head


def _attempts(view: TraceView) -> str:
    rows = []
    attempts = view.record.attempts if view.record is not None else []
    for a in attempts:
        problems = list(a.violations)
        if a.runtime_error:
            problems.append(a.runtime_error)
        items = "".join(f"<li>{_problem(p)}</li>" for p in problems)
        verdict = badge("valid", "st-ok") if a.valid else badge("invalid", "st-error")
        rows.append([esc(a.n), verdict, _reply(a), f"<ul>{items}</ul>" if items else ""])
    if not rows:
        return ""
    repeats = view.record.repeat_replies if view.record is not None else None
    head = "<h3>Plan attempts</h3>"
    if repeats:
        replies = "reply" if repeats == 1 else "replies"
        head += f'<p class="muted">{esc(repeats)} repair {replies} repeated an earlier attempt.</p>'
    return head + table(
        ["attempt", "verifier", "reply", "violations / runtime error"],
        rows,
        widths=["8%", "10%", "17%", "65%"],
    )


def _notes(view: TraceView) -> str:
    if not view.notes:
        return ""
    return (
        '<div class="notes"><b>Notes</b><ul>'
        + "".join(f"<li>{esc(n)}</li>" for n in view.notes)
        + "</ul></div>"
    )


def render_page(view: TraceView) -> str:
    """The whole page, one self-contained HTML document."""
    trace = view.trace
    dag = render_dag(view.plan, trace)
    steps = render_steps(trace, view.plan, view.resolved_args)
    evidence = render_evidence(trace, view.evidence, view.evidence_ok)
    nav = "".join(
        f'<a href="#{h}">{t}</a>'
        for h, t in (
            ("answer", "answer"),
            ("claims", "claims"),
            ("plan", "plan"),
            ("steps", "steps"),
            ("evidence", "evidence"),
        )
    )
    body = [
        f"<nav>{nav}</nav><h1>{clip(view.question, 300)}</h1>{_meta(view)}{_notes(view)}",
        f'<section id="answer">{_answer(view)}</section>',
        f'<section id="claims"><h2>Claims and verdicts</h2>{_claims(view)}</section>',
        f'<section id="plan"><h2>Plan</h2>{dag or "<p class=muted>No plan.</p>"}{_attempts(view)}</section>',
        f'<section id="steps"><h2>Trace</h2>{steps}</section>',
        f'<section id="evidence"><h2>Evidence</h2>{evidence}</section>',
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>TGMS: {esc(view.question[:80])}</title><style>{CSS}</style></head><body><main>"
        + "".join(body)
        + "</main></body></html>\n"
    )
