"""``tgms ops``, ``tgms schema`` and ``tgms call`` through the CLI entry point on a small store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.sampling import counter_clock
from tgms.engine.canonical import digest
from tgms.engine.operators.registry import all_operators
from tgms.engine.operators.schemas import operator_schemas, planner_manual, tool_definitions
from tgms.engine.store import Store
from tgms.pipeline.cli.main import main


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "store"
    store = Store.create(root, "duckdb", now=counter_clock())
    try:
        store.write(
            [
                {
                    "op": "assert_node",
                    "uid": "n1",
                    "label": "user",
                    "props": {"name": "Alice Smith"},
                    "vt_s": 0,
                },
                {"op": "assert_node", "uid": "n2", "label": "user", "props": {"name": "Bob"}, "vt_s": 0},
                {"op": "assert_node", "uid": "n3", "label": "user", "props": {"name": "Alicia"}, "vt_s": 0},
            ]
        )
        store.write(
            [
                {"op": "assert_edge", "src": "n1", "dst": "n2", "rel_type": "msg", "vt_s": t, "vt_e": t + 1}
                for t in (10, 20, 30)
            ]
        )
    finally:
        store.close()
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def call(capsys: pytest.CaptureFixture[str], store: Path, op: str, args: Any, *extra: str) -> dict[str, Any]:
    text = args if isinstance(args, str) else json.dumps(args)
    code, out, err = run(capsys, "call", op, text, "--store", str(store), *extra)
    assert code == 0, err
    return json.loads(out)


def error(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(capsys, *argv)
    assert code != 0 and out == ""
    body = json.loads(err.strip().splitlines()[-1])
    assert set(body) == {"error", "message", "details"} and body["message"]
    return code, body


def test_ops_lists_every_operator(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ops")
    assert code == 0
    lines = out.strip().splitlines()
    specs = all_operators()
    assert len(lines) == len(specs)
    for line, spec in zip(lines, specs, strict=True):
        name, family, summary = line.split(maxsplit=2)
        assert (name, family, summary) == (spec.name, spec.family, spec.summary)


def test_schema_prints_tool_definitions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema")
    assert code == 0 and json.loads(out) == tool_definitions()
    code, out, _ = run(capsys, "schema", "--schemas")
    assert code == 0 and json.loads(out) == operator_schemas()
    code, out, _ = run(capsys, "schema", "--manual")
    assert code == 0 and out == planner_manual()


def test_call_prints_the_envelope(capsys: pytest.CaptureFixture[str], store_dir: Path) -> None:
    env = call(capsys, store_dir, "resolve_entities", {"query": "ali"})
    assert set(env) == {"op", "args_echo", "dataset_extent", "payload", "result_digest"}
    assert env["op"] == "resolve_entities" and env["args_echo"]["query"] == "ali"
    assert [(r["uid"], r["match"]) for r in env["payload"]["rows"]] == [("n1", "prefix"), ("n3", "prefix")]
    assert env["result_digest"] == digest(env["payload"])
    assert env["dataset_extent"] == {"vt_min": 10, "vt_max": 30}
    again = call(capsys, store_dir, "resolve_entities", {"query": "ali"})
    assert again == env  # deterministic


def test_call_pages_with_the_cursor(capsys: pytest.CaptureFixture[str], store_dir: Path) -> None:
    args = {"uid": "n1", "include_edges": True, "limit": 2}
    first = call(capsys, store_dir, "entity_history", args)["payload"]
    assert [e["vt_s"] for e in first["edges"]] == [10, 20] and first["truncated"] and first["cursor"]
    rest = call(capsys, store_dir, "entity_history", {**args, "cursor": first["cursor"]})["payload"]
    assert [e["vt_s"] for e in rest["edges"]] == [30] and rest["cursor"] is None


def test_call_compute_and_compact(capsys: pytest.CaptureFixture[str], store_dir: Path) -> None:
    args = '{"fn": "sum", "input": [0.1, 0.2]}'
    code, out, _ = run(capsys, "call", "compute", args, "--store", str(store_dir), "--compact")
    assert code == 0 and len(out.strip().splitlines()) == 1
    assert json.loads(out)["payload"]["value"] == 0.3


@pytest.mark.parametrize(
    ("op", "args", "code"),
    [
        ("no_such_op", "{}", "E_NOT_FOUND"),
        ("resolve_entities", "{query: 'x'}", "E_SCHEMA"),  # not JSON
        ("resolve_entities", '{"query": "x"', "E_SCHEMA"),  # truncated JSON
        ("resolve_entities", "[1, 2]", "E_SCHEMA"),  # not an object
        ("resolve_entities", '{"query": "x", "nmae": 1}', "E_SCHEMA"),  # unknown field
        ("resolve_entities", "{}", "E_SCHEMA"),  # missing required
        ("resolve_entities", '{"query": "   "}', "E_INVALID_ARG"),
        ("compute", '{"fn": "sum", "input": [NaN]}', "E_SCHEMA"),  # NaN is not JSON
        ("compute", '{"fn": "sum", "input": [1], "k": 2}', "E_INVALID_ARG"),
        ("entity_history", '{"uid": "nobody"}', "E_NOT_FOUND"),
    ],
)
def test_call_bad_input(
    capsys: pytest.CaptureFixture[str], store_dir: Path, op: str, args: str, code: str
) -> None:
    exit_code, body = error(capsys, "call", op, args, "--store", str(store_dir))
    assert body["error"] == code and exit_code == 2


def test_call_cost_refusal_and_missing_store(
    capsys: pytest.CaptureFixture[str], store_dir: Path, tmp_path: Path
) -> None:
    exit_code, body = error(capsys, "call", "resolve_entities", '{"query": "x"}', "--store", str(store_dir),
                            "--budget-s", "0")  # fmt: skip
    assert body["error"] == "E_COST" and exit_code == 1 and body["details"]["budget_s"] == 0
    exit_code, body = error(
        capsys, "call", "resolve_entities", '{"query": "x"}', "--store", str(tmp_path / "none")
    )
    assert body["error"] == "E_NOT_FOUND" and exit_code == 2  # no such directory (issue 14)
