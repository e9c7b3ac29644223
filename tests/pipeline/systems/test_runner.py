"""run_task and run_tasks against the scripted test-double server: scoring, infra errors unscored,
concurrency kept, the cache sends nothing on a rerun, a killed run resumes; the record schema holds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.models.conftest import config
from tgms.engine.api import InvalidArgError
from tgms.models.answerer import ask_answer
from tgms.models.client import ChatClient
from tgms.models.config import GenerationConfig
from tgms.models.testing.scripted_server import ScriptedServer, last_user_message
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import (
    SYSTEMS,
    BuiltSystem,
    RecordDraft,
    RunSettings,
    SystemConfig,
    SystemEnv,
    build_system,
    run_task,
    system,
)
from tgms.pipeline.systems.record import STATUSES, TaskRecord, record_schema
from tgms.pipeline.systems.runner import read_records, run_tasks, summarize


def answer_rule(body: dict[str, Any]) -> str:
    """Answer ``count`` questions "what is N+1?" with N+1, except N = 13, answered wrongly."""
    question = last_user_message(body).split("\n", 1)[0]
    n = int(question.split()[2].split("+")[0])
    value = n + 1 if n != 13 else 0
    return json.dumps({"text": f"It is {value}.", "answer": {"kind": "count", "value": value}})


def tasks(*ns: int) -> list[Task]:
    return [
        Task(id=f"t{n}", template="X.add", family="T1", answer_kind="count", question=f"what is {n}+1?",
             input_uids=(), gold=n + 1)
        for n in ns
    ]  # fmt: skip


class AskConfig(SystemConfig):
    prefix: str = "You add."


def ask_factory(cfg: AskConfig, env: SystemEnv) -> Any:
    def run(task: Task, rec: RecordDraft) -> None:
        res = ask_answer(
            rec.calls.complete, role="answerer", system=cfg.prefix, user=task.question, kind="count",
            with_claims=False,
        )  # fmt: skip
        rec.record.answer = res.answer
        rec.record.status = "answered" if res.answer is not None else "model_error"

    return run


@pytest.fixture
def registered() -> Iterator[str]:
    system("_test_ask", config=AskConfig)(ask_factory)
    yield "_test_ask"
    SYSTEMS.pop("_test_ask", None)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(answer_rule) as s:
        yield s


def built(name: str, client: ChatClient, tmp_path: Path, **cfg: Any) -> BuiltSystem:
    env = SystemEnv(
        tmp_path / "no-store",
        client,
        RunSettings(generation=GenerationConfig(model="scripted")),
        tmp_path / "work",
    )
    return build_system(name, env, cfg)


def test_scored_by_the_suite_rule_and_schema_holds(
    registered: str, server: ScriptedServer, tmp_path: Path
) -> None:
    with ChatClient(config(server.url)) as client:
        sysm = built(registered, client, tmp_path)
        good, bad = run_task(sysm, tasks(4)[0]), run_task(sysm, tasks(13)[0])
    assert (good.status, good.correct, good.predicted) == ("answered", True, 5)
    assert (bad.status, bad.correct, bad.predicted) == ("answered", False, 0)
    assert len(good.llm_calls) == 1 and good.llm_calls[0].role == "answerer"
    assert good.tokens.prompt > 0 and good.serving["model"] == "scripted"
    line = json.loads(good.to_json())
    assert TaskRecord.model_validate(line) == good
    schema = record_schema()
    assert set(schema["required"]) >= {"task_id", "system", "model", "seed", "answer_kind"}
    assert tuple(schema["properties"]["status"]["enum"]) == STATUSES
    with pytest.raises(ValueError):
        TaskRecord.model_validate({**line, "surprise": 1})


def test_infra_failure_is_labelled_and_not_scored(
    registered: str, server: ScriptedServer, tmp_path: Path
) -> None:
    server.fail_next(100, 500)
    with ChatClient(config(server.url, max_retries=2)) as client:
        recs = run_tasks(built(registered, client, tmp_path), tasks(1, 2))
    assert [r.status for r in recs] == ["infra_error", "infra_error"]
    assert all(r.correct is None for r in recs)
    assert recs[0].errors[0]["error"] == "E_INFRA_RETRIES"
    s = summarize(recs)
    assert (s["tasks"], s["scored"], s["unscored_infra"], s["accuracy"]) == (2, 0, 2, None)


def test_bad_config_and_unknown_system_refused(
    registered: str, server: ScriptedServer, tmp_path: Path
) -> None:
    with ChatClient(config(server.url)) as client:
        with pytest.raises(InvalidArgError) as err:
            built(registered, client, tmp_path, prefx="typo")
        assert "prefx" in err.value.details["problems"][0]
        with pytest.raises(InvalidArgError) as err:
            built("no_such_system", client, tmp_path)
        assert registered in err.value.details["allowed"]


def test_n_concurrent_tasks_keep_n_requests_in_flight(
    registered: str, server: ScriptedServer, tmp_path: Path
) -> None:
    server.delay_s = 0.4
    with ChatClient(config(server.url, concurrency=8)) as client:
        recs = run_tasks(built(registered, client, tmp_path), tasks(*range(8)), concurrency=4)
    assert server.log.high_water == 4
    assert [r.task_id for r in recs] == [f"t{i}" for i in range(8)]


def test_rerun_from_cache_sends_zero_requests(
    registered: str, server: ScriptedServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with ChatClient(config(server.url, cache_dir=cache)) as client:
        first = run_tasks(built(registered, client, tmp_path), tasks(1, 2, 13), concurrency=2)
    sent = server.log.chat_count
    assert sent == 3
    with ChatClient(config(server.url, cache_dir=cache)) as client:
        again = run_tasks(built(registered, client, tmp_path), tasks(1, 2, 13), concurrency=2)
    assert server.log.chat_count == sent  # nothing sent
    assert [r.predicted for r in again] == [r.predicted for r in first]
    assert all(c.cached for r in again for c in r.llm_calls)


def test_killed_run_resumes_without_redoing(registered: str, server: ScriptedServer, tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    with ChatClient(config(server.url)) as client:
        sysm = built(registered, client, tmp_path)
        run_tasks(sysm, tasks(1, 2), out=out)
        with out.open("a") as fh:
            fh.write('{"task_id": "t3", "sys')  # a torn last line, as a kill mid-write leaves
        before = server.log.chat_count
        new = run_tasks(sysm, tasks(1, 2, 3, 4), out=out)
    assert [r.task_id for r in new] == ["t3", "t4"]
    assert server.log.chat_count == before + 2
    assert sorted(r.task_id for r in read_records(out)) == ["t1", "t2", "t3", "t4"]


def test_summary_denominators(registered: str, server: ScriptedServer, tmp_path: Path) -> None:
    with ChatClient(config(server.url)) as client:
        recs = run_tasks(built(registered, client, tmp_path), tasks(1, 2, 3, 13), concurrency=2)
    s = summarize(recs)
    assert (s["tasks"], s["scored"], s["correct"], s["accuracy"]) == (4, 4, 3, 0.75)
    assert s["status"] == {"answered": 4} and s["seconds_per_task"] >= 0
