"""Walking JSON values is priced per value (engine/operators/cost.py: ``values_estimate``): compute's
cost guard and the executor's full reads use the same price, from a list's length and first element."""

from __future__ import annotations

from typing import Any

import pytest

from tgms.engine.api import load_all
from tgms.engine.operators.compute import ComputeArgs, _compute_cost
from tgms.engine.operators.cost import VALUE_UNITS, json_width, values_estimate


@pytest.mark.parametrize(
    ("element", "width"),
    [
        (5, 1),
        ("n9", 1),
        (None, 1),
        ([1, 2, 3], 4),
        ({"src": "n1", "t": 5}, 3),
        ({"src": "n1", "props": {"w": 2, "x": 1}}, 5),  # one level of nesting counted
    ],
)
def test_an_element_is_priced_by_the_values_it_holds(element: Any, width: int) -> None:
    assert json_width(element) == width
    est = values_estimate(1000, element, ["narrow it"])
    assert est.work == {"scan_row": VALUE_UNITS * 1000 * width, "row_out": 1000}
    assert est.suggestions == ["narrow it"]


def test_a_longer_or_wider_list_costs_more() -> None:
    row = {"src": "n1", "dst": "n2", "t": 5}
    assert values_estimate(2000, row, []).seconds > values_estimate(1000, row, []).seconds
    assert values_estimate(1000, row, []).seconds > values_estimate(1000, 5, []).seconds


def test_compute_prices_its_lists_as_a_read_of_them_is_priced() -> None:
    """The call over a list costs what reading that list costs (both walk every value once), plus the
    second operand's; a scalar operand is one value."""
    load_all()
    rows = [{"src": f"n{i}", "t": i} for i in range(500)]
    a = ComputeArgs.model_validate({"fn": "group", "input": rows, "by": "src"})
    assert _compute_cost(None, a).work == values_estimate(500, rows[0], []).work  # type: ignore[arg-type]
    pair = ComputeArgs.model_validate({"fn": "ratio", "a": 3, "b": 4})
    two = values_estimate(1, 3, []).work
    assert _compute_cost(None, pair).work == {k: 2 * v for k, v in two.items()}  # type: ignore[arg-type]


def test_rolling_prices_each_rows_frame_as_a_read_of_it() -> None:
    """Each row reads its frame's rows: the input's price times the frame's width, at most the input's
    length (a frame reaching past every row reads every row); what the call gives back is priced once."""
    load_all()
    rows = [{"v": i} for i in range(40)]
    read = values_estimate(40, rows[0], []).work

    def work(frame: list[int]) -> dict[str, float]:
        a = ComputeArgs.model_validate({"fn": "rolling", "input": rows, "frame": frame})
        return _compute_cost(None, a).work  # type: ignore[arg-type]

    assert work([0, 5]) == {**read, "scan_row": 6 * read["scan_row"]}
    assert work([-1, -1]) == read
    assert work([-10_000, 10_000]) == {**read, "scan_row": 40 * read["scan_row"]}
