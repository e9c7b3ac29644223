"""The typed-answer rule of DESIGN §4, one kind at a time, with the near misses that decide it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tgms.engine.plan.model import ANSWER_KINDS
from tgms.engine.timeutil import OPEN_END
from tgms.pipeline.scoring.typed import RULES, iou, score

# --- count / value -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["count", "value"])
@pytest.mark.parametrize(
    ("gold", "predicted", "ok"),
    [
        (343, 343, True),
        (343, 342, False),
        (4, 4.0, True),  # int vs integral float
        (4.0, 4, True),
        (0.3, 0.1 + 0.2, True),  # float noise below 1e-9
        (1.5, 1.5 + 1e-10, True),  # near miss inside the tolerance
        (1.5, 1.5 + 1e-8, False),  # near miss outside it
        (1.5, 1.5 - 1e-8, False),
        (0.0, -0.0, True),
        (1500, 1.5, False),  # a µs value reported in ms
        (2_000_000, 2000, False),  # µs reported in ms, integers
        (1, True, False),  # a bool is not a number
        (0, False, False),
        (4, "4", False),  # a numeric string is not a number
        (4.5, "4.5", False),
        (4, [4], False),
        (4, {"count": 4}, False),
        (1.0, float("nan"), False),
        (1.0, float("inf"), False),
        (10**20, 10**20, True),  # big ints exact
        (10**20, 10**20 + 1, False),
        (7, np.int64(7), True),  # numpy scalars by value
        (0.25, np.float64(0.25), True),
    ],
)
def test_numbers(kind: str, gold: Any, predicted: Any, ok: bool) -> None:
    assert score(kind, gold, predicted) is ok


def test_value_non_numeric_falls_back_to_canonical_json() -> None:
    assert score("value", "during", "during")
    assert not score("value", "during", "overlaps")
    assert score("value", {"a": 1, "b": [0.3]}, {"b": [0.1 + 0.2], "a": 1.0})  # key order, floats
    assert not score("value", {"a": 1}, {"a": 2})
    assert not score("value", "4", 4)  # non-numeric gold: a number is not its string
    assert not score("value", True, 1)


@pytest.mark.parametrize("gold", ["4", None, [1]])
def test_count_gold_must_be_a_number(gold: Any) -> None:
    with pytest.raises(ValueError, match="count"):
        score("count", gold, 4)


# --- entity / entity_set ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gold", "predicted", "ok"),
    [
        ("n9", "n9", True),
        ("n9", "n8", False),
        ("n9", {"uid": "n9", "label": "user"}, True),
        ({"uid": "n9"}, "n9", True),
        ("n9", {"id": "n9"}, False),  # no uid key
        ("n9", {"uid": 9}, False),
        ("n9", ["n9"], False),  # a set is not an entity
        ("n9", 9, False),
    ],
)
def test_entity(gold: Any, predicted: Any, ok: bool) -> None:
    assert score("entity", gold, predicted) is ok


@pytest.mark.parametrize(
    ("predicted", "ok"),
    [
        (["a", "b", "c"], True),
        (["c", "a", "b"], True),  # order ignored
        (["a", "a", "b", "c", "c"], True),  # duplicates ignored
        ([{"uid": "b"}, "a", {"uid": "c", "label": "x"}], True),  # objects with uid
        (["a", "b"], False),  # a missing member
        (["a", "b", "c", "d"], False),  # an extra member
        (["a", "b", "x"], False),
        (["a", "b", {"name": "c"}], False),  # an element without a uid
        ("abc", False),
        ({"uid": "a"}, False),
        ([], False),
    ],
)
def test_entity_set(predicted: Any, ok: bool) -> None:
    assert score("entity_set", ["a", "b", "c"], predicted) is ok


def test_empty_entity_set() -> None:
    assert score("entity_set", [], [])
    assert not score("entity_set", [], ["a"])


def test_bad_entity_gold_raises() -> None:
    with pytest.raises(ValueError, match="entity_set"):
        score("entity_set", "a", ["a"])
    with pytest.raises(ValueError, match="entity"):
        score("entity", 5, "a")


# --- interval ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([0, 10], [0, 10], 1.0),  # identical
        ([0, 10], [0, 5], 0.5),  # contained: 5 / 10
        ([2, 4], [0, 10], 0.2),
        ([0, 10], [5, 15], 5 / 15),
        ([0, 10], [10, 20], 0.0),  # touching half-open intervals do not overlap
        ([0, 10], [30, 40], 0.0),  # disjoint
        ({"vt_s": 0, "vt_e": 10}, {"t_a": 0, "t_b": 5}, 0.5),
    ],
)
def test_iou(a: Any, b: Any, expected: float) -> None:
    assert iou(a, b) == pytest.approx(expected)
    assert iou(b, a) == pytest.approx(expected)


def test_iou_refuses_non_intervals() -> None:
    with pytest.raises(ValueError):
        iou([0, 10], [10, 0])


@pytest.mark.parametrize(
    ("predicted", "ok"),
    [
        ([0, 1000], True),  # identical
        ([0, 500], True),  # exactly 0.5
        ([0, 499], False),  # just under: 499 / 1000
        ([250, 750], True),  # contained, exactly 0.5
        ([-500, 1000], True),  # contains, 1000 / 1500
        ([-1001, 1000], False),  # contains, just under: 1000 / 2001
        ([-1000, 1000], True),  # contains, exactly 0.5
        ([500, 1500], False),  # 500 / 1500
        ([1000, 2000], False),  # touching
        ([5000, 6000], False),  # disjoint
        ({"vt_s": 0, "vt_e": 600}, True),
        ({"t_a": 100, "t_b": 900}, True),
        ((0, 1000), True),  # a Python tuple
    ],
)
def test_interval_rule(predicted: Any, ok: bool) -> None:
    assert score("interval", [0, 1000], predicted) is ok


@pytest.mark.parametrize(
    "predicted",
    [
        [0],
        [0, 10, 20],
        [10, 0],  # reversed
        [5, 5],  # empty
        [0.0, 1000.0],  # float endpoints
        ["0", "1000"],
        [True, 1000],
        {"vt_s": 0},
        {"start_time": 0, "end_time": 10},
        "[0, 1000)",
        500,  # a bare instant is not an interval answer
        {"vt_s": 0, "vt_e": None},
    ],
)
def test_interval_bad_shapes_score_false(predicted: Any) -> None:
    assert score("interval", [0, 1000], predicted) is False


def test_interval_open_end_is_exact() -> None:
    """Endpoints as large as OPEN_END (2**62) are compared in exact integers, not floats."""
    s = OPEN_END - 2_000
    assert score("interval", [s, OPEN_END], [s, OPEN_END - 1_000])  # exactly 0.5
    assert not score("interval", [s, OPEN_END], [s, OPEN_END - 1_001])


def test_bad_interval_gold_raises() -> None:
    with pytest.raises(ValueError, match="interval"):
        score("interval", [10, 0], [0, 10])


# --- canonical-JSON kinds and abstention ------------------------------------------------------------------


def test_boolean_relation_rows() -> None:
    assert score("boolean", True, True)
    assert not score("boolean", True, False)
    assert not score("boolean", True, 1)
    assert not score("boolean", False, 0)
    assert score("relation", "meets", "meets")
    assert not score("relation", "meets", "met_by")
    rows = [{"uid": "a", "t": 1, "w": 0.3}, {"uid": "b", "t": 2, "w": 1.0}]
    assert score("rows", rows, [{"w": 0.1 + 0.2, "t": 1, "uid": "a"}, {"uid": "b", "t": 2, "w": 1}])
    assert not score("rows", rows, list(reversed(rows)))  # rows are ordered
    assert not score("rows", rows, rows[:1])


def test_non_json_prediction_scores_false() -> None:
    assert not score("rows", [1, 2], {1, 2})
    assert not score("rows", [1.0], [float("nan")])
    assert not score("boolean", True, object())


def test_unknown_kind_uses_canonical_json() -> None:
    assert score("histogram", {"b": 1, "a": 2.0}, {"a": 2, "b": 1})
    assert not score("histogram", {"a": 1}, {"a": 1, "b": 0})


@pytest.mark.parametrize("kind", ANSWER_KINDS)
def test_abstention_scores_false(kind: str) -> None:
    gold = {"count": 0, "value": None, "entity": "n1", "entity_set": [], "interval": [0, 1]}.get(kind)
    assert score(kind, gold, None) is False


def test_every_answer_kind_has_a_rule() -> None:
    assert set(RULES) == set(ANSWER_KINDS)
    assert RULES["boolean"] == RULES["relation"] == RULES["rows"] == "json"
