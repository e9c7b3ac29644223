"""The ``tgms`` system end to end on a small CollegeMsg store and its dev split, against the scripted server
(a test double: its replies are scripted from each task's oracle plan and gold answer object, found by the
fenced question in the request).

What is asserted is the system, not the model: with right replies every dev task is answered, scored
correct, and its trace digest is the one the oracle plan gives when executed directly; a wrong claimed value
is caught by the claim verifier and the gate abstains; with gating off the same wrong answer is emitted and
scored wrong; a planner that never produces a usable plan ends as model_error with four attempts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tgms.engine.api import ExecConfig, OpContext, Store, build_plan, execute
from tgms.models.plan_schema import per_operator_schema
from tgms.models.planner import FIXED_LAYOUT, static_prefix
from tgms.models.prompting import escape
from tgms.models.reporter import SYSTEM as REPORTER_SYSTEM
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import run_task
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.systems.tgms import TgmsConfig

Rule = Callable[[dict[str, Any]], str]


def fenced_question(question: str) -> str:
    return f'<data name="question">\n{escape(question)}\n</data>'


def task_of(body: dict[str, Any], tasks: list[Task]) -> Task:
    user = body["messages"][1]["content"]
    found = [t for t in tasks if fenced_question(t.question) in user]
    assert len(found) == 1, "the request names exactly one task's question"
    return found[0]


def oracle_reply(task: Task) -> str:
    plan = task.oracle_plan
    return json.dumps({"steps": plan["steps"], "answer_spec": plan["answer_spec"]})


def scripted_rule(
    tasks: list[Task],
    planner: Callable[[dict[str, Any]], str] = oracle_reply,
    reporter: Callable[[dict[str, Any]], str] = lambda t: json.dumps(t.gold_answer_object),
) -> Rule:
    """Planner requests get ``planner(task)``, reporter requests ``reporter(task)``."""

    def rule(body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        task = task_of(body, tasks)
        if system == static_prefix(FIXED_LAYOUT):
            return planner(task)
        assert system == REPORTER_SYSTEM
        return reporter(task)

    return rule


def oracle_digest(store_dir: Path, task: Task) -> str:
    with Store.open(store_dir, read_only=True) as store:
        trace = execute(
            build_plan(task.oracle_plan),
            OpContext(store),
            config=ExecConfig(),
            store_digest=store.digest(),
        )
        return trace.digest


def count_task(dev: list[Task]) -> Task:
    return next(t for t in dev if t.answer_kind == "count" and t.template == "T1.reach_count")


def wrong_answer(task: dict[str, Any]) -> str:
    obj = json.loads(json.dumps(task.gold_answer_object))
    wrong = task.gold + 1
    obj["answer"]["value"] = wrong
    obj["claims"] = [{**obj["claims"][0], "value": wrong}]
    obj["text"] = f"The answer is {wrong}."
    return json.dumps(obj)


def test_tgms_answers_the_dev_split_with_the_oracle_traces(make_system, dev, cm_small) -> None:
    system, server = make_system(scripted_rule(dev))
    records = [run_task(system, t) for t in dev]
    assert len(records) == len(dev) >= 30
    for t, rec in zip(dev, records, strict=True):
        assert rec.status == "answered" and rec.correct is True, (t.id, rec.status, rec.errors, rec.gate)
        assert rec.reporter == "llm" and rec.first_emission_valid is True and len(rec.attempts) == 1
        assert rec.trace_digest == oracle_digest(cm_small.store_dir, t), t.id
        assert rec.trace_status == "ok" and rec.gate is not None and rec.gate["emitted"]
        assert all(v["verdict"] == "supported" for v in rec.claim_verdicts), t.id
        assert [c.role for c in rec.llm_calls] == ["planner", "reporter"]
        TaskRecord.model_validate_json(rec.to_json())  # one well-formed JSON line
    accuracy = sum(r.correct is True for r in records) / len(records)
    assert accuracy == 1.0
    assert server.log.chat_count == 2 * len(dev)


def test_a_wrong_claimed_value_is_dropped_and_the_task_abstains(make_system, dev) -> None:
    task = count_task(dev)
    system, _ = make_system(scripted_rule(dev, reporter=wrong_answer))
    rec = run_task(system, task)
    assert rec.status == "abstained" and rec.answer is None and rec.correct is False
    assert [v["verdict"] for v in rec.claim_verdicts] == ["unsupported"]
    assert rec.gate is not None and rec.gate["abstained"] and rec.gate["dropped"][0]["claim"] == "c1"
    assert rec.extras["reporter_answer"]["answer"]["value"] == task.gold + 1


def test_without_gating_the_wrong_answer_is_emitted_and_scored_wrong(make_system, dev) -> None:
    task = count_task(dev)
    system, _ = make_system(scripted_rule(dev, reporter=wrong_answer), gating=False)
    rec = run_task(system, task)
    assert rec.status == "answered" and rec.correct is False and rec.predicted == task.gold + 1
    assert [v["verdict"] for v in rec.claim_verdicts] == ["unsupported"]  # still recorded
    assert rec.gate is not None and rec.gate["abstained"]


def test_a_planner_that_never_plans_ends_as_model_error_after_the_budget_and_two_redraws(
    make_system, dev
) -> None:
    system, server = make_system(scripted_rule(dev, planner=lambda t: "Sorry, I cannot help with that."))
    rec = run_task(system, dev[0])
    assert rec.status == "model_error" and rec.correct is False and rec.answer is None
    assert [a.n for a in rec.attempts] == [1, 2, 3, 4, 5, 6] and rec.first_emission_valid is False
    assert all(a.sha256 is None and not a.valid for a in rec.attempts)
    assert rec.errors and rec.errors[0]["error"] == "E_MODEL_OUTPUT" and server.log.chat_count == 6
    # the same words five more times: each a repeat, each retried with seeded sampling; two of those
    # retries are redraws that spend no repair budget
    assert rec.repeat_replies == 5 and [a.repeated for a in rec.attempts] == [False] + [True] * 5
    assert [a.redraw for a in rec.attempts] == [False, False, True, True, False, False]
    assert rec.trace_digest is None and rec.reporter is None


def test_a_malformed_report_falls_back_to_the_mechanical_answer(make_system, dev) -> None:
    task = count_task(dev)
    system, _ = make_system(scripted_rule(dev, reporter=lambda t: "the answer is big"))
    rec = run_task(system, task)
    assert rec.reporter == "mechanical_fallback" and rec.extras["reporter_problems"]
    assert rec.status == "answered" and rec.correct is True
    assert [c.role for c in rec.llm_calls] == ["planner", "reporter", "reporter"]


def test_constrained_and_config_switches(make_system, dev) -> None:
    task = count_task(dev)
    system, server = make_system(scripted_rule(dev), constrained=True, taint=False, contracts=False)
    assert system.config == TgmsConfig(constrained=True, taint=False, contracts=False)
    rec = run_task(system, task)
    assert rec.correct is True
    planner_body = server.log.chat_bodies[0]
    assert planner_body["response_format"]["json_schema"]["schema"]["properties"]["steps"]["maxItems"] == 12
    with pytest.raises(Exception) as err:
        make_system(scripted_rule(dev), gatting=False)
    assert getattr(err.value, "code", None) == "E_INVALID_ARG"


def test_the_per_operator_schema_accepts_every_oracle_plan_and_reaches_the_planner(
    make_system, cm_small
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    tasks = [*cm_small.suite.splits.dev, *cm_small.suite.splits.test]
    assert len({t.template for t in tasks}) >= 15
    refused = {}
    for t in tasks:  # the part the model writes: a constrained model must be able to write every oracle plan
        schema = per_operator_schema(t.answer_kind)
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(schema).iter_errors(json.loads(oracle_reply(t)))
        )
        if error is not None:
            refused[t.id] = error.message
    assert refused == {}
    task = count_task(cm_small.dev)
    system, server = make_system(scripted_rule(cm_small.dev), plan_schema="per_operator")
    assert system.config == TgmsConfig(plan_schema="per_operator")
    assert run_task(system, task).correct is True
    sent = server.log.chat_bodies[0]["response_format"]["json_schema"]["schema"]
    assert sent == per_operator_schema("count", named=True)
    with pytest.raises(Exception) as err:
        make_system(scripted_rule(cm_small.dev), plan_schema="per_op")
    assert getattr(err.value, "code", None) == "E_INVALID_ARG"


def test_an_endpoint_failure_mid_repair_is_unscored_and_keeps_its_attempts(make_system, dev) -> None:
    holder: list[ScriptedServer] = []

    def planner(task: dict[str, Any]) -> str:
        if holder[0].log.chat_count >= 2:  # the second reply is the last: every later request gets HTTP 500
            holder[0].fail_next(1000, 500)
        return "no plan here"

    system, server = make_system(scripted_rule(dev, planner=planner))
    holder.append(server)
    rec = run_task(system, dev[0])
    assert rec.status == "infra_error" and rec.correct is None
    assert [a.valid for a in rec.attempts] == [False, False]
    assert rec.errors[0]["error"] == "E_INFRA_RETRIES"


def repeating_planner(bad_times: int = 2) -> Callable[[dict[str, Any]], str]:
    """The oracle plan with an invented answer field ``bad_times`` times in a row, then the oracle plan."""
    sent: list[int] = [0]

    def planner(task: dict[str, Any]) -> str:
        sent[0] += 1
        if sent[0] > bad_times:
            return oracle_reply(task)
        plan = task.oracle_plan
        last = plan["steps"][-1]["id"]
        return json.dumps(
            {"steps": plan["steps"], "answer_spec": {**plan["answer_spec"], "from": f"{last}.nope"}}
        )

    return planner


def test_a_repeated_plan_is_sampled_and_the_repeat_is_recorded(make_system, dev) -> None:
    from tgms.pipeline.campaign.outcomes import outcome_of
    from tgms.pipeline.scoring.metrics import summarize as metrics
    from tgms.pipeline.systems.runner import summarize

    task = count_task(dev)
    system, server = make_system(scripted_rule(dev, planner=repeating_planner()))
    rec = run_task(system, task)
    assert rec.status == "answered" and rec.correct is True
    assert [(a.valid, a.repeated) for a in rec.attempts] == [(False, False), (False, True), (True, False)]
    assert rec.repeat_replies == 1 and rec.first_emission_valid is False
    sampled = rec.attempts[2].sampling
    assert sampled is not None and sampled["temperature"] > 0
    planner_calls = [c for c in rec.llm_calls if c.role == "planner"]
    assert [c.sampling for c in planner_calls] == [None, None, sampled]
    assert server.log.chat_bodies[2]["seed"] == sampled["seed"]
    line = TaskRecord.model_validate_json(rec.to_json()).model_dump(mode="json")
    assert line["repeat_replies"] == 1 and line["attempts"][1]["repeated"] is True
    back = TaskRecord.model_validate(line)
    assert summarize([back])["repeat_replies"] == 1
    outcome = outcome_of(back.model_copy(update={"correct": True}))
    assert outcome is not None and (outcome.repeat_replies, outcome.repair_replies) == (1, 2)
    assert metrics([outcome])["repeat_rate"] == {"value": 0.5, "num": 1, "den": 2}


def _no_claims(task: dict[str, Any], value: Any = None) -> str:
    obj = json.loads(json.dumps(task.gold_answer_object))
    if value is not None:
        obj["answer"]["value"] = value
    obj["claims"] = []
    return json.dumps(obj)


def test_an_answer_without_claims_is_bound_to_the_plans_answer_field(make_system, dev) -> None:
    # small models state the right answer and leave claims empty: the typed answer is bound to
    # answer_spec.from with the model's value, and the claim verifier still checks that value
    task = count_task(dev)
    system, _ = make_system(scripted_rule(dev, reporter=_no_claims))
    rec = run_task(system, task)
    assert rec.status == "answered" and rec.correct is True, (rec.status, rec.gate)
    assert rec.extras["answer_bound"] is True
    assert [v["verdict"] for v in rec.claim_verdicts] == ["supported"]
    wrong, _ = make_system(scripted_rule(dev, reporter=lambda t: _no_claims(t, t.gold + 1)))
    rec = run_task(wrong, task)
    assert rec.status == "abstained" and rec.answer is None and rec.extras["answer_bound"] is True
    assert [v["verdict"] for v in rec.claim_verdicts] == ["unsupported"]
