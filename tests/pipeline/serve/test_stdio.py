"""``tgms serve`` over stdio with the official SDK client: the tools are the generated ones, a call gives
what ``tgms call`` gives, and a bad call gives the structured error."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.conftest import REPO_ROOT
from tests.pipeline.serve._servers import SERVE, envelope, reach_args, schema_fields, stdio_params
from tgms.engine.api import OPERATOR_ORDER
from tgms.pipeline.cli.main import main

EXTRA_TOOLS = ["verify_plan", "run_plan", "verify_answer"]


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


async def _session(store: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    async with Client(stdio_params(store)) as client:
        listed = await client.list_tools()
        ok = await client.call_tool("temporal_reachability", reach_args("n41", limit=5))
        bad = await client.call_tool("temporal_reachability", {"src": 41, "window": {"t_a": 5}})
        unknown_uid = await client.call_tool("temporal_reachability", reach_args("no-such-node"))
        unknown_tool = await client.call_tool("no_such_tool", {})
    return {
        "tools": listed.tools,
        "ok": ok,
        "bad": bad,
        "unknown_uid": unknown_uid,
        "unknown_tool": unknown_tool,
        "wall_s": time.perf_counter() - t0,
    }


@pytest.fixture(scope="module")
def session(cm_store: Path) -> dict[str, Any]:
    return anyio.run(_session, cm_store)


def test_tools_are_the_generated_schemas(session: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    names = [t.name for t in session["tools"]]
    assert names == [*OPERATOR_ORDER, *EXTRA_TOOLS]  # read-only: no write tool
    schema = cli_json(capsys, "schema")
    listed = [schema_fields(t) for t in session["tools"][: len(OPERATOR_ORDER)]]
    assert listed == schema  # name, description (the manual entry), inputSchema, outputSchema: equal
    for tool in session["tools"][len(OPERATOR_ORDER) :]:
        assert tool.description and tool.input_schema["type"] == "object", tool
    assert all(t.annotations.read_only_hint for t in session["tools"])  # no write tool without the flag


def test_reachability_equals_tgms_call(
    session: dict[str, Any], cm_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = session["ok"]
    assert not result.is_error
    got = envelope(result)
    want = cli_json(
        capsys,
        "call",
        "temporal_reachability",
        json.dumps(reach_args("n41", limit=5)),
        "--store",
        str(cm_store),
    )
    assert got == want
    # a real multi-hop answer, paged: the client validated this payload against the outputSchema
    assert got["payload"]["rows_total"] > 5 and got["payload"]["truncated"] is True
    assert result.structured_content == got["payload"]


def test_bad_calls_give_the_structured_error(session: dict[str, Any]) -> None:
    expected = {"bad": "E_SCHEMA", "unknown_uid": "E_NOT_FOUND", "unknown_tool": "E_NOT_FOUND"}
    for key, code in expected.items():
        result = session[key]
        assert result.is_error, key
        err = envelope(result)
        assert set(err) == {"error", "message", "details"} and err["error"] == code, err
        assert result.structured_content == err
    assert envelope(session["bad"])["details"]["field"] == "src"
    assert "temporal_reachability" in envelope(session["unknown_tool"])["details"]["tools"]


def test_a_stdio_session_is_quick(session: dict[str, Any]) -> None:
    # start-up, handshake, list and four calls: seconds, not tens (the SDK round trip is ~0.5 s here)
    assert session["wall_s"] < 20


def test_a_legacy_handshake_client_is_served(cm_store: Path) -> None:
    """Clients of the handshake era (``initialize`` first; most desktop and IDE clients today) get the same
    tools and answers as the SDK's default (discovery) mode."""

    async def legacy() -> tuple[list[str], Any, str]:
        async with Client(stdio_params(cm_store), mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("temporal_reachability", reach_args("n41", limit=5))
            return names, result, client.protocol_version

    names, result, version = anyio.run(legacy)
    assert names == [*OPERATOR_ORDER, *EXTRA_TOOLS]
    assert not result.is_error and envelope(result)["payload"]["rows_total"] > 5
    assert version < "2026"  # a handshake-era protocol version was negotiated


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stops_cleanly_on_a_signal_while_stdin_is_open(cm_store: Path, sig: signal.Signals) -> None:
    """Ctrl-C or SIGTERM stops a stdio server at once, exit 0, even while its client keeps stdin open."""
    proc = subprocess.Popen(
        [*SERVE, "--store", str(cm_store)],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None and "MCP over stdio" in proc.stderr.readline()
        t0 = time.perf_counter()
        proc.send_signal(sig)
        assert proc.wait(timeout=20) == 0
        assert time.perf_counter() - t0 < 10
        rest = proc.stderr.read()
        assert "stopped" in rest and "Traceback" not in rest, rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_raw_stdio_answers_a_bad_line_and_every_request_before_end_of_input(cm_store: Path) -> None:
    # a client that writes its requests and closes stdin at once (echo … | tgms serve): a line that is not
    # JSON gets the JSON-RPC parse error, and the calls still in flight at end of input get their replies
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    calls = [{"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
              "params": {"name": "temporal_reachability", "arguments": reach_args(src, limit=3)}}
             for i, src in enumerate(("n41", "n9", "n105"))]  # fmt: skip
    lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             "this is not json", *map(json.dumps, calls)]  # fmt: skip
    proc = subprocess.run(
        [*SERVE, "--store", str(cm_store)], input="\n".join(lines) + "\n", capture_output=True, text=True,
        cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = [json.loads(x) for x in proc.stdout.splitlines()]
    by_id = {r.get("id"): r for r in replies}
    assert sorted(by_id, key=str) == sorted([None, 1, 2, 3, 4], key=str) and len(replies) == 5
    assert by_id[None]["error"]["code"] == -32700 and "not JSON" in by_id[None]["error"]["data"]
    for i in (2, 3, 4):
        assert "result" in by_id[i] and not by_id[i]["result"].get("isError"), by_id[i]
