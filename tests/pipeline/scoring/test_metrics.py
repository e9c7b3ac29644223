"""Campaign metrics on a hand-built set of outcomes: every numerator and denominator checked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from tgms.pipeline.scoring.metrics import TaskOutcome, breakdown, per_task_scores, ratio, summarize


def _o(task_id: str, **kw: Any) -> TaskOutcome:
    base: dict[str, Any] = {"system": "tgms", "kind": "count", "gold": 3, "emitted": True, "predicted": 3}
    base.update(kw)
    return TaskOutcome(task_id=task_id, **base)


#: t1-t3 correct, t4 emitted wrong, t5-t6 abstain; measurements partly missing
OUTCOMES = [
    _o("t1", plan_valid_first=True, executed=True, unsupported=False, tokens=100, latency_s=1.0, family="A"),
    _o(
        "t2",
        kind="entity_set",
        gold=["a", "b"],
        predicted=["b", "a", "a"],
        plan_valid_first=False,
        executed=True,
        unsupported=True,
        tokens=300,
        latency_s=2.0,
        family="A",
    ),  # correct yet unsupported
    _o(
        "t3",
        kind="interval",
        gold=[0, 10],
        predicted={"vt_s": 0, "vt_e": 5},
        plan_valid_first=True,
        executed=None,
        unsupported=None,
        tokens=None,
        latency_s=3.0,
        family="B",
    ),
    _o("t4", predicted=4, plan_valid_first=True, executed=True, unsupported=True, tokens=200, family="B"),
    _o("t5", emitted=False, predicted=None, plan_valid_first=False, executed=False, tokens=50),
    _o("t6", emitted=False, predicted=None, unsupported=None),
]


def test_correct_property() -> None:
    assert [o.correct for o in OUTCOMES] == [True, True, True, False, False, False]


def test_not_emitted_is_never_correct() -> None:
    assert not _o("t", emitted=False, predicted=3).correct


def test_summarize_numerators_and_denominators() -> None:
    s = summarize(OUTCOMES)
    assert s["n"] == 6
    assert s["accuracy"] == {"value": 3 / 6, "num": 3, "den": 6}
    assert s["coverage"] == {"value": 4 / 6, "num": 4, "den": 6}
    assert s["conditional_accuracy"] == {"value": 3 / 4, "num": 3, "den": 4}
    assert s["plan_validity_first"] == {"value": 3 / 5, "num": 3, "den": 5}  # t6 not measured
    assert s["execution_success"] == {"value": 3 / 4, "num": 3, "den": 4}  # t3, t6 not measured
    assert s["unsupported_rate"] == {"value": 2 / 3, "num": 2, "den": 3}  # emitted and measured: t1 t2 t4
    assert s["mean_tokens"] == {"value": 650 / 4, "num": 650, "den": 4}  # t1 t2 t4 t5
    assert s["mean_latency_s"] == {"value": pytest.approx(2.0), "num": pytest.approx(6.0), "den": 3}


def test_summarize_empty_has_no_values() -> None:
    s = summarize([])
    assert s["n"] == 0
    for name in ("accuracy", "coverage", "conditional_accuracy", "unsupported_rate", "mean_tokens"):
        assert s[name] == {"value": None, "num": 0, "den": 0}


def test_all_abstaining_system() -> None:
    """Zero unsupported answers by abstaining: the rate is unmeasured, not 0, and coverage says why."""
    s = summarize([_o(f"t{i}", emitted=False, predicted=None) for i in range(4)])
    assert s["accuracy"] == {"value": 0.0, "num": 0, "den": 4}
    assert s["coverage"] == {"value": 0.0, "num": 0, "den": 4}
    assert s["conditional_accuracy"]["value"] is None
    assert s["unsupported_rate"] == {"value": None, "num": 0, "den": 0}


def test_ratio() -> None:
    assert ratio(1, 4) == {"value": 0.25, "num": 1, "den": 4}
    assert ratio(0, 0)["value"] is None


def test_breakdown_by_kind_and_family() -> None:
    by_kind = breakdown(OUTCOMES, "kind")
    assert list(by_kind) == ["count", "entity_set", "interval"]
    assert by_kind["count"]["accuracy"] == {"value": 0.25, "num": 1, "den": 4}
    assert by_kind["entity_set"]["accuracy"]["num"] == 1
    by_family = breakdown(OUTCOMES, "family")
    assert list(by_family) == ["A", "B"]  # t5, t6 have no family
    assert by_family["A"]["accuracy"] == {"value": 1.0, "num": 2, "den": 2}
    assert by_family["B"]["conditional_accuracy"] == {"value": 0.5, "num": 1, "den": 2}
    assert list(breakdown(OUTCOMES, "system")) == ["tgms"]
    with pytest.raises(ValueError, match="breakdown"):
        breakdown(OUTCOMES, "seed")  # type: ignore[arg-type]


def test_outcome_validation() -> None:
    with pytest.raises(ValueError, match="tokens"):
        _o("t", tokens=-1)
    with pytest.raises(ValueError, match="latency"):
        _o("t", latency_s=-0.5)
    with pytest.raises(ValueError, match="not emitted"):
        _o("t", emitted=False, predicted=None, unsupported=True)


def test_per_task_scores_aligns_systems() -> None:
    rows = [
        _o("t2", system="rag", predicted=0),
        _o("t1", system="tgms"),
        _o("t2", system="tgms"),
        _o("t1", system="rag"),
    ]
    tasks, scores = per_task_scores(rows)
    assert tasks == ["t1", "t2"]
    assert scores == {"rag": [1.0, 0.0], "tgms": [1.0, 1.0]}
    assert per_task_scores([]) == ([], {})


def test_per_task_scores_refuses_unpaired_input() -> None:
    with pytest.raises(ValueError, match="more than once"):
        per_task_scores([_o("t1"), _o("t1")])
    with pytest.raises(ValueError, match="differ in tasks"):
        per_task_scores([_o("t1"), _o("t2"), _o("t1", system="rag")])
