"""engine/canonical.py's ``ints_text`` writes the canonical JSON of an int64 column byte for byte as
json.dumps does, and ``Dumped`` uses it (and what it remembers of long lists) only where that holds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tgms.engine.canonical import (
    MAX_RUNS,
    Dumped,
    dumps_canonical,
    int_array,
    ints_text,
    list_kinds,
    sha256_hex,
)
from tgms.engine.operators.compute_fns import median_of

INT64 = np.iinfo(np.int64)


def plain(values: list[int]) -> bytes:
    return json.dumps(values, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    "values",
    [
        [],
        [0],
        [-1],
        [7, 7, 7],
        [INT64.min, INT64.max, 0, -5, 10, 99, 100, -100, 10**18, -(10**18), 10**16, 9_999_999_999_999_999],
        [10**k for k in range(19)] + [-(10**k) for k in range(19)],
        [10**k - 1 for k in range(1, 19)],
    ],
)
def test_edge_values_read_as_json_writes_them(values: list[int]) -> None:
    assert ints_text(np.array(values, dtype=np.int64)) == plain(values)


def test_sorted_times_of_one_width_and_runs_of_widths() -> None:
    rng = np.random.default_rng(7)
    times = np.sort(rng.integers(1_000_000_000_000_000, 1_700_000_000_000_000, 100_000))
    assert ints_text(times) == plain(times.tolist())
    mixed = np.sort(rng.integers(-(10**17), 10**17, 50_000))  # widths rise and fall: a few dozen runs
    assert ints_text(mixed) == plain(mixed.tolist())


@pytest.mark.parametrize("width", range(1, 20))
def test_values_all_of_one_width_are_written_in_place_as_json_writes_them(width: int) -> None:
    # width >= 5 takes the in-place path (a first quad that overhangs the row before); narrower ones and
    # a range's very ends (10^(w-1), 10^w - 1) as well; the caller's array is never written
    rng = np.random.default_rng(width)
    lo, hi = 10 ** (width - 1) if width > 1 else 0, 10**width - 1 if width < 19 else INT64.max
    values = np.concatenate([[lo, hi], rng.integers(lo, hi, 3000, endpoint=True), [hi, lo]]).astype(np.int64)
    before = values.copy()
    assert ints_text(values) == plain(values.tolist())
    assert ints_text(values[:1]) == plain(values[:1].tolist())
    assert (values == before).all()


def test_many_runs_of_widths_are_left_to_json() -> None:
    widths = np.array([5, -5] * MAX_RUNS, dtype=np.int64)  # the sign changes the width: 2·MAX_RUNS runs
    assert ints_text(widths) is None
    few = np.array([5] * 10 + [-5] * 10, dtype=np.int64)
    assert ints_text(few) == plain(few.tolist())


def test_a_noted_column_is_dumped_from_the_column_and_the_text_is_the_plain_dump() -> None:
    column = np.arange(-3, 5000, dtype=np.int64) * 1_000_003
    value = column.tolist()
    dumped = Dumped()
    dumped.note_ints(value, column)
    assert dumped.dumps(value) == dumps_canonical(value)
    assert dumped.known(value) == dumps_canonical(value)
    assert sha256_hex(dumped.data(value)) == sha256_hex(dumps_canonical(value))
    other = list(value)  # equal, not the same list: not known
    assert dumped.int_array(other) is None and dumped.known(other) is None


def test_list_facts_are_answered_only_while_their_dumped_is_active() -> None:
    column = np.array([5, 1, 4, 2, 3] * 400, dtype=np.int64)
    value = column.tolist()
    dumped = Dumped()
    dumped.note_ints(value, column)
    assert int_array(value) is None  # nothing active
    with dumped.active():
        assert int_array(value) is column
        assert list_kinds(value) == {int}
        assert median_of(value, "input") == 3
    assert int_array(value) is None


def test_list_kinds_are_found_once_per_list_within_a_call() -> None:
    value: list[object] = list(range(2000))
    with Dumped().active():
        assert list_kinds(value) == {int}
        value.append("x")  # a call never does this: what was found stays until the call ends
        assert list_kinds(value) == {int}
    assert list_kinds(value) == {int, str}  # outside, every ask is a new pass
