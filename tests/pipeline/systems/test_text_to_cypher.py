"""text_to_cypher: real Cypher on a read-only Kùzu graph of the latest state, with its repair loop."""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.systems._scripted import make_env, system_text
from tests.pipeline.systems.conftest import SmallSuite
from tgms.engine.api import ScanFilter, Store
from tgms.models.testing.scripted_server import ScriptedServer, last_user_message
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import build_system, run_task
from tgms.pipeline.systems.kuzu_graph import write_clause
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.systems.text_to_cypher import read_query

pytest.importorskip("kuzu", reason="the kuzu extra is not installed")

_ROWS = re.compile(r'<data name="rows">\n(.*?)\n</data>', re.DOTALL)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One work directory for the module: the Kùzu graph is built once and reused."""
    return tmp_path_factory.mktemp("t2c")


class Script:
    """Cypher replies in order (one per query request); answer requests get a fixed count."""

    def __init__(self, *queries: str) -> None:
        self.queries = list(queries)
        self.cypher_bodies: list[dict[str, Any]] = []
        self.answer_bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> str:
        if system_text(body).startswith("You translate"):
            self.cypher_bodies.append(body)
            return json.dumps({"cypher": self.queries[min(len(self.cypher_bodies), len(self.queries)) - 1]})
        self.answer_bodies.append(body)
        return json.dumps({"text": "x", "answer": {"kind": "count", "value": 1}})

    def rows(self) -> dict[str, Any]:
        m = _ROWS.search(last_user_message(self.answer_bodies[-1]))
        assert m is not None
        return json.loads(html.unescape(m.group(1)))


@pytest.fixture
def run(cm_small: SmallSuite, work: Path) -> Iterator[Any]:
    def go(script: Script, task: Task | None = None, **cfg: Any) -> TaskRecord:
        task = task or Task(id="t/1", question="How many?", answer_kind="count", gold=1, input_uids=())
        with ScriptedServer(script) as server:
            env = make_env(cm_small.store_dir, server.url, work, repair_budget=cfg.pop("repair_budget", 3))
            try:
                return run_task(build_system("text_to_cypher", env, cfg), task)
            finally:
                env.close()

    yield go


def _engine_out_count(store_dir: Path, uid: str) -> int:
    with Store.open(store_dir, read_only=True) as st:
        nid = st.entity_ids()[uid]
        return st.scan_edges(ScanFilter(src=(nid,), rel_types=("msg",))).num_rows


def test_real_cypher_counts_what_the_engine_counts(run: Any, cm_small: SmallSuite) -> None:
    uid = next(t.input_uids[0] for t in cm_small.dev if t.input_uids)
    want = _engine_out_count(cm_small.store_dir, uid)
    assert want > 1
    script = Script(f"MATCH (a:Node {{uid: '{uid}'}})-[e:MSG]->(:Node) RETURN count(e) AS n")
    rec = run(script)
    assert script.rows() == {"columns": ["n"], "rows": [[want]], "truncated": False}
    assert rec.first_emission_valid is True and [a.valid for a in rec.attempts] == [True]
    assert rec.status == "answered" and len(rec.llm_calls) == 2


def test_a_write_query_is_refused_without_running(run: Any, cm_small: SmallSuite, work: Path) -> None:
    script = Script("CREATE (:Node {uid: 'intruder'}) RETURN 1", "MATCH (a:Node) RETURN count(a) AS n")
    rec = run(script)
    first, second = rec.attempts
    assert first.valid is False and first.runtime_error is None  # not run: a read-only database would
    assert first.violations[0]["problem"] == "write_clause" and first.violations[0]["clause"] == "CREATE"
    assert second.valid is True and rec.first_emission_valid is False
    assert "CREATE" in last_user_message(script.cypher_bodies[1])  # the repair says what was wrong
    n_nodes = script.rows()["rows"][0][0]
    check = Script("MATCH (a:Node {uid: 'intruder'}) RETURN count(a) AS n")
    run(check)
    assert check.rows()["rows"] == [[0]] and n_nodes > 100


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n) DETACH DELETE n",
        "match (n) set n.uid = 'x' return n",
        "CALL show_tables() RETURN *",
        "COPY Node FROM 'x.csv'",
    ],
)
def test_write_clauses_are_found_outside_literals(query: str) -> None:
    assert write_clause(query) is not None
    assert write_clause("MATCH (n:Node) WHERE n.uid = 'CREATE SET' RETURN n.uid // delete") is None


def test_an_erroring_query_is_repaired_with_the_error_text(run: Any) -> None:
    script = Script("MATCH (a:Nod) RETURN count(a)", "MATCH (a:Node) RETURN count(a) AS n")
    rec = run(script)
    first, second = rec.attempts
    assert first.runtime_error is not None and "Nod" in first.runtime_error["message"]
    assert first.runtime_error["message"] in html.unescape(last_user_message(script.cypher_bodies[1]))
    assert second.valid and rec.status == "answered" and rec.context is not None
    assert rec.context["query_attempt"] == 2


def test_an_empty_result_is_repaired(run: Any) -> None:
    script = Script("MATCH (a:Node {uid: 'n-none'}) RETURN a.uid", "MATCH (a:Node) RETURN count(a) AS n")
    rec = run(script)
    assert [a.valid for a in rec.attempts] == [False, True]
    assert rec.attempts[0].violations[0]["problem"] == "empty_result"
    assert "no rows" in last_user_message(script.cypher_bodies[1])


def test_the_repair_budget_bounds_the_attempts(run: Any) -> None:
    script = Script("MATCH (a:Nod) RETURN a")
    rec = run(script, repair_budget=2)
    assert len(rec.attempts) == 3 and not any(a.valid for a in rec.attempts)
    assert len(script.cypher_bodies) == 3 and script.answer_bodies == []  # no answer without rows
    assert rec.status == "model_error" and rec.correct is False and rec.errors[0]["error"] == "E_MODEL_OUTPUT"


def test_all_empty_results_still_answer_from_no_rows(run: Any) -> None:
    script = Script("MATCH (a:Node {uid: 'n-none'}) RETURN a.uid")
    rec = run(script, repair_budget=1)
    assert [a.valid for a in rec.attempts] == [False, False] and rec.status == "answered"
    assert script.rows() == {"columns": ["a.uid"], "rows": [], "truncated": False}


def test_the_row_cap_holds(run: Any) -> None:
    script = Script("MATCH (a:Node) RETURN a.uid ORDER BY a.uid")
    rec = run(script, row_cap=7)
    rows = script.rows()
    assert len(rows["rows"]) == 7 and rows["truncated"] is True
    assert rec.context is not None and rec.context["rows_truncated"] is True


def test_a_slow_query_times_out_as_a_repairable_error(run: Any) -> None:
    slow = (  # ~10^10 node quadruples: minutes of work, stopped by the timeout
        "MATCH (a:Node), (b:Node), (c:Node), (d:Node) "
        "WHERE a.uid < b.uid AND b.uid < c.uid AND c.uid < d.uid RETURN count(*)"
    )
    script = Script(slow, "MATCH (a:Node) RETURN count(a) AS n")
    rec = run(script, timeout_ms=200)
    assert (
        rec.attempts[0].runtime_error is not None
        and "Interrupted" in rec.attempts[0].runtime_error["message"]
    )
    assert rec.attempts[1].valid


def test_the_graph_is_cached_by_store_digest_and_rebuilt_when_broken(
    cm_small: SmallSuite, tmp_path: Path
) -> None:
    def graph_meta() -> dict[str, Any]:
        with ScriptedServer(Script("MATCH (a:Node) RETURN count(a) AS n")) as server:
            env = make_env(cm_small.store_dir, server.url, tmp_path)
            rec = run_task(
                build_system("text_to_cypher", env),
                Task(id="t", question="?", input_uids=(), answer_kind="count", gold=1),
            )
            env.close()
        assert rec.context is not None and rec.status == "answered"
        return rec.context["graph"]

    assert graph_meta()["cached"] is False
    assert graph_meta()["cached"] is True
    (root,) = (tmp_path / "text_to_cypher").iterdir()
    (root / "ready.json").write_text("{")  # a crash mid-build leaves no (or a torn) marker
    assert graph_meta()["cached"] is False
    (root / "graph.kuzu").write_bytes(b"garbage")
    meta = graph_meta()
    assert meta["cached"] is False and meta["edges"]["MSG"] > 1000
    shutil.rmtree(root)
    assert graph_meta()["cached"] is False


@pytest.mark.parametrize(
    ("reply", "query"),
    [
        ('{"cypher": "MATCH (a:Node) RETURN a.uid"}', "MATCH (a:Node) RETURN a.uid"),
        ('<think>hmm {"x": 1}</think>{"query": " RETURN 1 "}', "RETURN 1"),
        ("Here:\n```cypher\nMATCH (a) RETURN count(a)\n```\nDone.", "MATCH (a) RETURN count(a)"),
        ("  MATCH (a:Node) RETURN a", "MATCH (a:Node) RETURN a"),
        ("I cannot answer that.", None),
        ('{"cypher": ""}', None),
        (
            '{"cypher": "MATCH (a) WHERE a.t &lt; 5 AND a.uid &lt;&gt; \'x\' RETURN a"}',
            "MATCH (a) WHERE a.t < 5 AND a.uid <> 'x' RETURN a",
        ),
    ],
)
def test_the_query_is_read_from_json_a_code_fence_or_bare_text(reply: str, query: str | None) -> None:
    assert read_query(reply) == query


def test_tasks_run_concurrently_one_connection_per_thread(cm_small: SmallSuite, work: Path) -> None:
    uids = sorted({u for t in cm_small.dev for u in t.input_uids})[:8]
    tasks = [
        Task(
            id=f"t/{u}", question=f"How many MSG edges leave {u}?", input_uids=(), answer_kind="count", gold=0
        )
        for u in uids
    ]

    def rule(body: dict[str, Any]) -> str:
        if system_text(body).startswith("You translate"):
            uid = re.search(r"leave (n\d+)", last_user_message(body)).group(1)  # type: ignore[union-attr]
            return json.dumps({"cypher": f"MATCH (:Node {{uid: '{uid}'}})-[e:MSG]->() RETURN count(e) AS n"})
        rows = json.loads(html.unescape(_ROWS.search(last_user_message(body)).group(1)))  # type: ignore[union-attr]
        return json.dumps({"text": "x", "answer": {"kind": "count", "value": rows["rows"][0][0]}})

    with ScriptedServer(rule) as server:
        env = make_env(cm_small.store_dir, server.url, work)
        built = build_system("text_to_cypher", env)
        with ThreadPoolExecutor(4) as pool:
            records = list(pool.map(lambda t: run_task(built, t), tasks))
        env.close()
    assert [r.predicted for r in records] == [_engine_out_count(cm_small.store_dir, u) for u in uids]
