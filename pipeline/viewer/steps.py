"""The per-step table of a trace: status, operator, arguments (as planned, and as resolved), rows, the two
kinds of truncation, and the digests that name each step's resolved arguments and result.

Truncation is marked where it happened: ``page cut`` when the step's own page was cut (``truncated``),
``tainted`` when it read evidence that was cut upstream (``upstream_truncated``); a tainted row is tinted
so it stands out in a long trace.
"""

from __future__ import annotations

from typing import Any

from tgms.pipeline.viewer.html import anchor, badge, clip, compact, digest_html, esc, json_cell, table


def _planned_args(plan: dict[str, Any] | None) -> dict[str, Any]:
    steps = (plan or {}).get("steps") or []
    return {s["id"]: s.get("args") for s in steps if isinstance(s, dict) and isinstance(s.get("id"), str)}


def taint_cell(rec: dict[str, Any]) -> str:
    marks = []
    if rec.get("truncated"):
        marks.append(badge("page cut", "taint", "this step's own page was cut (truncated)"))
    if rec.get("upstream_truncated"):
        marks.append(badge("tainted", "taint", "it read evidence a producer's page cut (upstream_truncated)"))
    for cut in rec.get("ref_cuts") or []:
        if isinstance(cut, dict):
            marks.append(
                f'<div class="small">ref list cut at {esc(cut.get("at"))}: kept {esc(cut.get("kept"))}'
                f" of {esc(cut.get('total'))}</div>"
            )
    return "".join(marks) or '<span class="muted">complete</span>'


def _status(rec: dict[str, Any]) -> str:
    status = str(rec.get("status"))
    out = badge(status, f"st-{status}")
    err = rec.get("error")
    if isinstance(err, dict):
        text = f"{err.get('error')}: {err.get('message')}"
        out += f'<div class="small err">{clip(text, 140)}</div>'
    return out


def _args(planned: Any, resolved: Any) -> str:
    out = json_cell(planned, 140) if planned is not None else '<span class="muted">—</span>'
    if resolved is not None and compact(resolved) != compact(planned):
        out += f'<div class="small">resolved: {json_cell(resolved, 100)}</div>'
    return out


def _rows(rec: dict[str, Any]) -> str:
    if rec.get("rows") is None:
        return '<span class="muted">—</span>'
    return f"{esc(rec.get('rows'))} / {esc(rec.get('rows_total'))}"


def _ms(rec: dict[str, Any]) -> str:
    ms = rec.get("wall_ms")
    return f"{ms:.1f}" if isinstance(ms, int | float) else "—"


def render_steps(trace: dict[str, Any] | None, plan: dict[str, Any] | None, resolved: dict[str, Any]) -> str:
    """The trace's step table, or (nothing ran) the plan's steps as written."""
    planned = _planned_args((trace or {}).get("plan") or plan)
    if not trace:
        if not planned:
            return '<p class="muted">No plan.</p>'
        rows = [
            [
                esc(sid),
                esc(s.get("op")),
                json_cell(s.get("args"), 200),
                esc(", ".join(s.get("depends_on") or [])),
            ]
            for sid, s in _plan_steps(plan).items()
        ]
        note = '<p class="muted">The plan did not run: no trace.</p>'
        return note + table(["step", "op", "args", "depends on"], rows, widths=["8%", "20%", "57%", "15%"])
    rows, attrs = [], []
    for rec in trace.get("steps") or []:
        sid = str(rec.get("id"))
        after = esc(", ".join(rec.get("depends_on") or [])) or "—"
        digests = (
            f'<div class="small">args {digest_html(rec.get("args_digest"))}</div>'
            f'<div class="small">result {digest_html(rec.get("result_digest"))}</div>'
        )
        rows.append(
            [
                f'<b>{esc(sid)}</b><div class="small muted">after {after}</div>',
                esc(rec.get("op")).replace("_", "_<wbr>"),  # long names break at their underscores
                _status(rec),
                _args(planned.get(sid), resolved.get(sid)),
                _rows(rec),
                taint_cell(rec),
                digests,
                _ms(rec),
            ]
        )
        tainted = rec.get("truncated") or rec.get("upstream_truncated")
        attrs.append(f' id="{anchor("step", sid)}"' + (' class="tainted"' if tainted else ""))
    headers = ["step", "op", "status", "arguments", "rows / total", "truncation", "digests", "ms"]
    widths = ["7%", "17%", "10%", "28%", "7%", "11%", "15%", "5%"]
    return _trace_head(trace) + table(headers, rows, widths=widths, row_attrs=attrs, cls="steps")


def _plan_steps(plan: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    steps = (plan or {}).get("steps") or []
    return {str(s.get("id")): s for s in steps if isinstance(s, dict)}


def _trace_head(trace: dict[str, Any]) -> str:
    status = str(trace.get("status") or "")
    spec = trace.get("answer_spec")
    items = [
        f"status {badge(status, f'st-{status}')}",
        f"plan <code>{esc(trace.get('plan_id') or '—')}</code>",
        f"answer from <code>{esc((spec or {}).get('from'))}</code> as {esc((spec or {}).get('kind'))}"
        if isinstance(spec, dict)
        else "no answer_spec",
        f"trace digest {digest_html(trace.get('trace_digest'))}",
        f"store digest {digest_html(trace.get('store_digest'))}",
    ]
    return '<div class="kv">' + "".join(f"<span>{i}</span>" for i in items) + "</div>"
