"""The analyst question set (issue 17, build point 4): every plan through the real verifier and executor,
its answer compared with the SQL answer over the raw file (``questions.yaml``, ``harness.py``).

A plan using an operator, compute fn or argument this engine does not declare (``harness.
missing_capabilities``, read from the registry's schemas) is a strict xfail naming what is missing; once
the capability is merged the marker is not applied and the plan must give the SQL answer. A question with
an ``xfail`` entry is a strict xfail for the engine problem it states (XPASS, a failure, once fixed). A
question with ``plan: null`` only checks that its SQL gives an answer (counted as not expressible, with the
capability it lacks, by ``python -m tests.analyst.coverage``).

The stores are built once per session from ``../shared/data`` (or ``TGMS_SHARED_DATA``; CollegeMsg from
the package's copy when it is absent, the other data sets' questions skip) on DuckDB
(``TGMS_ANALYST_BACKEND=kuzu`` for the other backend).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.analyst import harness

SPEC = harness.load_set("all")
QUESTIONS: list[dict[str, Any]] = SPEC["questions"]
FIRST = [q for q in QUESTIONS if q["set"] == "first"]
SECOND = [q for q in QUESTIONS if q["set"] == "second"]
BACKEND = os.environ.get("TGMS_ANALYST_BACKEND", "duckdb")


@pytest.fixture(scope="session")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``get(dataset, corrected) -> (store, root)``, each built on first use and closed at the end."""
    made: dict[tuple[str, bool], tuple[Any, Path]] = {}

    def get(dataset: str, corrected: bool) -> tuple[Any, Path]:
        key = (dataset, corrected)
        if key not in made:
            spec = SPEC["sources"][dataset]
            src = harness.source_file(spec, spec["file"])
            if not src.is_file():
                pytest.skip(
                    f"needs {src.name} from the shared test data, not at {src} (only CollegeMsg ships)"
                )
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
    """The first set: >= 80 questions (>= 40 per dataset), every class covered (by an expressible plan
    too); every question of both sets: ids unique, plans <= 12 steps whose answer_spec.from is the
    declared answer_ref, inexpressible ones say why."""
    ids = [q["id"] for q in QUESTIONS]
    assert len(ids) == len(set(ids)), "question ids must be unique"
    assert len(FIRST) >= 80
    for ds in ("collegemsg", "bitcoin-otc"):
        assert sum(q["dataset"] == ds for q in FIRST) >= 40, ds
    first_classes = set(harness.CLASSES) - {"valid_time"}  # interval-valued facts: the synthetic data's
    assert {q["class"] for q in FIRST} == first_classes
    assert {q["class"] for q in FIRST if q["plan"] is not None} == first_classes
    for q in QUESTIONS:
        assert q["class"] in harness.CLASSES, q["id"]
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
    planned = sum(q["plan"] is not None for q in FIRST)
    assert planned >= 0.85 * len(FIRST), "the acceptance bar: >= 85% answered by one plan"


def test_second_set_shape() -> None:
    """The second set (issue 27): >= 60 questions, >= 25 each on email-Eu and the synthetic data, at least
    six classes on each, >= 90% with a plan."""
    assert len(SECOND) >= 60
    for ds in ("email-eu", "synthetic"):
        mine = [q for q in SECOND if q["dataset"] == ds]
        assert len(mine) >= 25, ds
        assert len({q["class"] for q in mine}) >= 6, ds
    planned = sum(q["plan"] is not None for q in SECOND)
    assert planned >= 0.9 * len(SECOND), "issue 27's bar for the second set: >= 90%"


def test_later_sets_hold_the_bar() -> None:
    """The sets written question and SQL first, plans after (third to seventh): each >= 95% with a plan
    (issue 27's goal for questions nobody tuned for), every data set of a set with >= 10 questions."""
    for name in ("third", "fourth", "fifth", "sixth", "seventh"):
        mine = [q for q in QUESTIONS if q["set"] == name]
        assert len(mine) >= 30, name
        for ds in {q["dataset"] for q in mine}:
            assert sum(q["dataset"] == ds for q in mine) >= 10, (name, ds)
        planned = sum(q["plan"] is not None for q in mine)
        assert planned >= 0.95 * len(mine), (name, planned, len(mine))


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
    got = harness.run_plan(q, store, SPEC["sources"][q["dataset"]].get("uid_prefix", "n"))
    assert not got["violations"], f"the verifier refused the plan: {got['violations']}"
    assert got.get("status") == "ok", got
    assert "answer" in got, got
    # an answer resting on a cut page (a ref list read as one page) is not an answer, even when it matches
    assert not got.get("tainted"), f"the answer rests on a page a producer cut: {got}"
    assert harness.same(got["answer"], expected), f"plan {got['answer']!r} != SQL {expected!r}"
