"""``tgms plan verify``, ``tgms plan run`` and ``tgms verify-answer`` through the CLI entry point."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.engine.claims._support import MOTIF, N_REACHED, build_store, raw_plan, reach, ref, step
from tgms.engine.execute.results import ResultStore
from tgms.pipeline.cli.main import main

QUESTION = "How many nodes can n1 reach in the first ten seconds?"


def _plan(*steps: dict[str, Any], answer: str, kind: str) -> dict[str, Any]:
    return raw_plan(*steps, answer=answer, kind=kind) | {"question": QUESTION}


LESSON_1 = _plan(
    step("s1", "temporal_reachability", reach()),
    step("s2", "compute", {"fn": "ratio", "a": ref("s1.count"), "b": 2}, "s1"),
    answer="s2.value",
    kind="value",
)
VALID = _plan(step("s1", "temporal_reachability", reach()), answer="s1.rows_total", kind="count")
MOTIFS = _plan(step("s1", "count_temporal_motifs", dict(MOTIF)), answer="s1.count", kind="count")


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "store"
    build_store(root).close()
    return root


def tgms(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, Any, str]:
    """Exit code, stdout parsed as JSON (or None when empty), stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ran(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output of ``tgms plan run VALID`` (results kept under the store's results directory)."""
    tmp = tmp_path_factory.mktemp("run")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["plan", "run", str(write(tmp / "plan.json", VALID)), "--store", str(store_dir)])
    assert code == 0
    return write(tmp / "run.json", json.loads(buf.getvalue()))


def test_plan_verify_reports_lesson_1(
    store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = tgms(capsys, "plan", "verify", write(tmp_path / "p.json", LESSON_1), "--store", store_dir)
    assert code == 1
    assert out["valid"] is False
    (v,) = out["violations"]
    assert (v["code"], v["step"], v["field"]) == ("output_field", "s2", "args.a")
    assert "rows_total" in v["legal"] and "count" in v["message"]


def test_plan_verify_accepts_a_valid_plan(
    store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for raw in (VALID, MOTIFS):
        code, out, _ = tgms(capsys, "plan", "verify", write(tmp_path / "p.json", raw), "--store", store_dir)
        assert (code, out["valid"], out["violations"]) == (0, True, [])
    assert out["task_uids"] == ["n1"]


def test_plan_run_refuses_an_invalid_plan(
    store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = tgms(capsys, "plan", "run", write(tmp_path / "p.json", LESSON_1), "--store", store_dir)
    assert code == 1
    assert out["trace"] is None and out["answer"] is None and out["verification"]["valid"] is False


def test_plan_run_prints_verification_trace_and_answer(ran: Path, store_dir: Path) -> None:
    out = json.loads(ran.read_text())
    assert set(out) == {"verification", "trace", "answer"}
    assert out["verification"]["valid"] is True
    trace = out["trace"]
    assert trace["status"] == "ok" and trace["trace_digest"] and trace["store_digest"]
    assert [s["status"] for s in trace["steps"]] == ["ok"]
    assert "envelopes" not in trace  # kept in the result store instead
    assert ResultStore(store_dir / "results").has(trace["steps"][0]["envelope_digest"])
    assert out["answer"]["answer"] == {"kind": "count", "value": N_REACHED}
    assert out["answer"]["claims"] == [
        {"id": "c1", "type": "count", "evidence": ["s1"], "value": N_REACHED, "from": "s1.rows_total"}
    ]


def verify_answer(
    capsys: pytest.CaptureFixture[str], answer: Path, trace: Path, store: Path, *extra: str
) -> dict[str, Any]:
    code, out, err = tgms(capsys, "verify-answer", answer, "--trace", trace, "--store", store, *extra)
    assert code == 0, err
    return out


def test_verify_answer_on_the_run_output(
    ran: Path, store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = verify_answer(capsys, ran, ran, store_dir)
    assert [v["verdict"] for v in out["verdicts"]] == ["supported"]
    assert out["gate"]["emitted"] and out["gate"]["answer"] == {"kind": "count", "value": N_REACHED}
    assert out["coverage"]["numbers"] == out["coverage"]["numbers_covered"] == 1


def test_a_tampered_answer_is_unsupported_and_the_gate_abstains(
    ran: Path, store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ans = copy.deepcopy(json.loads(ran.read_text())["answer"])
    ans["answer"]["value"] += 1
    ans["claims"][0]["value"] += 1
    ans["text"] = f"The answer is {N_REACHED + 1}."
    out = verify_answer(capsys, write(tmp_path / "a.json", ans), ran, store_dir)
    assert [v["verdict"] for v in out["verdicts"]] == ["unsupported"]
    assert out["gate"]["abstained"] and "text" not in out["gate"]
    assert out["gate"]["dropped"][0]["claim"] == "c1"


def test_a_tampered_stored_envelope_is_unverifiable(
    ran: Path, store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_out = json.loads(ran.read_text())
    env_digest = run_out["trace"]["steps"][0]["envelope_digest"]
    # a copy of the result store, with the envelope rewritten in place (its name no longer matches)
    results = tmp_path / "results"
    src = store_dir / "results" / env_digest[:2] / f"{env_digest}.json"
    env = json.loads(src.read_text())
    env["payload"]["rows_total"] += 1
    (results / env_digest[:2]).mkdir(parents=True)
    (results / env_digest[:2] / src.name).write_text(json.dumps(env))
    out = verify_answer(capsys, ran, ran, store_dir, "--results", str(results))
    (v,) = out["verdicts"]
    assert v["verdict"] == "unverifiable" and "E_CORRUPT" in v["reason"]
    assert out["gate"]["abstained"]
    # the result missing altogether is unverifiable too
    out = verify_answer(capsys, ran, ran, store_dir, "--results", str(tmp_path / "empty"))
    assert [v["verdict"] for v in out["verdicts"]] == ["unverifiable"]


def test_a_trace_whose_result_digest_was_tampered_is_unverifiable(
    ran: Path, store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = json.loads(ran.read_text())["trace"]
    trace["steps"][0]["result_digest"] = "0" * 64
    out = verify_answer(capsys, ran, write(tmp_path / "t.json", trace), store_dir)
    assert [v["verdict"] for v in out["verdicts"]] == ["unverifiable"]


def test_a_trace_from_another_store_state_is_refused(
    ran: Path, store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = json.loads(ran.read_text())["trace"]
    trace["store_digest"] = "f" * 64
    path = write(tmp_path / "t.json", trace)
    code, _, err = tgms(capsys, "verify-answer", ran, "--trace", path, "--store", store_dir)
    assert code == 2 and json.loads(err)["error"] == "E_INVALID_ARG"
    out = verify_answer(capsys, ran, path, store_dir, "--any-store")
    assert [v["verdict"] for v in out["verdicts"]] == ["supported"]


def test_embedded_envelopes_and_a_pattern_claim(
    store_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--embed`` puts the evidence into the trace, so no result store is needed; the pattern claim is
    re-executed on the store."""
    plan_path = write(tmp_path / "p.json", MOTIFS)
    results = tmp_path / "results"
    code, out, err = tgms(
        capsys, "plan", "run", plan_path, "--store", store_dir, "--results", results, "--embed"
    )
    assert code == 0, err
    assert [c["type"] for c in out["answer"]["claims"]] == ["count", "temporal_pattern"]
    run_path = write(tmp_path / "run.json", out)
    got = verify_answer(capsys, run_path, run_path, store_dir, "--results", str(tmp_path / "none"))
    assert [v["verdict"] for v in got["verdicts"]] == ["supported", "supported"]
    assert got["gate"]["emitted"]
    # tampering with the embedded envelope stores it under another name: the step's result is missing
    out["trace"]["envelopes"] = {
        k: v | {"payload": v["payload"] | {"count": 2}} for k, v in out["trace"]["envelopes"].items()
    }
    bad = write(tmp_path / "bad.json", out)
    got = verify_answer(capsys, run_path, bad, store_dir, "--results", str(tmp_path / "fresh"))
    assert [v["verdict"] for v in got["verdicts"]] == ["unverifiable", "unverifiable"]
    assert got["gate"]["abstained"]
