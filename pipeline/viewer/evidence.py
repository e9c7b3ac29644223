"""Each step's evidence (its result payload) as tables: scalar fields on one line, every list field as a
table (objects: one column per key; plain values: one wrapped line), the raw JSON one click away.

Bounded so a page stays readable: the first :data:`EVIDENCE_ROWS` elements of a list and
:data:`RAW_CHARS` characters of raw JSON per step; the whole payload is in the result store under the
step's result digest (shown next to it).
"""

from __future__ import annotations

import json
from typing import Any

from tgms.pipeline.viewer.html import anchor, badge, digest_html, esc, scalar, table

EVIDENCE_ROWS = 50
RAW_CHARS = 20_000
MAX_COLS = 9  # columns of an evidence table before the rest of a row's keys go into one "more" column


def _columns(rows: list[dict[str, Any]]) -> tuple[list[str], bool]:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    return keys[:MAX_COLS], len(keys) > MAX_COLS


def _list(name: str, items: list[Any], total: Any) -> str:
    shown = items[:EVIDENCE_ROWS]
    more = len(items) - len(shown)
    count = f"{len(items)} on this page" + (f" of {total}" if isinstance(total, int) else "")
    head = f'<div class="lh"><code>{esc(name)}</code> <span class="muted">({esc(count)})</span></div>'
    if not items:
        return head
    tail = f'<div class="muted small">… {more} more on this page: see the raw payload</div>' if more else ""
    if all(isinstance(r, dict) for r in shown):
        cols, extra = _columns(shown)
        rows = [[scalar(r.get(c)) if c in r else "" for c in cols] for r in shown]
        if extra:
            rows = [
                [*row, scalar({k: v for k, v in r.items() if k not in cols})]
                for row, r in zip(rows, shown, strict=True)
            ]
        headers = cols + (["more"] if extra else [])
        return head + table(headers, rows, cls="ev") + tail
    return head + '<div class="vals">' + ", ".join(scalar(v) for v in shown) + "</div>" + tail


def render_payload(payload: Any) -> str:
    """One payload: scalar fields first, then one table per list field."""
    if not isinstance(payload, dict):
        return f"<div>{scalar(payload)}</div>"
    scalars = {k: v for k, v in payload.items() if not isinstance(v, list)}
    parts = []
    if scalars:
        kv = "".join(f"<span><code>{esc(k)}</code> = {scalar(v)}</span>" for k, v in scalars.items())
        parts.append(f'<div class="kv">{kv}</div>')
    for k, v in payload.items():
        if isinstance(v, list):
            parts.append(_list(k, v, payload.get(f"{k}_total")))
    raw = json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False, default=str)
    cut = f"\n… ({len(raw) - RAW_CHARS:,} more chars)" if len(raw) > RAW_CHARS else ""
    parts.append(
        f'<details class="raw"><summary>raw payload ({len(raw):,} chars)</summary>'
        f"<pre>{esc(raw[:RAW_CHARS])}{esc(cut)}</pre></details>"
    )
    return "".join(parts)


def render_evidence(
    trace: dict[str, Any] | None, evidence: dict[str, Any], evidence_ok: dict[str, bool]
) -> str:
    """The evidence of every step that has some, in trace order (then any other step the document named)."""
    recs = {str(s.get("id")): s for s in (trace or {}).get("steps") or [] if isinstance(s, dict)}
    order = [sid for sid in recs if sid in evidence] + [sid for sid in evidence if sid not in recs]
    parts = []
    for sid in order:
        rec = recs.get(sid, {})
        if evidence_ok.get(sid) is True:
            check = badge("digest verified", "ok", "the payload hashes to the trace's result digest")
        elif sid in evidence_ok:
            check = badge("digest mismatch", "bad", "this payload is NOT the result the trace recorded")
        else:
            check = ""
        cut = " " + badge("page cut", "taint") if rec.get("truncated") else ""
        cut += " " + badge("tainted", "taint") if rec.get("upstream_truncated") else ""
        parts.append(
            f'<section class="ev" id="{anchor("ev", sid)}"><h3>{esc(sid)} · {esc(rec.get("op", "?"))}'
            f' <span class="small">{check}{cut}</span></h3>'
            f'<div class="small muted">result {digest_html(rec.get("result_digest"))}</div>'
            f"{render_payload(evidence[sid])}</section>"
        )
    return "".join(parts) or '<p class="muted">No evidence.</p>'
