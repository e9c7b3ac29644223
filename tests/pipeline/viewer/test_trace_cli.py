"""``tgms trace view`` on a real plan run: evidence fetched by digest, claims verified by the real verifier
with ``--store``, every accepted form rendered; malformed input refused with the structured error and
nothing written."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.viewer.conftest import Traced
from tgms.pipeline.cli.main import main


def view(*argv: str) -> int:
    return main(["trace", "view", *argv])


def verdicts_of(page: str) -> dict[str, str]:
    return dict(re.findall(r'<tr class="v-\w+"><td><b>(c\d)</b>.*?class="badge verdict v-(\w+)"', page))


def test_plan_run_with_a_store_verifies_the_answer(traced: Traced, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "page.html"
    argv = [str(traced.run), "--answer", str(traced.answer), "--store", str(traced.store), "--out", str(out)]
    umask = os.umask(0o022)
    try:
        assert view(*argv) == 0
    finally:
        os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o644  # the usual mode, not the temporary file's 0600
    assert capsys.readouterr().out.strip() == str(out)
    page = out.read_text("utf-8")
    assert verdicts_of(page) == {
        "c1": "supported",
        "c2": "weakly_supported",
        "c3": "unsupported",
        "c4": "unverifiable",
    }
    assert page.count(">dropped<") == 2 and "The gate dropped c3, c4" in page  # emitted on c1
    for step in traced.output["trace"]["steps"]:  # each step's row, with its result digest in full
        assert f'id="step-{step["id"]}"' in page and step["result_digest"] in page
    assert page.count("digest verified") == 5 and "digest mismatch" not in page
    first = traced.output["trace"]["steps"][0]
    assert first["truncated"] and "page cut" in page and ">tainted<" in page


def test_plan_run_without_a_store_is_shown_unverified(traced: Traced, tmp_path: Path) -> None:
    run = tmp_path / "run.json"  # a copy away from the store: no evidence can be fetched
    run.write_text(traced.run.read_text("utf-8"), "utf-8")
    assert view(str(run)) == 0
    page = run.with_suffix(".html").read_text("utf-8")
    assert "not verified" in page and "verdict v-" not in page
    assert "evidence of step s1" in page and "pass --store" in page  # said, not silently empty


def test_embedded_evidence_is_authenticated(traced: Traced, tmp_path: Path, capsys: Any) -> None:
    """A `plan run --embed` trace carries its evidence; a payload altered in the file is not shown as the
    step's result."""
    embedded = tmp_path / "embedded.json"
    argv = ["plan", "run", str(traced.plan), "--store", str(traced.store), "--embed"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    embedded.write_text(json.dumps(doc), "utf-8")
    assert view(str(embedded), "--out", str(tmp_path / "a.html")) == 0
    assert (tmp_path / "a.html").read_text("utf-8").count("digest verified") == 5
    env = next(e for e in doc["trace"]["envelopes"].values() if "rows_total" in e["payload"])
    env["payload"]["rows_total"] += 1
    embedded.write_text(json.dumps(doc), "utf-8")
    assert view(str(embedded), "--out", str(tmp_path / "b.html")) == 0
    page = (tmp_path / "b.html").read_text("utf-8")
    assert page.count("digest verified") == 4 and "no stored object" in page


def test_a_bare_trace_and_stdout(traced: Traced, tmp_path: Path, capsys: Any) -> None:
    bare = tmp_path / "trace.json"
    bare.write_text(json.dumps(traced.output["trace"]), "utf-8")
    assert view(str(bare), "--store", str(traced.store), "--out", "-") == 0
    page = capsys.readouterr().out
    assert page.startswith("<!doctype html>") and "temporal_reachability" in page
    assert "No claims." in page and page.count("digest verified") == 5


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (None, "E_NOT_FOUND"),  # no such file
        ("{not json", "E_SCHEMA"),
        ('{"some": "object"}', "E_SCHEMA"),
        ('{"verification": {}, "trace": {"steps": [1]}, "answer": null}', "E_SCHEMA"),
        ('{"question": "q", "record": {"status": "bogus"}, "trace": null}', "E_SCHEMA"),
        ('{"verification": {}, "trace": null, "answer": {"claims": [{"id": 1}]}}', "E_SCHEMA"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: Any, content: str | None, code: str
) -> None:
    src = tmp_path / "bad.json"
    if content is not None:
        src.write_text(content, "utf-8")
    assert view(str(src)) == 2
    err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert err["error"] == code and set(err) == {"error", "message", "details"}
    assert sorted(p.name for p in tmp_path.iterdir()) == (["bad.json"] if content is not None else [])


def test_bad_options_are_refused_before_writing(traced: Traced, tmp_path: Path, capsys: Any) -> None:
    assert view(str(traced.run), "--out", str(tmp_path)) == 2  # a directory
    assert json.loads(capsys.readouterr().err)["error"] == "E_INVALID_ARG"
    assert view(str(traced.run), "--out", str(traced.run)) == 2  # would overwrite the input
    assert json.loads(capsys.readouterr().err)["error"] == "E_INVALID_ARG"
    out = tmp_path / "p.html"
    assert view(str(traced.run), "--store", str(tmp_path / "nostore"), "--out", str(out)) == 2
    assert json.loads(capsys.readouterr().err)["error"] == "E_NOT_FOUND"
    assert view(str(traced.run), "--answer", str(tmp_path / "none.json"), "--out", str(out)) == 2
    assert json.loads(capsys.readouterr().err)["error"] == "E_NOT_FOUND"
    assert not out.exists() and json.loads(traced.run.read_text("utf-8"))["trace"]
