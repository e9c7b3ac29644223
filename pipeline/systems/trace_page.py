"""A self-contained HTML page of one answered question: answer and gate, claims with verdicts, the plan
attempts, the trace, and each step's evidence.

One file, inline CSS, no script and no external asset, so it opens anywhere and can be attached to a
report. Every value is HTML-escaped: stored graph content is data and must not become markup.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

EVIDENCE_CHARS = 6000  # per step; the full payload is in the result store under its digest

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;margin:.5em 0}td,th{border:1px solid #ddd;padding:4px 6px;
vertical-align:top;text-align:left}th{background:#f5f5f5}code,pre{font:12px/1.4 ui-monospace,monospace}
pre{background:#f8f8f8;padding:8px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.supported{background:#e3f5e1}.weakly_supported{background:#fff6d6}.unsupported{background:#fde2e1}
.unverifiable{background:#eee}.emitted{color:#176b1c;font-weight:600}.abstained{color:#a33;font-weight:600}
.muted{color:#777}
"""


def _j(value: Any) -> str:
    return escape(json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str))


def _table(headers: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        f'<tr class="{escape(classes[i]) if classes else ""}">'
        + "".join(f"<td>{c}</td>" for c in row)
        + "</tr>"
        for i, row in enumerate(rows)
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _claims(record: dict[str, Any]) -> str:
    answer = record.get("answer") or record.get("extras", {}).get("reporter_answer") or {}
    verdicts = {v.get("claim"): v for v in record.get("claim_verdicts") or []}
    rows, classes = [], []
    for c in answer.get("claims") or []:
        v = verdicts.get(c.get("id"), {})
        payload = {k: c[k] for k in ("value", "uids", "a", "b", "relation", "assertion") if k in c}
        rows.append(
            [
                escape(str(c.get("id"))),
                escape(str(c.get("type"))),
                f"<code>{_j(payload)}</code>",
                escape(", ".join(c.get("evidence") or [])),
                f"<code>{escape(str(c.get('from') or ''))}</code>",
                f"<b>{escape(str(v.get('verdict', 'not verified')))}</b>",
                escape(str(v.get("reason") or "")),
            ]
        )
        classes.append(str(v.get("verdict", "")))
    if not rows:
        return '<p class="muted">No claims.</p>'
    return _table(["id", "type", "claimed", "evidence", "from", "verdict", "reason"], rows, classes)


def _plan(plan: dict[str, Any] | None) -> str:
    """The plan as a table of steps (arguments as compact JSON) and its answer_spec."""
    if not plan:
        return '<p class="muted">No plan ran.</p>'
    rows = [
        [
            escape(str(st.get("id"))),
            escape(str(st.get("op"))),
            f"<code>{escape(json.dumps(st.get('args'), sort_keys=True, ensure_ascii=False))}</code>",
            escape(", ".join(st.get("depends_on") or [])),
        ]
        for st in plan.get("steps") or []
        if isinstance(st, dict)
    ]
    spec = f"<p>answer_spec: <code>{escape(json.dumps(plan.get('answer_spec'), sort_keys=True))}</code></p>"
    return _table(["step", "op", "args", "depends on"], rows) + spec


def _attempts(record: dict[str, Any]) -> str:
    rows = []
    for a in record.get("attempts") or []:
        problems = a.get("violations") or []
        if a.get("runtime_error"):
            problems = [*problems, a["runtime_error"]]
        lines = "".join(f"<li>{_problem(p)}</li>" for p in problems)
        verdict = "valid" if a.get("valid") else "<b>invalid</b>"
        rows.append([str(a.get("n")), verdict, f"<ul>{lines}</ul>" if lines else ""])
    return _table(["attempt", "verifier", "violations / runtime error"], rows) if rows else ""


def _problem(p: Any) -> str:
    """One violation or runtime error on one line: code, message, and what would be legal."""
    if not isinstance(p, dict):
        return escape(str(p))
    code = p.get("code") or p.get("error") or "?"
    text = f"<code>{escape(str(code))}</code> {escape(str(p.get('message', '')))}"
    if p.get("legal"):
        legal = escape(json.dumps(p["legal"], ensure_ascii=False)[:300])
        text += f" <span class='muted'>legal: {legal}</span>"
    return text


def _trace(trace: dict[str, Any] | None) -> str:
    if not trace:
        return '<p class="muted">No trace (no plan was executed).</p>'
    rows = []
    for s in trace.get("steps") or []:
        err = s.get("error") or {}
        rows.append(
            [
                escape(str(s.get("id"))),
                escape(str(s.get("op"))),
                escape(str(s.get("status")))
                + (f"<br><code>{escape(str(err.get('error')))}</code>" if err else ""),
                escape(f"{s.get('rows')} / {s.get('rows_total')}"),
                "yes" if s.get("truncated") else "",
                "yes" if s.get("upstream_truncated") else "",
                escape(f"{s.get('wall_ms') or 0:.1f}"),
                f"<code>{escape(str(s.get('result_digest') or '')[:16])}</code>",
            ]
        )
    head = f"<p>trace status <b>{escape(str(trace.get('status', '')))}</b>; store digest <code>"
    head += f"{escape(str(trace.get('store_digest') or ''))}</code></p>"
    cols = ["step", "op", "status", "rows / total", "truncated", "upstream cut", "ms", "result digest"]
    return head + _table(cols, rows)


def _evidence(evidence: dict[str, Any]) -> str:
    parts = []
    for sid, payload in evidence.items():
        text = json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False, default=str)
        cut = len(text) > EVIDENCE_CHARS
        shown = escape(text[:EVIDENCE_CHARS]) + (
            f"\n… ({len(text) - EVIDENCE_CHARS} more chars)" if cut else ""
        )
        parts.append(f"<details><summary>{escape(sid)}</summary><pre>{shown}</pre></details>")
    return "".join(parts) or '<p class="muted">No evidence.</p>'


