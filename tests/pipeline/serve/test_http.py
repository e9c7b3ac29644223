"""``tgms serve --http`` with SDK clients: the same tools and answers as stdio, 8 concurrent clients each
get their own answers, a slow call does not stall a fast one, and the cost guard still refuses."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.pipeline.serve._servers import envelope, http_server, reach_args, schema_fields
from tgms.engine.api import OpContext, Store, build_store, call
from tgms.pipeline.cli.main import main

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
    connected = 0
    all_connected = anyio.Event()

    async def client(url: str, src: str) -> None:
        nonlocal connected
        from mcp import Client

        async with Client(url) as c:
            connected += 1
            if connected == len(SOURCES):
                all_connected.set()
            await all_connected.wait()  # eight open sessions, then eight calls at once
            first = envelope(await c.call_tool("temporal_reachability", reach_args(src, days=14, limit=3)))
            pages = [first]
            if first["payload"]["cursor"]:
                more = {**reach_args(src, days=14, limit=3), "cursor": first["payload"]["cursor"]}
                pages.append(envelope(await c.call_tool("temporal_reachability", more)))
            got[src] = pages

    async def all_clients(url: str) -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for src in SOURCES:
                    tg.start_soon(client, url, src)

    with http_server(cm_store) as server:
        anyio.run(all_clients, server.url)
    assert got == want
    assert len({json.dumps(p[0]["payload"]) for p in got.values()}) == len(SOURCES)  # really eight answers
    assert sum(len(p) for p in got.values()) > len(SOURCES)  # and the cursors paged


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


DAY = 86_400 * 1_000_000


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """A synthetic store of 300k events over 60 days (built in seconds), big enough for a genuinely slow
    operator call; and its valid-time extent as a window."""
    root = tmp_path_factory.mktemp("mcp-big") / "syn"
    with build_store("synthetic", root, events=300_000, nodes=3_000, seed=0) as store:
        extent = OpContext(store).extent()
    return root, {"t_a": extent["vt_min"], "t_b": extent["vt_max"] + 1}


def test_a_slow_call_does_not_stall_a_fast_one(big_store: tuple[Path, dict[str, int]]) -> None:
    """A real slow call (every 3-event temporal path within 2 days among 300k events: ~6 s here, admitted
    by the default cost guard) is issued first; a fast call from a second client issued a second later
    must come back long before it. A server that ran calls on its event loop would answer the fast call
    only after the slow one."""
    store, window = big_store
    slow_args = {"motif": "M_path_3", "delta": 2 * DAY, "window": window}
    fast_args = {"src": "s2252", "window": {"t_a": window["t_a"], "t_b": window["t_a"] + DAY}, "limit": 5}
    times: dict[str, tuple[float, float, Any]] = {}

    async def timed(url: str, key: str, delay_s: float, op: str, args: dict[str, Any]) -> None:
        from mcp import Client

        async with Client(url) as c:
            await c.list_tools()
            await anyio.sleep(delay_s)
            t0 = time.perf_counter()
            result = await c.call_tool(op, args)
            times[key] = (t0, time.perf_counter(), result)

    async def both(url: str) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(timed, url, "slow", 0.0, "count_temporal_motifs", slow_args)
            tg.start_soon(timed, url, "fast", 1.0, "temporal_reachability", fast_args)

    with http_server(store) as server:
        anyio.run(both, server.url)
    (s0, s1, slow), (f0, f1, fast) = times["slow"], times["fast"]
    assert not slow.is_error and not fast.is_error, (envelope(slow), envelope(fast))
    assert envelope(slow)["payload"]["count"] > 0 and envelope(fast)["payload"]["rows_total"] > 0
    assert s1 - s0 > 2.5, f"the slow call took only {s1 - s0:.2f} s: it proves nothing"
    assert s0 < f0 and f1 < s1, {"slow": (0, s1 - s0), "fast": (f0 - s0, f1 - s0)}
    assert f1 - f0 < (s1 - s0) / 2


def test_http_is_local_only(cm_store: Path) -> None:
    """127.0.0.1 only, and a request naming another host or origin (DNS rebinding from a web page) is
    refused before it reaches a tool."""
    import httpx

    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with http_server(cm_store) as server:
        host = server.url.split("/")[2]
        assert host.startswith("127.0.0.1:")
        with httpx.Client(timeout=30) as http:
            evil_host = http.post(server.url, json=ping, headers={**headers, "Host": "evil.example"})
            evil_origin = http.post(
                server.url, json=ping, headers={**headers, "Origin": "http://evil.example"}
            )
    assert evil_host.status_code == 421
    assert evil_origin.status_code == 403
