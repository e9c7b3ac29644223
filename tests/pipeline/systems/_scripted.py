"""Helpers of the system tests: a SystemEnv on a scripted server (TEST DOUBLE), and answer rules.

The scripted server answers every request with a rule of the request body; :func:`answer_rule` finds which
task a request is about by its fenced question and replies with the gold answer for the tasks in
``correct`` and a wrong one for the rest, so a run's accuracy is known exactly in advance.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tgms.models.client import ChatClient
from tgms.models.config import EndpointConfig, GenerationConfig
from tgms.models.prompting import fence
from tgms.models.testing.scripted_server import last_user_message
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import RunSettings, SystemEnv

Body = dict[str, Any]


def make_env(
    store_dir: Path,
    url: str,
    work_dir: Path,
    *,
    repair_budget: int = 3,
    context_window: int = 8192,
    **generation: Any,
) -> SystemEnv:
    config = EndpointConfig(
        base_urls=(url,),
        model="scripted",
        timeout_s=10.0,
        max_retries=1,
        backoff_base_s=0.01,
        backoff_cap_s=0.05,
    )
    gen = GenerationConfig(model="scripted", max_model_len=context_window, **generation)
    return SystemEnv(
        store_dir, ChatClient(config), RunSettings(generation=gen, repair_budget=repair_budget), work_dir
    )


def system_text(body: Body) -> str:
    return next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")


def wrong_value(kind: str, gold: Any) -> Any:
    """A value of ``kind`` that is surely not ``gold``."""
    if kind == "count":
        return 10**9 + 7  # far from any count of a small store (so also wrong for a task asking the same)
    if kind == "value":
        return 10**9 + 0.5 if isinstance(gold, (int, float)) else "wrong"
    if kind == "entity_set":
        return ["n999999"]
    if kind == "entity":
        return "n999999"
    if kind == "interval":
        return [0, 1]
    if kind == "boolean":
        return not gold
    if kind == "rows":  # a tuple answer (compute record): one row of named counts, each far off
        return [{k: 10**9 + 7 for k in row} for row in gold] if gold else [{"n": 10**9 + 7}]
    raise AssertionError(f"no wrong value for {kind}")


def task_of(body: Body, tasks: list[Task]) -> Task:
    """The task whose (escaped) question the last user message fences."""
    text = last_user_message(body)
    hits = [t for t in tasks if fence(t.question, "question") in text]
    assert len(hits) >= 1, text[-400:]
    return hits[0]


def answer_rule(
    tasks: list[Task], correct: set[str], other: Callable[[Body], str] | None = None
) -> Callable[[Body], str]:
    """Answer requests get gold (tasks in ``correct``) or a wrong value; other requests go to ``other``."""

    def rule(body: Body) -> str:
        if other is not None and not system_text(body).startswith("You answer"):
            return other(body)
        task = task_of(body, tasks)
        kind, gold = task.answer_kind, task.gold
        value = gold if task.id in correct else wrong_value(kind, gold)
        return json.dumps({"text": "scripted", "answer": {"kind": kind, "value": value}})

    return rule


def unique_question_ids(tasks: list[Task]) -> list[str]:
    """Ids of the tasks whose question no other task asks (a question-keyed rule can tell them apart)."""
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t.question] = counts.get(t.question, 0) + 1
    return [t.id for t in tasks if counts[t.question] == 1]
