"""LazyRows (the payload lists built only for the page read) behave like the list they stand for."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tgms.engine.operators.arrow_take import take_rows
from tgms.engine.operators.lazy_rows import LazyRows


class Squares(LazyRows):
    def __init__(self, pos: np.ndarray) -> None:
        super().__init__(pos)
        self.built: list[int] = []

    def _build(self, pos: np.ndarray) -> list[dict[str, Any]]:
        self.built.append(len(pos))
        return [{"x": int(p) ** 2} for p in pos]


def test_indexing_and_slicing_match_a_list() -> None:
    pos = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int64)
    lazy, plain = Squares(pos), [{"x": int(p) ** 2} for p in pos]
    assert len(lazy) == len(plain)
    for i in range(-len(plain), len(plain)):
        assert lazy[i] == plain[i]
    for sl in (
        slice(None),
        slice(2, 5),
        slice(5, 100),
        slice(100, 200),
        slice(-3, None),
        slice(None, None, 2),
    ):
        assert lazy[sl] == plain[sl], sl
    assert list(lazy) == plain
    with pytest.raises(IndexError):
        lazy[len(plain)]


def test_a_page_builds_only_its_rows() -> None:
    lazy = Squares(np.arange(1_000_000))
    assert lazy[500:510] == [{"x": x * x} for x in range(500, 510)]
    assert lazy.built == [10]


def test_take_rows_equals_arrow_take() -> None:
    import pyarrow as pa

    t = pa.concat_tables([pa.table({"a": np.arange(i * 10, i * 10 + 10)}) for i in range(7)])
    for pos in ([], [3], [5, 6, 7, 30, 31, 2, 69], list(range(70))[::-1], [12, 12, 13]):
        arr = np.array(pos, dtype=np.int64)
        assert take_rows(t, arr).to_pylist() == t.take(pa.array(arr, pa.int64())).to_pylist()
        assert take_rows(t["a"], arr).to_pylist() == t["a"].take(pa.array(arr, pa.int64())).to_pylist()


def test_a_lazy_list_gives_no_column_unless_it_says_so() -> None:
    """Reading a column is an opt-in of the subclass (EdgeVersionRows'; tested against its built rows in
    tests/engine/execute/test_full_reads.py): the default has none, and asking is an error, not rows."""
    lazy = Squares(np.arange(3, dtype=np.int64))
    assert not lazy.has_column("x")
    with pytest.raises(NotImplementedError, match="no column 'x'"):
        lazy.column("x")
    assert lazy.built == []
