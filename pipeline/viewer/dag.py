"""The plan as a DAG in inline SVG: one box per step, laid out by topological level (top to bottom), an
arrow per ``depends_on`` edge. No script and no layout library: plans have at most 12 steps.

A box shows the step, its operator, status and rows; a step whose own page was cut or that read cut
evidence is drawn with a dashed orange border and says so, and the edges leaving it are orange (the taint
flows along them). Each box links to its row in the step table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tgms.pipeline.viewer.html import anchor, esc

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 210, 60, 22, 36, 8
CHANNEL = 14  # width of the lane beside the boxes that a level-skipping edge runs down
CHARS = 27  # characters of 12px text that fit a box's width
STATUS_FILL = {  # fill, stroke; kept apart from the verdict colours so a verdict's colour means a verdict
    "ok": ("#eef6ee", "#4a7f4a"),
    "error": ("#fbe3e3", "#b33a3a"),
    "refused": ("#fdebd3", "#b86e00"),
    "skipped": ("#eeeeee", "#8a8a8a"),
}
NOT_RUN = ("#ffffff", "#8a8a8a")
TAINT = "#e8590c"


@dataclass
class _Node:
    sid: str
    op: str
    deps: list[str]
    rec: dict[str, Any] | None  # the trace's record of the step (None: the plan did not run)
    level: int = 0
    x: int = 0
    y: int = 0

    @property
    def tainted(self) -> bool:
        return bool(self.rec and (self.rec.get("truncated") or self.rec.get("upstream_truncated")))


def _nodes(plan: dict[str, Any] | None, trace: dict[str, Any] | None) -> list[_Node]:
    """The steps of the trace (as run, in execution order), else of the plan (as written)."""
    ran = (trace or {}).get("steps") or []
    steps = ran or (plan or {}).get("steps") or []
    out, seen = [], set()
    for s in steps:
        if not isinstance(s, dict) or not isinstance(s.get("id"), str) or s["id"] in seen:
            continue
        seen.add(s["id"])
        deps = [d for d in s.get("depends_on") or [] if isinstance(d, str)]
        out.append(_Node(s["id"], str(s.get("op")), deps, s if ran else None))
    return out


def _levels(nodes: list[_Node]) -> None:
    """Level = 1 + the deepest dependency; a cycle (only in a plan that never ran) is cut where found."""
    by_id = {n.sid: n for n in nodes}
    done: dict[str, int] = {}

    def level(sid: str, path: frozenset[str]) -> int:
        if sid in done:
            return done[sid]
        deps = [d for d in by_id[sid].deps if d in by_id and d not in path]
        done[sid] = 1 + max((level(d, path | {sid}) for d in deps), default=-1)
        return done[sid]

    for n in nodes:
        n.level = level(n.sid, frozenset())


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _box(n: _Node) -> str:
    rec = n.rec
    status = str(rec.get("status")) if rec else "not run"
    fill, stroke = STATUS_FILL.get(status, NOT_RUN) if rec else NOT_RUN
    dash = f' stroke="{TAINT}" stroke-width="3" stroke-dasharray="7 4"' if n.tainted else ""
    rows = ""
    if rec and rec.get("rows") is not None:
        rows = f" · {rec.get('rows')} / {rec.get('rows_total')} rows"
    line3, colour = "", "#444"
    if rec and rec.get("truncated") and rec.get("upstream_truncated"):
        line3, colour = "⚠ page cut + tainted upstream", TAINT
    elif rec and rec.get("truncated"):
        line3, colour = "⚠ page cut (truncated)", TAINT
    elif rec and rec.get("upstream_truncated"):
        line3, colour = "⚠ tainted: read cut evidence", TAINT
    elif rec and isinstance(rec.get("error"), dict):
        line3, colour = str(rec["error"].get("error")), "#b33a3a"
    title = f"{n.sid}: {n.op} — {status}"
    if rec and isinstance(rec.get("error"), dict):
        title += f" — {rec['error'].get('error')}: {rec['error'].get('message')}"
    op = _clip(n.op, CHARS - len(n.sid) - 1)
    x, y = n.x, n.y
    return (
        f'<a href="#{anchor("step", n.sid)}"><g class="node"><title>{esc(title)}</title>'
        f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6" fill="{fill}" stroke="{stroke}"'
        f' stroke-width="1.5"{dash}/>'
        f'<text x="{x + 8}" y="{y + 17}"><tspan font-weight="700">{esc(_clip(n.sid, 12))}</tspan>'
        f" {esc(op)}</text>"
        f'<text x="{x + 8}" y="{y + 34}" fill="{stroke}">{esc(_clip(status + rows, CHARS + 3))}</text>'
        f'<text x="{x + 8}" y="{y + 51}" fill="{colour}" font-weight="600">{esc(_clip(line3, CHARS + 3))}'
        "</text></g></a>"
    )


def _style(a: _Node) -> str:
    colour, marker = (TAINT, "arr-t") if a.tainted else ("#8a8a8a", "arr")
    return f'fill="none" stroke="{colour}" stroke-width="1.6" marker-end="url(#{marker})"'


def _edge(a: _Node, b: _Node) -> str:
    """An edge between adjacent levels: a curve through the gap between them."""
    x1, y1 = a.x + NODE_W // 2, a.y + NODE_H
    x2, y2 = b.x + NODE_W // 2, b.y - 2
    mid = (y1 + y2) // 2
    return f'<path d="M{x1},{y1} C{x1},{mid} {x2},{mid} {x2},{y2}" {_style(a)}/>'


def _long_edge(a: _Node, b: _Node, channel: int, k: int, side: int) -> str:
    """An edge that skips levels: down into the gap below ``a``, along it to a channel beside the boxes,
    down the channel, and along the gap above ``b`` into it, so it never crosses a box of a level between
    (a straight line would run under them and look like an edge of theirs). ``k`` staggers the
    horizontal runs of several such edges; ``side`` (-1 left, 1 right) moves its ends off the boxes' centres,
    where the edges between adjacent levels arrive."""
    x1, y1 = a.x + NODE_W // 2 + side * 24, a.y + NODE_H
    x2, y2 = b.x + NODE_W // 2 + side * 24, b.y - 2
    ya, yb = y1 + GAP_Y // 2 - 6 + (k % 3) * 5, b.y - GAP_Y // 2 - 6 + (k % 3) * 5
    return f'<path d="M{x1},{y1} V{ya} H{channel} V{yb} H{x2} V{y2}" {_style(a)} stroke-linejoin="round"/>'


_DEFS = (
    "<defs>"
    + "".join(
        f'<marker id="{mid}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7"'
        f' orient="auto"><path d="M0,0L10,5L0,10z" fill="{colour}"/></marker>'
        for mid, colour in (("arr", "#8a8a8a"), ("arr-t", TAINT))
    )
    + "</defs>"
)


def render_dag(plan: dict[str, Any] | None, trace: dict[str, Any] | None) -> str:
    """The SVG of the plan's DAG (empty string when there are no steps)."""
    nodes = _nodes(plan, trace)
    if not nodes:
        return ""
    _levels(nodes)
    rows: dict[int, list[_Node]] = {}
    for n in nodes:
        rows.setdefault(n.level, []).append(n)
    widest = max(len(r) for r in rows.values())
    core = widest * NODE_W + (widest - 1) * GAP_X
    for lv, row in rows.items():
        span = len(row) * NODE_W + (len(row) - 1) * GAP_X
        for i, n in enumerate(row):
            n.x = (core - span) // 2 + i * (NODE_W + GAP_X)
            n.y = PAD + lv * (NODE_H + GAP_Y)
    by_id = {n.sid: n for n in nodes}
    pairs = [(by_id[d], n) for n in nodes for d in n.deps if d in by_id and by_id[d].level < n.level]
    long = [(a, b) for a, b in pairs if b.level - a.level > 1]
    # each level-skipping edge gets a channel of its own, beside the boxes on its producer's side
    left = [e for e in long if e[0].x + NODE_W // 2 < core // 2]
    right = [e for e in long if e not in left]
    margin = PAD + CHANNEL * len(left)
    for n in nodes:
        n.x += margin
    width = margin + core + PAD + CHANNEL * len(right)
    height = PAD * 2 + len(rows) * NODE_H + (len(rows) - 1) * GAP_Y
    edges = [_edge(a, b) for a, b in pairs if b.level - a.level == 1]
    edges += [_long_edge(a, b, margin - CHANNEL * i - CHANNEL // 2, i, -1) for i, (a, b) in enumerate(left)]
    edges += [
        _long_edge(a, b, margin + core + CHANNEL * i + CHANNEL // 2, i, 1) for i, (a, b) in enumerate(right)
    ]
    return (
        f'<svg class="dag" role="img" aria-label="plan DAG" viewBox="0 0 {width} {height}" width="{width}"'
        f' height="{height}" font-family="system-ui,sans-serif" font-size="12">'
        + _DEFS
        + "".join(edges)
        + "".join(_box(n) for n in nodes)
        + "</svg>"
    )
