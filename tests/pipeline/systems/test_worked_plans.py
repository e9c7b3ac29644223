"""Worked plans retrieved from the train split (issue 25, item 3), against the scripted server (a test
double whose planner replies are the task's oracle plan, written with the question's named times).

Asserted: no dev or test question or plan ever reaches a prompt (every request of a run over the whole dev
split is read); the retrieved examples are train tasks of the question's own template; a plan that writes
"T1" instead of the number runs to the oracle's trace; the static prefix stays one string for every task.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.pipeline.systems.test_tgms import fenced_question, oracle_digest
from tgms.engine.api import InvalidArgError
from tgms.models.planner import FIXED_LAYOUT, static_prefix
from tgms.models.prompting import escape
from tgms.models.reporter import SYSTEM as REPORTER_SYSTEM
from tgms.models.worked_plans import belief_time, time_names, with_names
from tgms.pipeline.scoring.suite import Splits
from tgms.pipeline.systems.base import run_task
from tgms.pipeline.systems.worked_plans import WorkedPlanIndex, question_shape

_FENCE = re.compile(r'<data name="worked_plan">\n(.*?)\n</data>', re.S)


def named_oracle_reply(task: dict[str, Any]) -> str:
    plan = task.oracle_plan
    named = with_names(
        {"steps": plan["steps"], "answer_spec": plan["answer_spec"]}, time_names(task.question)
    )
    return json.dumps(named)


def recording_rule(tasks: list[dict[str, Any]], seen: list[dict[str, Any]]) -> Any:
    def rule(body: dict[str, Any]) -> str:
        seen.append(body)
        user = body["messages"][1]["content"]
        task = next(t for t in tasks if fenced_question(t.question) in user)
        if body["messages"][0]["content"] == REPORTER_SYSTEM:
            return json.dumps(task.gold_answer_object)
        return named_oracle_reply(task)

    return rule


@pytest.fixture(scope="module")
def splits(cm_small: Any) -> Splits:
    return cm_small.suite.splits


def test_the_suite_has_a_disjoint_train_split(splits: Splits) -> None:
    held = splits.dev + splits.test
    assert len(splits.train) >= 20
    assert not {t.question for t in splits.train} & {t.question for t in held}


def test_no_dev_or_test_plan_reaches_a_prompt(make_system, splits) -> None:
    seen: list[dict[str, Any]] = []
    dev, test, train = splits.dev, splits.test, splits.train
    system, _ = make_system(recording_rule(dev, seen), train=train, examples="retrieved", manual="retrieved")
    records = [run_task(system, t) for t in dev]
    assert all(r.status == "answered" and r.correct for r in records), [
        (r.task_id, r.status, r.errors) for r in records if not r.correct
    ]
    train_ids = {t.id for t in train}
    train_questions = {escape(t.question) for t in train}
    held_out = dev + test
    planner_bodies = [b for b in seen if b["messages"][0]["content"] != REPORTER_SYSTEM]
    assert len(planner_bodies) == len(dev)
    prefixes = {b["messages"][0]["content"] for b in planner_bodies}
    assert len(prefixes) == 1  # the static prefix is one string for every task
    for body in planner_bodies:
        prompt = "\n".join(m["content"] for m in body["messages"])
        own = next(t for t in dev if fenced_question(t.question) in prompt)
        for other in held_out:
            if other.id == own.id:
                continue
            assert escape(other.question) not in prompt, (own.id, other.id)
        shown = _FENCE.findall(prompt)
        assert shown, "the retrieved worked plans are in the task's message"
        for block in shown:
            question = block.split("\n", 1)[0].split("Question: ", 1)[1]
            if belief_time(own.question) is not None and question not in train_questions:
                # a pinned question's worked plans are shown pinned to its own belief time
                asked, clause = question.split(", as recorded at ", 1)
                assert any(q.rstrip("?.") == asked for q in train_questions), question
                assert str(belief_time(own.question)) in clause
            else:
                assert question in train_questions
            held_plans = [json.dumps(t.oracle_plan["steps"], separators=(",", ":")) for t in held_out]
            assert not any(p in block for p in held_plans)
    for rec in records:
        assert rec.extras["worked_plans"] and set(rec.extras["worked_plans"]) <= train_ids


def test_named_times_run_to_the_oracles_trace(make_system, splits, cm_small) -> None:
    dev = splits.dev
    timed = [t for t in dev if time_names(t.question)][:5]
    assert timed
    system, _ = make_system(recording_rule(dev, []), train=splits.train, examples="retrieved")
    for t in timed:
        rec = run_task(system, t)
        assert '"T1"' in named_oracle_reply(t)
        assert rec.correct and rec.trace_digest == oracle_digest(cm_small.store_dir, t), t.id


def test_the_nearest_worked_plan_is_of_the_questions_template(splits) -> None:
    index = WorkedPlanIndex(splits.train)
    templates = {t.id: t.template for t in splits.train}
    dev = [t for t in splits.dev if t.probe_pair is None and t.template in set(templates.values())]
    hits = sum(templates[index.nearest(t.question, 1)[0].source] == t.template for t in dev)
    assert hits / len(dev) >= 0.8, f"{hits}/{len(dev)}"
    # and so when plans that agree on naming uids come first (as the tgms system asks)
    hits = sum(
        templates[index.nearest(t.question, 1, names_uids=bool(t.input_uids))[0].source] == t.template
        for t in dev
    )
    assert hits / len(dev) >= 0.8, f"{hits}/{len(dev)}"
    # the same question gets the same plans (ties go to the smaller id)
    q = dev[0].question
    assert [p.source for p in index.nearest(q, 3)] == [p.source for p in index.nearest(q, 3)]


def test_hashing_retrieval_loads_no_model_and_is_deterministic(splits) -> None:
    # smoke's setting (conf/experiment/smoke.yaml): no model in the actor, the same plans every time
    index = WorkedPlanIndex(splits.train, embedder="hashing")
    assert index.vectors.shape == (len(index), 384)
    q = splits.dev[0].question
    shown = [p.source for p in index.nearest(q, 2)]
    assert len(shown) == 2 and shown == [p.source for p in index.nearest(q, 2)]
    # word overlap still finds the question's own template for most questions (what smoke needs: plans)
    templates = {t.id: t.template for t in splits.train}
    dev = [t for t in splits.dev if t.probe_pair is None and t.template in set(templates.values())]
    hits = sum(templates[index.nearest(t.question, 1)[0].source] == t.template for t in dev)
    assert hits / len(dev) >= 0.5, f"{hits}/{len(dev)}"
    with pytest.raises(InvalidArgError):
        WorkedPlanIndex(splits.train, embedder="bogus")


def test_plans_that_agree_on_naming_uids_come_first(splits) -> None:
    index = WorkedPlanIndex(splits.train)
    with_uids = sum(bool(p.input_uids) for p in index.plans)
    assert 3 <= with_uids <= len(index) - 3, "the train split needs plans with and without uids"
    q = "Which node sent the most messages over the whole period?"
    assert all(not p.input_uids for p in index.nearest(q, 3, names_uids=False))
    assert all(p.input_uids for p in index.nearest(q, 3, names_uids=True))
    plain = index.nearest(q, len(index))
    assert sorted(p.source for p in plain) == sorted(
        p.source for p in index.nearest(q, len(index), names_uids=False)
    )


def test_question_shape_hides_numbers_and_ids() -> None:
    q = "How many neighbours of n1255 were new from 2004-08-04T00:00:00Z (1091577600000000 µs) on?"
    assert question_shape(q) == "How many neighbours of NODE were new from TIME on?"


def test_an_empty_train_split_falls_back_to_the_fixed_worked_plans(make_system, splits) -> None:
    seen: list[dict[str, Any]] = []
    system, _ = make_system(recording_rule(splits.dev, seen), train=[], examples="retrieved")
    rec = run_task(system, splits.dev[0])
    assert rec.extras["worked_plans"] == ["fixed:1", "fixed:2"]
    # the fixed layout, prefix and all: nothing says which operators the question needs
    assert seen[0]["messages"][0]["content"] == static_prefix(FIXED_LAYOUT)
