"""Walking JSON values is priced per value (engine/operators/cost.py: ``values_estimate``): compute's
cost guard and the executor's full reads use the same price, from a list's length and first element."""

from __future__ import annotations

from typing import Any

import pytest

from tgms.engine.api import load_all
from tgms.engine.operators.compute import FRAME_READ_UNITS, ComputeArgs, _compute_cost
from tgms.engine.operators.compute_group import rolling_reads
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


def _brute_reads(rows: list[dict[str, Any]], by: str | None, lo: int, hi: int) -> int:
    """Each row's frame rows counted one by one, within the rows sharing its key."""
    total = 0
    for i, row in enumerate(rows):
        part = [j for j, r in enumerate(rows) if by is None or r[by] == row[by]]
        pos = part.index(i)
        total += sum(1 for off in range(lo, hi + 1) if 0 <= pos + off < len(part))
    return total


@pytest.mark.parametrize("frame", [[0, 5], [-1, -1], [3, 7], [-10_000, 0], [-10_000, 10_000], [50, 60]])
@pytest.mark.parametrize("by", [None, "k"])
def test_rolling_prices_the_frames_it_reads_again_within_partitions(frame: list[int], by: str | None) -> None:
    """An aggregate taken frame by frame (min) reads each row's frame again, clipped to the row's
    partition (``by``; the fifth question set's running sum per sender was priced as if every frame
    spanned the whole input, ~1,000x too high): FRAME_READ_UNITS a value read. count, first, last and int
    sums take O(1) a row (compute_rolling): the input's walk only."""
    load_all()
    rows = [{"k": i % 4, "v": i} for i in range(40)]
    read = values_estimate(40, rows[0], []).work

    def work(fn: str, field: str | None = "v", data: list[dict[str, Any]] = rows) -> dict[str, float]:
        agg = {"fn": fn, "as": "x", **({"field": field} if field else {})}
        args = {"fn": "rolling", "input": data, "frame": frame, "by": by, "aggregates": [agg]}
        return _compute_cost(None, ComputeArgs.model_validate(args)).work  # type: ignore[arg-type]

    reads = _brute_reads(rows, by, *frame)
    assert rolling_reads(rows, by, *frame) == reads
    assert work("min") == {**read, "scan_row": read["scan_row"] + FRAME_READ_UNITS * reads}
    for fn, field in (("sum", "v"), ("mean", "v"), ("count", None), ("first", "v"), ("last", "k")):
        assert work(fn, field) == read, fn
    floats = [{"k": r["k"], "v": r["v"] + 0.5} for r in rows]  # an exact float sum goes frame by frame
    assert work("sum", "v", floats)["scan_row"] == read["scan_row"] + FRAME_READ_UNITS * reads
