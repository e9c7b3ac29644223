"""HTML building blocks of the trace page; every value goes through :func:`esc`.

Stored strings are data: besides the HTML metacharacters, control characters and Unicode bidi overrides
are shown as visible ``\\u....`` escapes, so a node name cannot reorder or hide the text around it on the
page. Long values are cut with the full value one click away (``<details>``), never dropped.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from tgms.engine.api import OPEN_END, us_to_iso
from tgms.models.prompting import sanitize

#: µs timestamps between 1973 and 2096 get their UTC time underneath (the stored value stays as it is)
_TIME_LO, _TIME_HI = 10**14, 4 * 10**15


def esc(value: Any) -> str:
    """``value`` as HTML text: metacharacters escaped, invisible controls shown as ``\\uXXXX``."""
    # the prompt boundary's sanitizer: every control, format (bidi, zero-width), separator and lone
    # surrogate character made visible; newline and tab are harmless in escaped text and stay
    return escape(sanitize(str(value)), quote=True)


def compact(value: Any) -> str:
    """Compact, key-sorted JSON of ``value`` (not escaped)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "), default=str)


def clip(text: str, limit: int, *, code: bool = False) -> str:
    """``text`` escaped; longer than ``limit`` characters, its start with the whole value in a
    ``<details>`` underneath (so the page stays short and the full value is still there). Put it in a
    ``<div>`` or a cell, never in a ``<p>``: the HTML parser ends a paragraph at a ``<details>``."""
    wrap = (lambda s: f"<code>{s}</code>") if code else (lambda s: s)
    if len(text) <= limit:
        return wrap(esc(text))
    head = wrap(esc(text[:limit]) + "…")
    return (
        f'<details class="clip"><summary>{head} <span class="more">{len(text):,} chars</span></summary>'
        f'<div class="full">{wrap(esc(text))}</div></details>'
    )


def json_cell(value: Any, limit: int = 160) -> str:
    return clip(compact(value), limit, code=True)


def digest_html(value: str | None, shown: int = 12) -> str:
    """A digest by its first characters, the whole digest on hover and one click away."""
    if not value:
        return '<span class="muted">—</span>'
    full = esc(value)
    return (
        f'<details class="dg"><summary><code title="{full}">{esc(value[:shown])}…</code></summary>'
        f'<code class="full">{full}</code></details>'
    )


def scalar(value: Any) -> str:
    """One cell value: strings and numbers as text (µs times with their UTC time underneath), anything
    nested as clipped JSON."""
    if isinstance(value, bool) or value is None:
        return f'<span class="lit">{esc(json.dumps(value))}</span>'
    if isinstance(value, int):
        if value == OPEN_END:
            return '<span title="OPEN_END (2**62): open interval end">∞</span>'
        if _TIME_LO <= value <= _TIME_HI:
            iso = esc(us_to_iso(value).replace("T", " "))
            return f'<span class="t">{value}</span><span class="iso">{iso}</span>'
        return str(value)
    if isinstance(value, float):
        return esc(repr(value))
    if isinstance(value, str):
        return clip(value, 120)
    return json_cell(value, 120)


def badge(text: str, cls: str, title: str | None = None) -> str:
    tip = f' title="{esc(title)}"' if title else ""
    return f'<span class="badge {esc(cls)}"{tip}>{esc(text)}</span>'


def table(
    headers: list[str],
    rows: list[list[str]],
    *,
    widths: list[str] | None = None,
    row_attrs: list[str] | None = None,
    cls: str = "",
) -> str:
    """A fixed-layout table (cells wrap instead of widening the page); cells are HTML already."""
    cols = "".join(f'<col style="width:{w}">' for w in widths) if widths else ""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join(
        f"<tr{row_attrs[i] if row_attrs else ''}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
        for i, row in enumerate(rows)
    )
    return (
        f'<table class="{esc(cls)}"><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def anchor(kind: str, sid: str) -> str:
    """An element id for a step id (any string): safe characters kept, the rest (and ``_``) hex-escaped,
    so two step ids never share an anchor."""
    safe = re.sub(r"[^A-Za-z0-9.-]", lambda m: f"_{ord(m.group(0)):x}", sid)
    return f"{kind}-{safe}"