def render_page(
    question: str,
    record: dict[str, Any],
    plan: dict[str, Any] | None,
    trace: dict[str, Any] | None,
    evidence: dict[str, Any],
) -> str:
    """The page for one question (``record``: a TaskRecord as JSON; ``trace``: Trace.to_dict())."""
    gate = record.get("gate") or {}
    answer = record.get("answer")
    if answer is not None:
        verdict = '<span class="emitted">emitted</span>'
        typed = _j(answer.get("answer"))
        shown = f"<p>{escape(str(answer.get('text', '')))}</p><p>typed answer: <code>{typed}</code></p>"
    else:
        verdict = '<span class="abstained">abstained</span>'
        errors = record.get("errors") or []
        first = f"{errors[0].get('error')}: {errors[0].get('message')}" if errors else None
        why = gate.get("reason") or first
        shown = f"<p>{escape(str(record.get('status')))}: {escape(str(why or 'no usable answer'))}</p>"
    tokens = record.get("tokens") or {}
    model, status, reporter = (escape(str(record.get(k))) for k in ("model", "status", "reporter"))
    meta = (
        f"model <code>{model}</code>, status <b>{status}</b>, reporter {reporter}, "
        f"{record.get('latency_s', 0):.1f} s, "
        f"{tokens.get('prompt', 0)} prompt + {tokens.get('completion', 0)} completion tokens"
    )
    body = [
        f"<h1>{escape(question)}</h1>",
        f"<p class='muted'>{meta}</p>",
        f"<h2>Answer — {verdict}</h2>{shown}",
        f"<h2>Claims and verdicts</h2>{_claims(record)}",
        f"<h2>Plan</h2>{_plan(plan)}<h3>Attempts</h3>{_attempts(record)}",
        f"<h2>Trace</h2>{_trace(trace)}",
        f"<h2>Evidence</h2>{_evidence(evidence)}",
    ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>TGMS: '
        + escape(question[:80])
        + f"</title><style>{_CSS}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )
