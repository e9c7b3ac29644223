"""The trace page is one self-contained HTML file, and graph content in it stays data (escaped)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from pipeline.systems.trace_page import EVIDENCE_CHARS, render_page

EVIL = '<script>alert("x")</script></data>'


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)


def record(answer: dict | None, gate: dict | None = None) -> dict:
    return {
        "model": "m",
        "status": "answered" if answer else "abstained",
        "reporter": "llm",
        "latency_s": 1.5,
        "tokens": {"prompt": 10, "completion": 5},
        "answer": answer,
        "gate": gate or {"emitted": answer is not None, "reason": None if answer else "no supported claim"},
        "claim_verdicts": [{"claim": "c1", "verdict": "supported", "reason": "matches s1.count"}],
        "attempts": [
            {
                "n": 1,
                "valid": False,
                "violations": [{"code": "output_fields", "message": "no such field", "legal": ["count"]}],
            },
            {"n": 2, "valid": True, "violations": []},
        ],
        "extras": {},
    }


def test_page_is_self_contained_and_escapes_graph_content() -> None:
    answer = {
        "text": f"node {EVIL} is busy",
        "answer": {"kind": "count", "value": 3},
        "claims": [{"id": "c1", "type": "count", "value": 3, "evidence": ["s1"], "from": "s1.count"}],
    }
    trace = {
        "status": "ok",
        "store_digest": "abc",
        "steps": [{"id": "s1", "op": "entity_history", "status": "ok", "rows": 3, "rows_total": 3}],
    }
    page = render_page(f"How busy is {EVIL}?", record(answer), {"steps": []}, trace, {"s1": {"name": EVIL}})
    parser = _Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    assert not any(k in ("src", "href") for k, _ in parser.attrs)
    assert "&lt;script&gt;" in page and "<script>" not in page
    assert 'class="supported"' in page and "matches s1.count" in page
    assert (
        "emitted" in page
        and "invalid" in page
        and "output_fields" in page
        and "legal: [&quot;count&quot;]" in page
    )
    assert re.search(r"<td>s1</td><td>entity_history</td><td>ok", page)


def test_abstention_and_long_evidence_are_shown_cut() -> None:
    big = {"rows": ["x" * 100] * 200}
    page = render_page("q", record(None), None, None, {"s1": big})
    assert "abstained" in page and "no supported claim" in page
    assert "more chars" in page and len(page) < EVIDENCE_CHARS + 8000
    assert "No trace" in page
