"""Bad input from a model (issue 25, item 8), each a clear structured outcome in the task's record, against
the scripted server (a test double): an empty reply, an endless reply (cut at ``max_tokens``), a prompt
over the window (the server's 400), a server that dies mid-task (no orphan left), and a reply timeout that
is never re-sent to a one-request-at-a-time local server (no double work)."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import replace
from typing import Any

import pytest

from tests.models.conftest import config, echo
from tests.models.local.conftest import scripted_spec
from tests.pipeline.systems.test_tgms import count_task, oracle_reply, scripted_rule
from tgms.models.client import ChatClient
from tgms.models.config import GenerationConfig
from tgms.models.errors import EndpointTimeoutError
from tgms.models.local.server import LocalServer, group_alive
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import RunSettings, SystemEnv, build_system, run_task
from tgms.pipeline.systems.record import TaskRecord

CUT = '{"steps": [{"id": "s1", "op": "compute", "args": {"fn": "count", "input": [1, 1, 1, 1, 1, 1, 1'


def test_an_empty_reply_is_named_and_ends_as_model_error(make_system, dev) -> None:
    system, server = make_system(scripted_rule(dev, planner=lambda t: ""))
    rec = run_task(system, dev[0])
    # the first attempt and 3 repairs, and 2 redraws of a repeated repair (no budget spent)
    assert rec.status == "model_error" and rec.correct is False and server.log.chat_count == 6
    assert [v["code"] for a in rec.attempts for v in a.violations] == ["empty_reply"] * 6
    assert rec.errors[0]["error"] == "E_MODEL_OUTPUT"
    assert rec.errors[0]["details"]["last_violations"][0]["code"] == "empty_reply"
    assert rec.repeat_replies == 5  # the same empty reply: retried with seeded sampling, not copied
    assert sum(a.redraw for a in rec.attempts) == 2
    TaskRecord.model_validate_json(rec.to_json())


def test_an_endless_reply_cut_at_max_tokens_is_named_in_the_repair(make_system, dev) -> None:
    sent = [0]

    def planner(task: Task) -> Any:
        sent[0] += 1
        return {"text": CUT, "finish_reason": "length"} if sent[0] == 1 else oracle_reply(task)

    task = count_task(dev)
    system, server = make_system(scripted_rule(dev, planner=planner))
    rec = run_task(system, task)
    assert rec.status == "answered" and rec.correct is True
    assert rec.attempts[0].violations[0]["code"] == "max_tokens" and rec.attempts[1].valid
    repair = server.log.chat_bodies[1]["messages"][-1]["content"]
    assert "token limit" in repair and '<data name="previous_reply">' in repair


def test_a_prompt_over_the_window_is_refused_once_and_recorded(make_system, dev) -> None:
    system, server = make_system(scripted_rule(dev))
    vllm = "This model's maximum context length is 8192 tokens. However, you requested 9301 tokens."
    server.fail_next(1, 400, message=vllm)
    rec = run_task(system, dev[0])
    assert rec.status == "refused" and rec.correct is False and server.log.chat_count == 1  # not retried
    assert (
        rec.errors[0]["error"] == "E_RESPONSE_CONTEXT"
        and "maximum context length" in rec.errors[0]["details"]["body"]
    )
    system2, other = make_system(scripted_rule(dev))  # any other 400 stays a rejected request, not refused
    other.fail_next(1, 400, message="unknown field 'foo'")
    rec2 = run_task(system2, dev[0])
    assert (
        rec2.status == "model_error" and rec2.errors[0]["error"] == "E_RESPONSE" and other.log.chat_count == 1
    )


def test_a_reply_timeout_is_not_resent_to_a_one_request_at_a_time_server() -> None:
    with ScriptedServer(echo) as server:
        server.hang_next(1, 3.0)
        serial = ChatClient(config(server.url, timeout_s=0.5, retry_read_timeouts=False))
        with pytest.raises(EndpointTimeoutError) as err:
            serial.complete([{"role": "user", "content": "slow prefill"}])
        serial.close()
        assert server.log.chat_count == 1  # the server's one slot was never given the same work again
        assert err.value.details["phase"] == "read" and err.value.details["retried"] is False
        server.hang_next(1, 3.0)
        batching = ChatClient(config(server.url, timeout_s=0.5, retry_read_timeouts=True))
        assert batching.complete([{"role": "user", "content": "x"}]).text == "re: x"  # vLLM: retried
        batching.close()
        assert server.log.chat_count == 3


def test_a_serial_local_server_endpoint_never_resends_on_timeout(tmp_path) -> None:
    serial = LocalServer(scripted_spec(), log_dir=tmp_path)
    serial.port = 1  # endpoint() reads the port only
    assert serial.spec.concurrency == 2 and serial.endpoint().retry_read_timeouts is True
    one = LocalServer(replace(scripted_spec(), concurrency=1), log_dir=tmp_path)
    one.port = 1
    assert one.endpoint().retry_read_timeouts is False


def test_a_server_that_dies_mid_task_is_infra_error_with_its_attempts_and_no_orphan(
    tmp_path, dev, cm_small
) -> None:
    with LocalServer(scripted_spec(reply="no plan here"), log_dir=tmp_path) as server:
        pid = server.pid
        assert pid is not None
        client = ChatClient(server.endpoint(max_retries=2, backoff_base_s=0.01, backoff_cap_s=0.02))
        calls = [0]
        original = client.complete

        def complete(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            if calls[0] == 2:  # the server dies between the first reply and the repair
                os.killpg(pid, signal.SIGKILL)
                server._proc.wait(timeout=10)  # type: ignore[union-attr]
            return original(*args, **kwargs)

        client.complete = complete  # type: ignore[method-assign]
        env = SystemEnv(
            cm_small.store_dir,
            client,
            RunSettings(generation=GenerationConfig(model="scripted")),
            tmp_path / "work",
        )
        try:
            rec = run_task(build_system("tgms", env), dev[0])
        finally:
            env.close()
            client.close()
    assert rec.status == "infra_error" and rec.correct is None
    assert [a.n for a in rec.attempts] == [1] and rec.attempts[0].violations[0]["code"] == "unparseable"
    assert rec.errors[0]["error"] in ("E_INFRA_RETRIES", "E_INFRA_NO_REPLICA")
    assert not group_alive(pid) and not server.running


def test_records_of_bad_input_stay_one_json_line(make_system, dev) -> None:
    system, _ = make_system(scripted_rule(dev, planner=lambda t: json.dumps({"steps": "nope"})))
    rec = run_task(system, dev[0])
    assert rec.status == "model_error" and json.loads(rec.to_json())["attempts"][0]["violations"]
