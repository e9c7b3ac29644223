"""Each baseline answers the CollegeMsg dev split end to end against the scripted server (TEST DOUBLE).

The scripted answers are the gold for a chosen half of the tasks and a wrong value for the rest, so the
accuracy the suite's typed rule gives is known exactly; the records must be well-formed JSON lines with
every model call hashed and the context recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.systems._scripted import answer_rule, make_env, unique_question_ids
from tests.pipeline.systems.conftest import SmallSuite
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.pipeline.systems.base import build_system, run_task
from tgms.pipeline.systems.record import TaskRecord

COUNT_ALL = json.dumps({"cypher": "MATCH (a:Node)-[e:MSG]->(b:Node) RETURN count(e) AS n"})
CONFIGS: dict[str, dict[str, Any]] = {
    # 24 events per chunk: a quarter of the chunks to embed (they are cut to the embedder's window)
    "vector_rag": {"chunk_events": 24, "k": 4},
    "static_graph_rag": {"max_edges": 200},
    "text_to_cypher": {"row_cap": 20},
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_baseline_answers_the_dev_split_with_the_scripted_accuracy(
    name: str, cm_small: SmallSuite, tmp_path: Path
) -> None:
    dev = cm_small.dev
    assert len(dev) >= 25
    correct = set(unique_question_ids(dev)[::2])
    rule = answer_rule(dev, correct, other=lambda body: COUNT_ALL)
    with ScriptedServer(rule) as server:
        env = make_env(cm_small.store_dir, server.url, tmp_path / "work")
        try:
            built = build_system(name, env, CONFIGS[name])
            records = [run_task(built, task) for task in dev]
        finally:
            env.close()
            env.client.close()
        chat = server.log.chat_count
    assert [r.status for r in records] == ["answered"] * len(dev)
    assert [r.correct for r in records] == [t.id in correct for t in dev]
    accuracy = sum(bool(r.correct) for r in records) / len(records)
    assert accuracy == len(correct) / len(dev)
    per_task = 2 if name == "text_to_cypher" else 1  # the query, then the answer
    assert chat == per_task * len(dev) == sum(len(r.llm_calls) for r in records)
    for task, rec in zip(dev, records, strict=True):
        again = TaskRecord.model_validate(json.loads(rec.to_json()))  # one JSON line, round-trips
        assert again == rec and rec.task_id == task.id and rec.system == name
        assert rec.predicted is not None and rec.gold == task.gold
        assert all(len(c.request_hash) == 64 and len(c.completion_sha256) == 64 for c in rec.llm_calls)
        assert rec.context is not None and rec.context["prompt_tokens"] > 0
        assert rec.context["token_count_method"] == "upper_bound:utf8_bytes"
        assert rec.tokens.prompt > 0 and rec.latency_s > 0
    if name == "text_to_cypher":
        assert all(r.first_emission_valid and len(r.attempts) == 1 for r in records)
        assert all(r.context["rows"] == 1 for r in records)
    if name == "vector_rag":
        assert all(len(r.context["chunk_ids"]) == 4 for r in records)
        assert records[0].context["index"]["truncated_chunks"] > 0  # said, not hidden
