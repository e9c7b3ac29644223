"""Task records for the tracking and report tests, written by hand through the real ``TaskRecord`` model.

The tasks are a real suite's (a small CollegeMsg store, as in the systems' tests); what each system "did"
on a task is a label drawn from a hash of (task, system, seed), so the expected metrics can be counted
from the labels alone, independently of the code under test:

- ``right``: answered with the gold value; ``wrong``: answered with a value no rule scores right;
- ``abstain``: nothing emitted (scored wrong); ``infra``: ``infra_error``, not scored.

``tgms`` records carry plan attempts, a trace status and claim verdicts (a wrong answer's count claim is
``unsupported`` under the ``no_gating`` ablation, ``supported`` otherwise); ``text_to_cypher`` records
carry query attempts (a wrong answer's query failed at run time).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.conftest import collegemsg_head
from tgms.engine.api import build_store
from tgms.pipeline.scoring.suite import Suite, Task
from tgms.pipeline.systems.record import Attempt, LLMCall, TaskRecord, Tokens

EVENTS = 12_000
SYSTEMS = ("tgms", "vector_rag", "static_graph_rag", "text_to_cypher")
RIGHT_BELOW = {"tgms": 6, "vector_rag": 4, "static_graph_rag": 3, "text_to_cypher": 2}  # of 10 buckets
WRONG_VALUE = {"not": "the gold answer"}  # no typed rule scores a JSON object equal to a real gold value


def label(task_id: str, system: str, seed: int) -> str:
    h = int(hashlib.sha256(f"{task_id}|{system}|{seed}".encode()).hexdigest()[:8], 16) % 10
    if h == 9:
        return "infra"
    if h == 8:
        return "abstain"
    return "right" if h < RIGHT_BELOW.get(system, 3) else "wrong"


def record(**fields: Any) -> TaskRecord:
    """A record with only the fields a test is about: the required ones default (task ``t``, system
    ``tgms``, a count task), and an attempt given as a dict needs only the fields it is about too."""
    attempts = [
        {"n": i, "sha256": None, **a} if isinstance(a, dict) else a
        for i, a in enumerate(fields.pop("attempts", []), 1)
    ]
    base: dict[str, Any] = {"task_id": "t", "system": "tgms", "model": "m", "seed": 0, "answer_kind": "count"}
    return TaskRecord.model_validate({**base, "attempts": attempts, **fields})


def make_record(task: Task, system: str, seed: int, model: str, ablation: str = "none") -> TaskRecord:
    lab = label(task.id, system, seed)
    answered = lab in ("right", "wrong")
    predicted = task.gold if lab == "right" else WRONG_VALUE if lab == "wrong" else None
    rec = TaskRecord(
        task_id=task.id,
        template=task.template,
        family=task.family,
        system=system,
        model=model,
        seed=seed,
        ablation=ablation,
        serving={"model": model, "flavour": "scripted"},
        status="answered" if answered else "abstained" if lab == "abstain" else "infra_error",
        answer_kind=task.answer_kind,
        gold=task.gold,
        predicted=predicted,
        correct=None if lab == "infra" else lab == "right",
        tokens=Tokens(prompt=100 + len(task.id), completion=10),
        latency_s=0.25 if system == "tgms" else 0.5,
        llm_calls=[LLMCall(role="answerer", request_hash="r" * 64, prompt_sha256="p" * 64,
                           completion_sha256="c" * 64, prompt_tokens=100 + len(task.id),
                           completion_tokens=10, latency_s=0.2, cached=False, attempts=1)],
    )  # fmt: skip
    if answered:
        claim = {"id": "c1", "type": "count", "value": predicted, "evidence": ["s1"]}
        rec.answer = {"text": "see claims", "answer": {"kind": task.answer_kind, "value": predicted},
                      "claims": [claim]}  # fmt: skip
    if lab == "infra":
        rec.errors = [{"error": "E_UPSTREAM", "message": "endpoint down", "details": {}}]
    if system == "tgms" and lab != "infra":
        rec.attempts = [Attempt(n=1, sha256="a" * 64, valid=lab == "right")]
        rec.first_emission_valid = lab == "right"
        rec.trace_status = "ok" if answered else "partial"
        rec.trace_digest = "d" * 64
        bad = lab == "wrong" and ablation == "no_gating"
        verdict = "unsupported" if bad else "supported"
        rec.claim_verdicts = [
            {"claim": "c1", "type": "count", "verdict": verdict, "reason": "test", "tainted": False}
        ]
    if system == "text_to_cypher" and lab != "infra":
        err = {"error": "E_QUERY", "message": "bad", "details": {}} if lab == "wrong" else None
        rec.attempts = [Attempt(n=1, sha256="q" * 64, valid=lab == "right", runtime_error=err)]
        rec.first_emission_valid = lab == "right"
    return rec


def cell_records(
    tasks: Sequence[Task], system: str, seed: int, model: str, ablation: str = "none"
) -> list[TaskRecord]:
    return [make_record(t, system, seed, model, ablation) for t in tasks]


def expected(tasks: Sequence[Task], system: str, seed: int, *, family: str | None = None) -> tuple[int, int]:
    """(right, scored) counted from the labels alone."""
    labs = [label(t.id, system, seed) for t in tasks if family is None or t.family == family]
    return sum(x == "right" for x in labs), sum(x != "infra" for x in labs)


def small_suite(root: Path) -> tuple[Path, Suite]:
    """The first EVENTS CollegeMsg events as a store, and its seed-0 suite (no brute-force cross-check)."""
    from tgms.pipeline.tasks.build import build_suite

    head = collegemsg_head(root, EVENTS)
    store_dir = root / "store"
    build_store("collegemsg", store_dir, source=head).close()
    return store_dir, build_suite(store_dir, "collegemsg", 0, crosscheck=False)


def iter_cells(
    tasks: Sequence[Task], seeds: tuple[int, ...], model: str
) -> Iterator[tuple[dict, list[TaskRecord]]]:
    """(tags, records) of every (system, seed) cell with ablation none, plus tgms no_gating on seed 0."""
    for seed in seeds:
        for system in SYSTEMS:
            yield tags_of("collegemsg", system, model, seed, "none"), cell_records(tasks, system, seed, model)
    yield (
        tags_of("collegemsg", "tgms", model, seeds[0], "no_gating"),
        cell_records(tasks, "tgms", seeds[0], model, "no_gating"),
    )


def tags_of(suite: str, system: str, model: str, seed: int, ablation: str) -> dict[str, str]:
    from tgms.pipeline.campaign.cells import Cell

    return Cell(suite, system, model, seed, ablation).tags()
