"""The trace page as HTML: self-contained, every stored string escaped, claims with verdicts and the gate's
decision, the plan as an SVG DAG laid out by level with taint marked, long values cut but kept."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.viewer import TraceView, render_page, view_from_ask
from tgms.pipeline.viewer.dag import NODE_H, NODE_W, render_dag
from tgms.pipeline.viewer.evidence import EVIDENCE_ROWS, RAW_CHARS

EVIL = '<script>alert("x")</script></data>'
RTL = "evil\u202eexe.txt\x07"


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)


def record(reporter_answer: dict | None, gate: dict | None, emitted: dict | None) -> TaskRecord:
    return TaskRecord.model_validate(
        {
            "task_id": "ask",
            "system": "tgms",
            "model": "m",
            "seed": 0,
            "answer_kind": None,
            "status": "answered" if emitted else "abstained",
            "reporter": "llm",
            "latency_s": 1.5,
            "tokens": {"prompt": 10, "completion": 5},
            "answer": emitted,
            "gate": gate,
            "claim_verdicts": [
                {"claim": "c1", "type": "count", "verdict": "supported", "reason": "matches s1.count"},
                {"claim": "c2", "type": "count", "verdict": "unsupported", "reason": "s1.count is 3, not 4"},
            ],
            "attempts": [
                {
                    "n": 1,
                    "sha256": None,
                    "valid": False,
                    "violations": [{"code": "output_fields", "message": "no such field", "legal": ["count"]}],
                },
                {"n": 2, "sha256": "ab", "valid": True, "violations": []},
            ],
            "extras": {"reporter_answer": reporter_answer} if reporter_answer else {},
        }
    )


ANSWER = {
    "text": f"node {EVIL} is busy: 3 or 4",
    "answer": {"kind": "count", "value": 3},
    "claims": [
        {"id": "c1", "type": "count", "value": 3, "evidence": ["s1"], "from": "s1.count"},
        {"id": "c2", "type": "count", "value": 4, "evidence": ["s1"], "from": "s1.count"},
    ],
}
GATE = {"emitted": True, "abstained": False, "reason": None,
        "dropped": [{"claim": "c2", "verdict": "unsupported", "reason": "s1.count is 3, not 4"}]}  # fmt: skip
TRACE = {
    "status": "ok",
    "store_digest": "abc" * 20,
    "plan_id": "p",
    "steps": [
        {
            "id": "s1",
            "op": "entity_history",
            "depends_on": [],
            "status": "ok",
            "rows": 3,
            "rows_total": 9,
            "truncated": True,
            "upstream_truncated": False,
            "result_digest": "f" * 64,
            "args_digest": "e" * 64,
        },
        {
            "id": "s2",
            "op": "compute",
            "depends_on": ["s1"],
            "status": "refused",
            "rows": None,
            "truncated": False,
            "upstream_truncated": True,
            "error": {"error": "E_UPSTREAM", "message": "truncated_input"},
        },
    ],
}


def _view(**kw: Any) -> TraceView:
    emitted = {"text": "count: 3", "answer": {"kind": "count", "value": 3}, "claims": ANSWER["claims"][:1]}
    rec = record(ANSWER, GATE, emitted)
    return view_from_ask(f"How busy is {EVIL}?", rec, None, kw.get("trace", TRACE), kw.get("evidence", {}))


def test_page_is_self_contained_and_escapes_graph_content() -> None:
    page = render_page(_view(evidence={"s1": {"name": EVIL, "note": RTL}}))
    parser = _Tags()
    parser.feed(page)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(parser.tags)
    assert not any(k == "src" for k, _ in parser.attrs)
    assert all(v and v.startswith("#") for k, v in parser.attrs if k == "href")  # in-page links only
    assert "url(http" not in page and "@import" not in page
    assert "<script>" not in page and "&lt;script&gt;alert(&quot;x&quot;)" in page
    assert "\u202e" not in page and "\x07" not in page and "evil\\u202eexe.txt\\u0007" in page


def test_claims_show_verdicts_and_the_gate_decision() -> None:
    page = render_page(_view())
    rows = re.findall(r'<tr class="v-(\w+)">(.*?)</tr>', page)
    assert [v for v, _ in rows] == ["supported", "unsupported"]  # the dropped claim is still listed
    c1, c2 = (body for _, body in rows)
    assert 'class="badge verdict v-supported"' in c1 and ">emitted<" in c1
    assert ">dropped<" in c2 and "s1.count is 3, not 4" in c2
    assert "The gate dropped c2" in page and "the reporter's text (not emitted)" in page
    assert "invalid" in page and "output_fields" in page and "legal: " in page


def test_abstention_gives_the_reason() -> None:
    gate = {"emitted": False, "abstained": True, "reason": "no supported gated claim is left", "dropped": []}
    page = render_page(view_from_ask("q", record(ANSWER, gate, None), None, None))
    assert "abstained" in page and "no supported gated claim is left" in page
    assert ">kept<" in page and "No plan." in page


def test_unverified_claims_say_so() -> None:
    view = TraceView(question="q", source="plan_run", trace=TRACE, answer=ANSWER)
    page = render_page(view)
    assert "not verified" in page and "--store DIR" in page and "verdict v-" not in page


def test_steps_mark_truncation_and_errors() -> None:
    page = render_page(_view())
    s1 = re.search(r'<tr id="step-s1" class="tainted">(.*?)</tr>', page)
    s2 = re.search(r'<tr id="step-s2" class="tainted">(.*?)</tr>', page)
    assert s1 and "page cut" in s1.group(1) and "3 / 9" in s1.group(1) and "ffffffffffff…" in s1.group(1)
    assert "f" * 64 in s1.group(1)  # the full digest is one click away
    assert s2 and ">tainted<" in s2.group(1) and "E_UPSTREAM: truncated_input" in s2.group(1)


def test_dag_is_laid_out_by_level_with_taint_marked() -> None:
    steps = [
        {"id": "a", "op": "x", "depends_on": []},
        {"id": "b", "op": "y", "depends_on": ["a"]},
        {"id": "c", "op": "z", "depends_on": []},
        {"id": "d", "op": "w", "depends_on": ["b", "c"]},
    ]
    trace = {"steps": [{**s, "status": "ok", "truncated": s["id"] == "a"} for s in steps]}
    svg = render_dag(None, trace)
    ys = {m[0]: int(m[1]) for m in re.findall(r'href="#step-(\w)".*?<rect x="\d+" y="(\d+)"', svg)}
    assert ys["a"] == ys["c"] < ys["b"] < ys["d"] and ys["b"] - ys["a"] > NODE_H
    curves = re.findall(r'<path d="M\d+,\d+ C', svg)  # a->b, b->d: adjacent levels
    lanes = [int(x) for x in re.findall(r'<path d="M\d+,\d+ V\d+ H(\d+) V', svg)]  # c->d skips level 1
    assert len(curves) == 2 and len(lanes) == 1
    boxes = [int(x) for x in re.findall(r'<rect x="(\d+)"', svg)]
    assert lanes[0] < min(boxes) or lanes[0] > max(boxes) + NODE_W  # beside every box, not under one
    assert svg.count('marker-end="url(#arr-t)"') == 1  # only a->b carries taint
    assert svg.count('stroke-dasharray="7 4"') == 1 and "page cut" in svg


def test_dag_of_a_cyclic_plan_that_never_ran_still_draws() -> None:
    plan = {
        "steps": [{"id": "a", "op": "x", "depends_on": ["b"]}, {"id": "b", "op": "y", "depends_on": ["a"]}]
    }
    svg = render_dag(plan, None)
    assert svg.count("<rect") == 2 and "not run" in svg


def test_long_values_are_cut_with_the_full_value_kept() -> None:
    long_name = "N" * 5000
    rows = [{"uid": f"n{i}", "name": long_name if i == 0 else "x"} for i in range(EVIDENCE_ROWS + 30)]
    page = render_page(_view(evidence={"s1": {"rows": rows, "rows_total": 900}}))
    assert f"{EVIDENCE_ROWS + 30} on this page of 900" in page and "30 more on this page" in page
    assert f"n{EVIDENCE_ROWS - 1}<" in page and f">n{EVIDENCE_ROWS}<" not in page.split("raw payload")[0]
    assert "5,000 chars" in page and long_name in page  # clipped in the cell, whole in its <details>
    big = {"rows": [{"v": "y" * 100} for _ in range(2000)]}
    page = render_page(_view(evidence={"s1": big}))
    assert "more chars" in page and len(page) < RAW_CHARS + EVIDENCE_ROWS * 400 + 30_000


def test_the_viewer_is_documented() -> None:
    root = Path(__file__).resolve().parents[3]
    doc = (root / "docs" / "trace_viewer.md").read_text("utf-8")
    assert "tgms trace view" in doc and "img/trace_viewer.png" in doc
    assert (root / "docs" / "img" / "trace_viewer.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "docs/trace_viewer.md" in (root / "README.md").read_text("utf-8")
