"""``tgms ask`` end to end against the scripted test-double server: the answer, each claim's verdict, the
gate's decision, the JSON record, the HTML page and the saved document (`tgms trace view` renders it as the
same page); refusals before any model is started."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.systems.conftest import SmallSuite
from tests.pipeline.systems.test_tgms import repeating_planner, scripted_rule
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.pipeline.cli.main import main


@pytest.fixture
def task(cm_small: SmallSuite) -> dict[str, Any]:
    """A dev task whose question names a uid (so the uid grounding from the question is exercised)."""
    return next(t for t in cm_small.dev if t.input_uids and t.answer_kind == "count")


@pytest.fixture
def server(cm_small: SmallSuite) -> Iterator[ScriptedServer]:
    with ScriptedServer(scripted_rule(cm_small.dev)) as s:
        yield s


def ask(question: str, store: Path, server: ScriptedServer, *extra: str) -> list[str]:
    return [
        "ask", question, "--store", str(store), "--model", "scripted", "--api-base", server.url,
        "--no-cache", *extra,
    ]  # fmt: skip


def test_ask_prints_answer_verdicts_and_gate(
    cm_small: SmallSuite, task: dict[str, Any], server: ScriptedServer, tmp_path: Path, capsys: Any
) -> None:
    page, saved = tmp_path / "trace.html", tmp_path / "ask.json"
    argv = ask(task.question, cm_small.store_dir, server, "--html", str(page), "--save", str(saved))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"typed:  count = {task.gold!r}" in out
    assert "-> supported" in out and "gate: emitted" in out
    html = page.read_text("utf-8")
    assert (
        html.startswith("<!doctype html>")
        and "supported" in html
        and task.oracle_plan["steps"][0]["op"] in html
    )
    # the saved document renders as the same page, evidence authenticated from what it embeds
    assert main(["trace", "view", str(saved), "--out", str(tmp_path / "again.html")]) == 0
    assert (tmp_path / "again.html").read_text("utf-8") == html and "digest verified" in html
    capsys.readouterr()
    assert main(ask(task.question, cm_small.store_dir, server, "--json")) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["status"] == "answered" and rec["predicted"] == task.gold and rec["correct"] is None
    assert rec["trace_digest"] and rec["gate"]["emitted"] is True


def test_ask_refuses_bad_input_before_starting_anything(
    cm_small: SmallSuite, capsys: Any, tmp_path: Path
) -> None:
    assert (
        main(
            [
                "ask",
                "",
                "--store",
                str(cm_small.store_dir),
                "--model",
                "x",
                "--api-base",
                "http://127.0.0.1:9",
            ]
        )
        == 2
    )
    assert '"E_INVALID_ARG"' in capsys.readouterr().err
    assert main(["ask", "q", "--store", str(tmp_path / "none")]) != 0
    assert '"E_NOT_FOUND"' in capsys.readouterr().err
    assert main(["ask", "q", "--store", str(cm_small.store_dir), "--model", "remote"]) == 2
    assert "--api-base" in capsys.readouterr().err


def test_the_html_page_shows_every_attempt_with_its_violations_and_the_sampled_retry(
    cm_small: SmallSuite, task: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    page = tmp_path / "trace.html"
    with ScriptedServer(scripted_rule(cm_small.dev, planner=repeating_planner())) as server:
        assert main(ask(task.question, cm_small.store_dir, server, "--html", str(page))) == 0
    html = page.read_text("utf-8")
    start = html.index("<h3>Plan attempts</h3>")
    section = html[start : html.index("</table>", start)]
    assert section.count("<tr") == 4  # the header and three attempts
    assert "1 repair reply repeated an earlier attempt" in section
    assert section.count("answer_field") == 2 and ".nope" in section  # both bad attempts' violations
    assert ">repeat<" in section and "sampled T=0.7 seed=" in section and "greedy" in section
    # the retry after the repeat is a redraw (no repair budget spent), and every reply is shown as received
    assert section.count(">redraw<") == 1 and section.count("<summary>reply</summary>") == 3
