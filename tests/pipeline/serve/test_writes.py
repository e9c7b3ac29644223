"""Read-only by default; ``--allow-writes`` offers ``write_batch``, whose writes go through the event log
like every write (and an audit line on stderr), are seen by later calls, and fail as structured errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from tests.pipeline.cli._cli import store_fingerprint
from tests.pipeline.serve._servers import envelope, http_server, reach_args
from tgms.engine.api import LOG_NAME, Store, replay
from tgms.engine.store.eventlog import read_log

NEW = {
    "op": "assert_node",
    "uid": "mcp-new",
    "label": "user",
    "props": {"name": "written over MCP"},
    "vt_s": 5,
}


def _copy(store: Path, to: Path) -> Path:
    replay(store / LOG_NAME, to).close()
    return to


def _calls(url: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    async def session() -> tuple[list[str], list[Any]]:
        from mcp import Client

        async with Client(url) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            return names, [await c.call_tool(name, args) for name, args in calls]

    return anyio.run(session)


def test_read_only_by_default(cm_store: Path, tmp_path: Path) -> None:
    store = _copy(cm_store, tmp_path / "store")
    before = store_fingerprint(store)
    calls = [("write_batch", {"ops": [NEW]}), ("temporal_reachability", reach_args("n41"))]
    with http_server(store, "--results", str(tmp_path / "results")) as server:
        names, (write, read) = _calls(server.url, calls)
    assert "write_batch" not in names
    err = envelope(write)
    assert write.is_error and err["error"] == "E_CONFLICT" and "--allow-writes" in err["message"], err
    assert not read.is_error
    assert store_fingerprint(store) == before  # nothing in the store directory changed


def test_allow_writes_logs_each_write_and_later_calls_see_it(cm_store: Path, tmp_path: Path) -> None:
    store = _copy(cm_store, tmp_path / "store")
    with Store.open(store, read_only=True) as s:
        digest_before = s.digest()
    batches_before = len(read_log(store / LOG_NAME).batches)
    bad = {"op": "retract", "ref": {"uid": "no-such-node"}, "t": 10}
    calls = [
        ("entity_history", {"uid": "mcp-new"}),  # not there yet
        ("write_batch", {"ops": [NEW]}),
        ("entity_history", {"uid": "mcp-new"}),  # a fresh session sees the write
        ("write_batch", {"ops": [bad]}),  # refused by the store: logged as failed, changes nothing
        ("write_batch", {"ops": [{"op": "assert_node"}]}),  # malformed: refused before it is logged
    ]
    with http_server(store, "--allow-writes", "--results", str(tmp_path / "results")) as server:
        names, (missing, wrote, history, failed, malformed) = _calls(server.url, calls)
    assert names[-1] == "write_batch"
    assert missing.is_error and envelope(missing)["error"] == "E_NOT_FOUND"

    ok = envelope(wrote)
    assert not wrote.is_error and ok["status"] == "committed" and ok["seq"] == batches_before + 1, ok
    rows = envelope(history)["payload"]["rows"]
    assert [(r["uid"], r["props"]) for r in rows] == [("mcp-new", NEW["props"])]

    err = envelope(failed)
    assert failed.is_error and err["error"] == "E_NOT_FOUND" and err["details"]["seq"] == batches_before + 2
    assert malformed.is_error and envelope(malformed)["error"] == "E_SCHEMA"

    log = read_log(store / LOG_NAME)  # both store-checked batches are in the event log, with outcomes
    assert len(log.batches) == batches_before + 2
    committed, refused = log.batches[-2:]
    assert committed.outcome["status"] == "committed" and committed.ops(store / LOG_NAME) == [
        {**NEW, "vt_e": 2**62, "source": None, "provenance_ref": None}
    ]
    assert refused.outcome["status"] == "failed" and refused.outcome["error"]["error"] == "E_NOT_FOUND"
    audit = [json.loads(line.split("write ", 1)[1]) for line in server.stderr if "write {" in line]
    assert [(a["seq"], a["status"]) for a in audit] == [(ok["seq"], "committed"), (ok["seq"] + 1, "failed")]

    with Store.open(store, read_only=True) as s:  # the failed batch changed nothing; the committed one did
        assert s.digest() != digest_before
    replayed = replay(store / LOG_NAME, tmp_path / "replayed")
    with replayed, Store.open(store, read_only=True) as s:
        assert replayed.digest() == s.digest()
