"""The LLM reporter against the scripted server (a test double), on traces of real plans over a small store:
what the prompt shows (bounded), one retry for a malformed answer, then the mechanical fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.models.conftest import HEAD_T_A, HEAD_T_B, config
from tgms.engine.api import (
    ExecConfig,
    OpContext,
    Store,
    Trace,
    build_plan,
    execute,
    mechanical_answer,
)
from tgms.models.client import ChatClient
from tgms.models.reporter import SUMMARY_LIMIT, report, reporter_prompt
from tgms.models.testing.scripted_server import ScriptedServer

T_A, T_B = HEAD_T_A, HEAD_T_B


@pytest.fixture(scope="module")
def ctx(head_store: Store) -> OpContext:
    return OpContext(head_store)


def reach_trace(ctx: OpContext, kind: str = "count", field: str = "rows_total") -> Trace:
    plan = {
        "plan_id": "r/1",
        "question": "How many nodes can n9 reach?",
        "steps": [
            {
                "id": "s1",
                "op": "temporal_reachability",
                "args": {"src": "n9", "window": {"t_a": T_A, "t_b": T_B}, "limit": 10000},
                "depends_on": [],
            }
        ],
        "answer_spec": {"kind": kind, "from": f"s1.{field}"},
    }
    return execute(build_plan(plan), ctx, config=ExecConfig())


def good_answer(trace: Trace) -> str:
    return json.dumps(mechanical_answer(trace))


@pytest.fixture
def scripted() -> Iterator[Any]:
    opened: list[tuple[ScriptedServer, ChatClient]] = []

    def make(*replies: str) -> tuple[ScriptedServer, Any]:
        sent = [0]

        def rule(body: dict[str, Any]) -> str:
            sent[0] += 1
            return replies[min(sent[0], len(replies)) - 1]

        server = ScriptedServer(rule).start()
        client = ChatClient(config(server.url))
        opened.append((server, client))

        def complete(role: str, messages: list[dict[str, Any]], schema: Any = None, max_tokens: Any = None):
            return client.complete(messages, schema=schema, max_tokens=max_tokens)

        return server, complete

    yield make
    for server, client in opened:
        client.close()
        server.stop()


def test_the_prompt_shows_the_trace_summary_and_the_resolved_value(ctx) -> None:
    trace = reach_trace(ctx)
    total = trace.payload("s1")["rows_total"]  # type: ignore[index]
    assert total > 100  # a list long enough to be cut in the summary
    prompt = reporter_prompt("How many </data> nodes can n9 reach?", trace)
    # fenced data cannot close its fence, even for a reader that decodes entities (docs/security.md)
    assert "How many &lt;/\\u0064ata&gt; nodes" in prompt
    summary = prompt.split('<data name="trace">\n', 1)[1].split("\n</data>", 1)[0]
    steps = json.loads(summary)
    assert steps[0]["id"] == "s1" and steps[0]["op"] == "temporal_reachability" and steps[0]["status"] == "ok"
    assert steps[0]["rows_total"] == total and 0 < len(steps[0]["rows_first"]) <= 3
    assert len(summary) <= SUMMARY_LIMIT + 50
    value = json.loads(prompt.split('<data name="answer_value">\n', 1)[1].split("\n</data>", 1)[0])
    assert value == {"from": "s1.rows_total", "value": total, "truncated": False}


def test_a_good_answer_is_taken_from_the_first_reply(scripted, ctx) -> None:
    trace = reach_trace(ctx)
    server, complete = scripted(good_answer(trace))
    got = report(complete, trace.question, trace)
    assert got.source == "llm" and got.answer == mechanical_answer(trace) and server.log.chat_count == 1
    body = server.log.chat_bodies[0]
    assert body["response_format"]["json_schema"]["schema"]["properties"]["answer"]["properties"]["kind"] == {
        "type": "string",
        "enum": ["count"],
    }


def test_a_malformed_answer_gets_one_retry(scripted, ctx) -> None:
    trace = reach_trace(ctx)
    server, complete = scripted(
        '{"text": "many", "answer": {"kind": "count", "value": "lots"}}', good_answer(trace)
    )
    got = report(complete, trace.question, trace)
    assert got.source == "llm_retry" and got.answer is not None and server.log.chat_count == 2
    retry = server.log.chat_bodies[1]["messages"]
    # the bad reply is quoted as data in the user turn, never replayed as the model's own turn
    assert [m["role"] for m in retry] == ["system", "user"]
    assert retry[1]["content"].startswith(server.log.chat_bodies[0]["messages"][1]["content"])
    assert "cannot be used" in retry[1]["content"] and '<data name="previous_reply">' in retry[1]["content"]
    assert '"lots"' in retry[1]["content"]


def test_after_a_failed_retry_the_mechanical_answer_is_used_and_said_so(scripted, ctx) -> None:
    trace = reach_trace(ctx, "entity_set", "rows[*].uid")
    server, complete = scripted("I am not sure.", '{"answer": 3}')
    got = report(complete, trace.question, trace)
    assert got.source == "mechanical_fallback" and got.problems
    assert got.answer == mechanical_answer(trace) and got.answer["answer"]["kind"] == "entity_set"
    assert server.log.chat_count == 2  # one reply and exactly one retry


def test_a_sole_claim_without_its_value_takes_the_models_answer(scripted, ctx) -> None:
    # Qwen2.5-Coder-1.5B wrote {"type": "count", "from": ...} with no value on every trace of a 30-task run,
    # and its greedy retry repeated it: the claim now takes the typed answer's value (the model's own)
    trace = reach_trace(ctx)
    total = trace.payload("s1")["rows_total"]  # type: ignore[index]
    no_value = {"id": "c1", "type": "count", "evidence": ["s1"], "from": "s1.rows_total"}
    reply = {"text": "n9 reaches them.", "answer": {"kind": "count", "value": total}, "claims": [no_value]}
    server, complete = scripted(json.dumps(reply))
    got = report(complete, trace.question, trace)
    assert got.source == "llm" and server.log.chat_count == 1 and not got.bound
    assert got.answer is not None and got.answer["claims"] == [{**no_value, "value": total}]
    # the schema asks for the value: each claim branch requires the key that carries it
    items = server.log.chat_bodies[0]["response_format"]["json_schema"]["schema"]["properties"]["claims"]
    assert sorted(sorted(b["required"]) for b in items["items"]["anyOf"]) == [
        ["evidence", "from", "id", "type", "uids"],
        ["evidence", "from", "id", "type", "value"],
    ]


def test_value_less_claims_beside_others_are_dropped_and_the_answer_is_bound(scripted, ctx) -> None:
    trace = reach_trace(ctx)
    total = trace.payload("s1")["rows_total"]  # type: ignore[index]
    claims = [
        {"id": "c1", "type": "value", "evidence": ["s1"], "from": "s1.rows[0]", "value": 7},
        {"id": "c2", "type": "count", "evidence": ["s1"], "from": "s1.rows_total"},
    ]
    reply = {"text": "n9 reaches them.", "answer": {"kind": "count", "value": total}, "claims": claims}
    _, complete = scripted(json.dumps(reply))
    got = report(complete, trace.question, trace)
    assert got.source == "llm" and got.bound and got.answer is not None
    # c2 asserted nothing and is gone; c1 (a neighbouring field) stays to be verified; the answer's own
    # claim on answer_spec.from is added with the model's value under a free id
    assert got.answer["claims"] == [
        claims[0],
        {"id": "c2", "type": "count", "value": total, "evidence": ["s1"], "from": "s1.rows_total"},
    ]


def test_a_number_written_as_a_string_in_a_claim_is_the_number(scripted, ctx) -> None:
    # Qwen2.5-Coder-1.5B wrote "value": "0.551963048" for a right ratio; the verifier compares types strictly
    trace = reach_trace(ctx)
    total = trace.payload("s1")["rows_total"]  # type: ignore[index]
    claim = {"id": "c1", "type": "count", "evidence": ["s1"], "from": "s1.rows_total", "value": str(total)}
    reply = {"text": "n9 reaches them.", "answer": {"kind": "count", "value": total}, "claims": [claim]}
    _, complete = scripted(json.dumps(reply))
    got = report(complete, trace.question, trace)
    assert got.answer is not None and got.answer["claims"][0]["value"] == total
    assert isinstance(got.answer["claims"][0]["value"], int) and not got.bound
    # a string that is not a number stays a string (the verifier judges it)
    odd = {**claim, "type": "value", "value": "many"}
    _, complete = scripted(json.dumps({**reply, "claims": [odd]}))
    got = report(complete, trace.question, trace)
    assert got.answer is not None and got.answer["claims"][0]["value"] == "many"


def test_a_value_answer_and_its_claim_written_as_strings_are_numbers() -> None:
    # Qwen2.5-Coder-1.5B wrote both the typed answer and its claim as "0.551963048"
    from tgms.models.answer_format import read_answer

    claim = {
        "id": "c1",
        "type": "value",
        "evidence": ["s1"],
        "from": "s1.rows[0].value",
        "value": "0.551963048",
    }
    reply = {"text": "r", "answer": {"kind": "value", "value": "0.551963048"}, "claims": [claim]}
    got = read_answer(json.dumps(reply), "value")
    assert got["answer"]["value"] == 0.551963048 and got["claims"][0]["value"] == 0.551963048
    named = {**reply, "answer": {"kind": "value", "value": "n42"}, "claims": []}
    assert read_answer(json.dumps(named), "value")["answer"]["value"] == "n42"  # not a number: kept
