"""The engine's MCP tool layer without any SDK: the tool list, dispatch, the structured errors, the plan and
claim tools, and concurrent calls on their own store sessions."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import collegemsg_head
from tgms.engine.api import (
    LOG_NAME,
    MAX_JSON_DEPTH,
    OPERATOR_ORDER,
    OpContext,
    Store,
    ToolServer,
    all_operators,
    build_store,
    call,
    replay,
    tool_definitions,
)
from tgms.engine.mcp import tool_list as mcp_tool_list
from tgms.engine.mcp.definitions import EXTRA_TOOL_NAMES

T0 = 1_082_040_961_000_000
DAY = 86_400 * 1_000_000


def _deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return value


DEEP = _deep(MAX_JSON_DEPTH + 5)


def reach(src: str, days: int = 7, limit: int = 100) -> dict[str, Any]:
    return {"src": src, "window": {"t_a": T0, "t_b": T0 + days * DAY}, "limit": limit}


def plan(src: str = "n41") -> dict[str, Any]:
    return {
        "plan_id": "p1",
        "question": f"How many nodes can {src} reach in the first week?",
        "steps": [{"id": "s1", "op": "temporal_reachability", "args": reach(src), "depends_on": []}],
        "answer_spec": {"kind": "count", "from": "s1.rows_total"},
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp-tools")
    build_store("collegemsg", root / "cm", source=collegemsg_head(root, 3_000)).close()
    return root / "cm"


@pytest.fixture(scope="module")
def tools(store: Path) -> Any:
    server = ToolServer(store, workers=4)
    yield server
    server.close()


def test_tool_list_is_generated() -> None:
    listed = mcp_tool_list()
    assert listed[: len(OPERATOR_ORDER)] == tool_definitions()
    extra = listed[len(OPERATOR_ORDER) :]
    assert [t["name"] for t in extra] == ["verify_plan", "run_plan", "verify_answer"]
    assert [t["name"] for t in mcp_tool_list(allow_writes=True)][-1] == "write_batch"
    assert {t["name"] for t in mcp_tool_list(allow_writes=True)} >= EXTRA_TOOL_NAMES
    for t in mcp_tool_list(allow_writes=True):
        Draft202012Validator.check_schema(t["inputSchema"])  # every schema is a valid JSON Schema
        assert t["inputSchema"]["additionalProperties"] is False, t["name"]


def test_operator_call_is_the_engine_envelope(tools: ToolServer, store: Path) -> None:
    got = tools.call("temporal_reachability", reach("n41", limit=5))
    with Store.open(store, read_only=True) as s:
        want = call(OpContext(s), "temporal_reachability", reach("n41", limit=5))
    assert not got.is_error and got.value == want and got.structured_content == want["payload"]
    assert want["payload"]["rows_total"] > 5


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("temporal_reachability", [1, 2], "E_SCHEMA"),  # arguments not an object
        ("temporal_reachability", {"src": "n41"}, "E_SCHEMA"),  # window missing
        ("temporal_reachability", {**reach("n41"), "limit": 0}, "E_INVALID_ARG"),
        ("temporal_reachability", reach("nobody"), "E_NOT_FOUND"),
        ("no_such_tool", {}, "E_NOT_FOUND"),
        ("write_batch", {"ops": [{"op": "assert_node", "uid": "x", "vt_s": 0}]}, "E_CONFLICT"),  # read-only
        ("verify_plan", {}, "E_SCHEMA"),
        ("verify_plan", {"plan": {}, "without": ["nonsense"]}, "E_INVALID_ARG"),
        ("run_plan", {"plan": {"plan_id": "p", "steps": []}}, "E_INVALID_ARG"),  # fails verification
        ("verify_answer", {"answer": {"text": "x", "claims": []}, "trace": {"steps": 3}}, "E_SCHEMA"),
        ("compute", {"fn": "count", "input": DEEP}, "E_LIMIT"),  # nested past MAX_JSON_DEPTH
    ],
)
def test_every_failure_is_the_structured_error(
    tools: ToolServer, name: str, arguments: Any, code: str
) -> None:
    r = tools.call(name, arguments)
    assert r.is_error
    assert set(r.value) == {"error", "message", "details"} and r.value["error"] == code, r.value
    assert isinstance(r.value["message"], str) and r.value["message"]


def test_run_plan_then_verify_answer(tools: ToolServer) -> None:
    ran = tools.call("run_plan", {"plan": plan()})
    assert not ran.is_error, ran.value
    out = ran.value
    assert out["status"] == "ok" and out["verification"]["valid"] is True
    assert out["trace_digest"] == out["trace"]["trace_digest"]
    count = out["answer"]["answer"]["value"]
    assert count == tools.call("temporal_reachability", reach("n41")).value["payload"]["rows_total"]

    verified = tools.call("verify_answer", {"answer": out["answer"], "trace": out["trace"]})
    assert not verified.is_error, verified.value
    assert [v["verdict"] for v in verified.value["verdicts"]] == ["supported"]
    assert verified.value["gate"]["emitted"] is True

    wrong = copy.deepcopy(out["answer"])
    wrong["claims"][0]["value"] = count + 1
    wrong["answer"]["value"] = count + 1
    refuted = tools.call("verify_answer", {"answer": wrong, "trace": out})  # a run_plan result as trace
    assert [v["verdict"] for v in refuted.value["verdicts"]] == ["unsupported"]
    assert refuted.value["gate"]["abstained"] is True

    other_state = copy.deepcopy(out["trace"])
    other_state["store_digest"] = "0" * 64
    r = tools.call("verify_answer", {"answer": out["answer"], "trace": other_state})
    assert (
        r.is_error and r.value["error"] == "E_INVALID_ARG" and r.value["details"]["trace_store"] == "0" * 64
    )
    r = tools.call("verify_answer", {"answer": out["answer"], "trace": other_state, "any_store": True})
    assert not r.is_error


def test_invalid_plan_is_refused_with_every_violation(tools: ToolServer) -> None:
    bad = plan()
    bad["steps"][0]["args"]["bogus"] = 1
    bad["answer_spec"]["from"] = "s1.count"
    report = tools.call("verify_plan", {"plan": bad}).value
    assert report["valid"] is False and len(report["violations"]) >= 2
    refused = tools.call("run_plan", {"plan": bad})
    assert refused.is_error and refused.value["details"]["verification"] == report


def test_limits_refuse_before_any_work(tools: ToolServer, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import tgms.engine.mcp.toolserver as ts

    huge = plan()
    huge["steps"] = [dict(huge["steps"][0], id=f"s{i}") for i in range(1, 20_001)]
    verified: list[Any] = []
    monkeypatch.setattr(ts, "verify_plan", lambda *a, **k: verified.append(a))  # must not be reached
    for tool in ("run_plan", "verify_plan"):
        start = time.process_time()
        r = tools.call(tool, {"plan": huge})
        assert r.is_error and r.value["error"] == "E_LIMIT" and r.value["details"]["steps"] == 20_000
        assert len(json.dumps(r.value)) < 1000 and time.process_time() - start < 2.0
    assert verified == []
    monkeypatch.setattr(ts, "MAX_ARGUMENT_BYTES", 1000)
    r = tools.call("list_events", {"where": [{"field": "src", "op": "in", "value": ["n1"] * 500}]})
    assert r.is_error and r.value["error"] == "E_LIMIT" and r.value["details"]["limit"] == 1000


def test_a_long_bogus_cursor_is_not_echoed_whole(tools: ToolServer) -> None:
    r = tools.call("temporal_reachability", {**reach("n41"), "cursor": "7." + "x" * 100_000})
    assert r.is_error and r.value["error"] == "E_INVALID_ARG"
    assert len(json.dumps(r.value)) < 2000 and r.value["details"]["length"] == 100_002


def test_concurrent_calls_use_their_own_sessions(store: Path) -> None:
    server = ToolServer(store, workers=3)
    sources = ["n41", "n36", "n44", "n9", "n19", "n32", "n3", "n48"] * 2
    results: dict[int, Any] = {}
    barrier = threading.Barrier(len(sources))

    def worker(i: int) -> None:
        barrier.wait()
        results[i] = server.call("temporal_reachability", reach(sources[i], days=14))

    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(sources))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert len(server.pool._idle) <= 3  # never more sessions than workers
    finally:
        server.close()
    with Store.open(store, read_only=True) as s:
        ctx = OpContext(s)
        for i, src in enumerate(sources):
            assert results[i].value == call(ctx, "temporal_reachability", reach(src, days=14)), src


def test_writes_are_exclusive_and_seen_by_later_calls(store: Path, tmp_path: Path) -> None:
    replay(store / LOG_NAME, tmp_path / "w").close()
    writes: list[dict[str, Any]] = []
    server = ToolServer(tmp_path / "w", allow_writes=True, workers=2, on_write=writes.append)
    try:
        assert server.call("entity_history", {"uid": "w0"}).value["error"] == "E_NOT_FOUND"
        ops = [{"op": "assert_node", "uid": f"w{i}", "vt_s": T0} for i in range(5)]
        results: list[Any] = []

        def read() -> None:
            results.append(server.call("temporal_reachability", reach("n41")))

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        wrote = [server.call("write_batch", {"ops": [op]}) for op in ops]
        for t in threads:
            t.join(timeout=60)
        assert all(not w.is_error and w.value["status"] == "committed" for w in wrote)
        assert [w["status"] for w in writes] == ["committed"] * 5
        assert len({json_of(r.value["payload"]) for r in results}) == 1  # the reads agree
        for i in range(5):
            assert not server.call("entity_history", {"uid": f"w{i}"}).is_error
    finally:
        server.close()


def json_of(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def test_operator_payloads_match_their_output_schemas(tools: ToolServer) -> None:
    """An MCP client validates structured content against the tool's outputSchema and rejects a result
    that does not match: every operator's worked example, run on real data, must pass."""
    schemas = {t["name"]: t["outputSchema"] for t in tools.tools() if "outputSchema" in t}
    checked = []
    for spec in all_operators():
        r = tools.call(spec.name, spec.example["args"])
        if r.is_error:  # the example names a uid this small store does not have
            assert r.value["error"] == "E_NOT_FOUND", (spec.name, r.value)
            continue
        errors = list(Draft202012Validator(schemas[spec.name]).iter_errors(r.structured_content))
        assert not errors, (spec.name, errors[0].message)
        checked.append(spec.name)
    assert len(checked) >= len(OPERATOR_ORDER) - 2, checked


def test_both_backends_serve_the_same_answers(store: Path, tmp_path: Path, backend: str) -> None:
    """The tool layer over a replay of the store on each backend: the same envelopes, and a write through
    the exclusive write path (read-only sessions closed, the store reopened for writing) on each."""
    replay(store / LOG_NAME, tmp_path / "r", backend).close()
    reference = ToolServer(store, workers=2)
    server = ToolServer(tmp_path / "r", allow_writes=True, workers=2, on_write=lambda _: None)
    try:
        for src in ("n41", "n9"):
            assert server.call("temporal_reachability", reach(src)).value == (
                reference.call("temporal_reachability", reach(src)).value
            )
        wrote = server.call("write_batch", {"ops": [{"op": "assert_node", "uid": "b0", "vt_s": T0}]})
        assert not wrote.is_error and wrote.value["status"] == "committed", wrote.value
        assert server.call("entity_history", {"uid": "b0"}).value["payload"]["rows_total"] == 1
    finally:
        server.close()
        reference.close()
