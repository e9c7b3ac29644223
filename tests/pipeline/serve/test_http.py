"""``tgms serve --http`` with SDK clients: the same tools and answers as stdio, 8 concurrent clients each
get their own answers, a slow call does not stall a fast one, and the cost guard still refuses."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine.api import OpContext, Store, call
from pipeline.cli.main import main
from tests.pipeline.serve._servers import envelope, http_server, reach_args, schema_fields

#: sources with multi-hop reach in the test store's first week(s): every client asks its own
SOURCES = ["n41", "n36", "n44", "n9", "n19", "n32", "n3", "n48"]


def direct(store: Path, op: str, args: dict[str, Any]) -> dict[str, Any]:
    with Store.open(store, read_only=True) as s:
        return call(OpContext(s), op, args)


def test_http_lists_the_schema_tools_and_answers_like_the_engine(
    cm_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def session(url: str) -> tuple[Any, Any, Any]:
        from mcp import Client

        async with Client(url) as client:
            listed = await client.list_tools()
            ok = await client.call_tool("temporal_reachability", reach_args("n41", limit=5))
            bad = await client.call_tool(
                "temporal_reachability", {"src": "n41", "window": {"t_a": 9, "t_b": 1}}
            )
        return listed, ok, bad

    with http_server(cm_store) as server:
        assert server.url.startswith("http://127.0.0.1:")
        listed, ok, bad = anyio.run(session, server.url)
    capsys.readouterr()
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    tools = [schema_fields(t) for t in listed.tools]
    assert tools[: len(schema)] == schema
    assert [t["name"] for t in tools[len(schema) :]] == ["verify_plan", "run_plan", "verify_answer"]
    assert not ok.is_error and envelope(ok) == direct(
        cm_store, "temporal_reachability", reach_args("n41", limit=5)
    )
    err = envelope(bad)
    assert bad.is_error and err["error"] == "E_INVALID_ARG" and set(err) == {"error", "message", "details"}


def test_eight_concurrent_clients_each_get_their_answers(cm_store: Path) -> None:
    """Eight clients, each on its own HTTP session, page through their own source's reachable set at the
    same time; every page equals the engine's page for that client's arguments (no crossed answers)."""
    want = {}
    for src in SOURCES:
        first = direct(cm_store, "temporal_reachability", reach_args(src, days=14, limit=3))
        pages = [first]
        if first["payload"]["cursor"]:
            more = {**reach_args(src, days=14, limit=3), "cursor": first["payload"]["cursor"]}
            pages.append(direct(cm_store, "temporal_reachability", more))
        want[src] = pages
    got: dict[str, list[dict[str, Any]]] = {}
    started: list[float] = []
    finished: list[float] = []

    async def client(url: str, src: str) -> None:
        from mcp import Client

        async with Client(url) as c:
            started.append(time.perf_counter())
            first = envelope(await c.call_tool("temporal_reachability", reach_args(src, days=14, limit=3)))
            pages = [first]
            if first["payload"]["cursor"]:
                more = {**reach_args(src, days=14, limit=3), "cursor": first["payload"]["cursor"]}
                pages.append(envelope(await c.call_tool("temporal_reachability", more)))
            got[src] = pages
            finished.append(time.perf_counter())

    async def all_clients(url: str) -> None:
        async with anyio.create_task_group() as tg:
            for src in SOURCES:
                tg.start_soon(client, url, src)

    with http_server(cm_store) as server:
        anyio.run(all_clients, server.url)
    assert got == want
    assert len({json.dumps(p[0]["payload"]) for p in got.values()}) == len(SOURCES)  # really eight answers
    assert sum(len(p) for p in got.values()) > len(SOURCES)  # and the cursors paged
    assert max(started) < min(finished)  # the eight sessions were open at the same time


def test_the_cost_guard_applies(cm_store: Path) -> None:
    async def session(url: str) -> Any:
        from mcp import Client

        async with Client(url) as c:
            return await c.call_tool("temporal_reachability", reach_args("n41", days=14))

    with http_server(cm_store, "--budget-s", "0") as server:
        result = anyio.run(session, server.url)
    err = envelope(result)
    assert result.is_error and err["error"] == "E_COST", err
    assert err["details"]["budget_s"] == 0
