"""Worked plans retrieved per question (issue 25, item 3): the k nearest train tasks by sentence embedding.

The index holds a suite's ``train`` split only (:class:`~pipeline.systems.base.SystemEnv` is given nothing
else, and the campaign hands its actors ``splits["train"]`` alone), so no dev or test plan can reach a
prompt; ``tests/pipeline/systems/test_worked_plans.py`` runs dev tasks and checks every request.

Questions are compared by their shape, not their numbers: times, µs numbers, node ids and other digits are
replaced by placeholders before embedding (two draws of one template then differ only in wording), with
the real all-MiniLM-L6-v2 of :mod:`pipeline.systems.embeddings`. Ties (equal cosine to 6 decimals) go to
the smaller task id, so the same question and split give the same examples on every machine.
"""

from __future__ import annotations

import re

import numpy as np

from tgms.models.worked_plans import WorkedPlan
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.embeddings import DIM, embed

_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?Z")
_MICROS = re.compile(r"\(?\b\d+ ?µs\)?")
_NODE = re.compile(r"\bn\d+\b")
_DIGITS = re.compile(r"\d+")


def question_shape(question: str) -> str:
    """The question with its numbers and ids as placeholders (what retrieval compares)."""
    text = _ISO.sub("TIME", question)
    text = _MICROS.sub("", text)
    text = _NODE.sub("NODE", text)
    text = _DIGITS.sub("N", text)
    return re.sub(r"\s+", " ", text).strip()


def worked_plan(task: Task) -> WorkedPlan:
    """A suite task's worked plan (its oracle plan without the plan_id and question it repeats)."""
    plan = task.oracle_plan or {}
    return WorkedPlan(
        question=task.question,
        input_uids=task.input_uids,
        kind=task.answer_kind,
        plan={"steps": plan["steps"], "answer_spec": plan["answer_spec"]},
        source=task.id,
    )


class WorkedPlanIndex:
    """The train split's worked plans and their question-shape vectors."""

    def __init__(self, train: list[Task], embedder: str = "minilm") -> None:
        usable = [t for t in train if t.oracle_plan is not None and t.question]
        self.plans = [worked_plan(t) for t in sorted(usable, key=lambda t: t.id)]
        self.embedder = embedder
        shapes = [question_shape(p.question) for p in self.plans]
        self.vectors = embed(shapes, embedder=embedder) if shapes else np.zeros((0, DIM), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.plans)

    def nearest(self, question: str, k: int, *, names_uids: bool | None = None) -> tuple[WorkedPlan, ...]:
        """The ``k`` train plans whose question shape is nearest (cosine), nearest first.

        ``names_uids`` (whether the question has input uids), when given, puts the plans that agree with it
        first: a question naming no node is shown plans that filter by none. Shown plans with a ``src``
        filter, the 1.5B model wrote made-up uids into questions about every node (24 of 40 people's
        questions' first plans, 2026-12-05)."""
        if not self.plans or k < 1:
            return ()
        q = embed([question_shape(question)], embedder=self.embedder)[0]
        scores = np.round(self.vectors @ q, 6)

        def rank(i: int) -> tuple[bool, float, str]:
            plan = self.plans[i]
            other = names_uids is not None and bool(plan.input_uids) != names_uids
            return other, -float(scores[i]), plan.source

        order = sorted(range(len(self.plans)), key=rank)
        return tuple(self.plans[i] for i in order[:k])
