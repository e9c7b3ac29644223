"""The analyst question set (issue 17, build point 4): every plan through the real verifier and executor,
its answer compared with the SQL answer over the raw file (``questions.yaml``, ``harness.py``).

A plan using an operator, compute fn or argument this engine does not declare (``harness.
missing_capabilities``, read from the registry's schemas) is a strict xfail naming what is missing; once
the capability is merged the marker is not applied and the plan must give the SQL answer. A question with
an ``xfail`` entry is a strict xfail for the engine problem it states (XPASS, a failure, once fixed). A
question with ``plan: null`` only checks that its SQL gives an answer (counted as not expressible, with the
capability it lacks, by ``python -m tests.analyst.coverage``).

The stores are built once per session from ``../shared/data`` (DuckDB; ``TGMS_ANALYST_BACKEND=kuzu`` for
the other backend).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.analyst import harness

SPEC = harness.load_questions()
QUESTIONS: list[dict[str, Any]] = SPEC["questions"]
BACKEND = os.environ.get("TGMS_ANALYST_BACKEND", "duckdb")


@pytest.fixture(scope="session")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``get(dataset, corrected) -> (store, root)``, each built on first use and closed at the end."""
    made: dict[tuple[str, bool], tuple[Any, Path]] = {}

    def get(dataset: str, corrected: bool) -> tuple[Any, Path]:
        key = (dataset, corrected)
        if key not in made:
            src = harness.data_file(SPEC["sources"][dataset]["file"])
            if not src.is_file():
                pytest.skip(f"shared data not found: {src}")
            root = tmp_path_factory.mktemp(f"{dataset}-{'corrected' if corrected else 'plain'}")
            made[key] = (harness.build(dataset, root, SPEC, corrected, BACKEND), root)
        return made[key]

    yield get
    for store, _ in made.values():
        store.close()


@pytest.fixture(scope="session")
def con() -> Any:
    duckdb = pytest.importorskip("duckdb")
    c = duckdb.connect()
    c.execute("SET TimeZone = 'UTC'")
    yield c
    c.close()


def test_question_set_shape() -> None:
    """>= 80 questions (>= 40 per dataset), ids unique, every class covered (by an expressible plan too),
    plans <= 12 steps whose answer_spec.from is the declared answer_ref, inexpressible ones say why."""
    ids = [q["id"] for q in QUESTIONS]
    assert len(ids) == len(set(ids)), "question ids must be unique"
    assert len(QUESTIONS) >= 80
    for ds in ("collegemsg", "bitcoin-otc"):
        assert sum(q["dataset"] == ds for q in QUESTIONS) >= 40, ds
    assert {q["class"] for q in QUESTIONS} == set(harness.CLASSES)
    assert {q["class"] for q in QUESTIONS if q["plan"] is not None} == set(harness.CLASSES)
    for q in QUESTIONS:
        assert q["dataset"] in SPEC["sources"], q["id"]
        assert q["answer_kind"] in harness.ANSWER_KINDS, q["id"]
        assert q["question"].strip() and q["sql"].strip(), q["id"]
        assert (q["answer_kind"] in ("table", "table_set")) == ("answer_fields" in q), q["id"]
        if q["plan"] is None:
            assert q.get("lacks", "").strip(), f"{q['id']}: an inexpressible question names what it lacks"
            continue
        assert "lacks" not in q, q["id"]
        assert 1 <= len(q["plan"]["steps"]) <= 12, q["id"]
        assert q["plan"]["answer_spec"]["from"] == q["answer_ref"], q["id"]
    planned = sum(q["plan"] is not None for q in QUESTIONS)
    assert planned >= 0.85 * len(QUESTIONS), "the acceptance bar: >= 85% answered by one plan"


def test_shape_check_can_fail() -> None:
    """The capability probe sees an unknown operator, fn and argument (the xfail markers mean something)."""
    plan = {"steps": [
        {"id": "s1", "op": "no_such_operator", "args": {}},
        {"id": "s2", "op": "compute", "args": {"fn": "no_such_fn", "input": []}},
        {"id": "s3", "op": "co_active", "args": {"no_such_arg": 1}},
    ]}  # fmt: skip
    assert harness.missing_capabilities(plan) == [
        "co_active argument no_such_arg", "compute fn no_such_fn", "operator no_such_operator",
    ]  # fmt: skip
    assert not harness.same([1, 2], [1, 3]) and not harness.same(0.1234567891, 0.1234567911)


@pytest.mark.parametrize("q", QUESTIONS, ids=[q["id"] for q in QUESTIONS])
def test_question(q: dict[str, Any], stores: Any, con: Any, request: pytest.FixtureRequest) -> None:
    corrected = q.get("store") == "corrected"
    store, root = stores(q["dataset"], corrected)
    expected = harness.sql_answer(con, q, SPEC, root if corrected else None)
    if q["plan"] is None:
        return  # not expressible: the SQL answer exists; coverage lists what the plan language lacks
    missing = harness.missing_capabilities(q["plan"])
    if q.get("xfail"):  # a known engine problem, stated in the question set: flips when fixed
        request.applymarker(pytest.mark.xfail(strict=True, reason=" ".join(q["xfail"].split())))
    elif missing:
        request.applymarker(
            pytest.mark.xfail(strict=True, reason="not on this branch: " + ", ".join(missing))
        )
    got = harness.run_plan(q, store)
    assert not got["violations"], f"the verifier refused the plan: {got['violations']}"
    assert got.get("status") == "ok", got
    assert "answer" in got, got
    assert harness.same(got["answer"], expected), f"plan {got['answer']!r} != SQL {expected!r}"
