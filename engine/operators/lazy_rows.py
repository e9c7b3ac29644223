"""Payload lists held as index arrays: rows are built only for the slice a page reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import numpy as np


def rows_of(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Rows from equally long columns, each row's keys in the columns' order: one ``dict(zip(...))`` a row
    (~2x faster than a dict comprehension indexing every column)."""
    names = list(columns)
    # every tuple is as long as names (one value per column): no per-row length check (~20 % of the time)
    return [dict(zip(names, values, strict=False)) for values in zip(*columns.values(), strict=True)]


class LazyRows(Sequence[dict[str, Any]]):
    """A payload list held as an index array; rows are built only for the slice that is read (the
    envelope reads one page of a list that may hold 10^5 rows). Subclasses implement :meth:`_build`."""

    #: whether every row built is canonical JSON as it is (str keys; str, int, bool or null values), so a
    #: whole read takes the built rows without a canonicalizing walk and copy (engine/execute/full_reads.py)
    canonical_rows: bool = False

    def __init__(self, pos: np.ndarray) -> None:
        self._pos = pos

    def __len__(self) -> int:
        return len(self._pos)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if not isinstance(i, slice):
            j = range(len(self))[i]  # bounds and negative indices as a list has them
            return self[j : j + 1][0]
        pos = self._pos[i]
        return self._build(pos) if len(pos) else []

    def _build(self, pos: np.ndarray) -> list[dict[str, Any]]:
        raise NotImplementedError

    def has_column(self, name: str) -> bool:
        """Whether :meth:`column` gives field ``name`` of every row without building the rows."""
        del name
        return False

    def int_column(self, name: str) -> np.ndarray | None:
        """Field ``name`` of every row as an int64 array, when it is an int column that is never null
        (:meth:`column` is then this array's list); else None."""
        del name
        return None

    def column(self, name: str) -> list[Any]:
        """Field ``name`` of every row, in order: ``[r[name] for r in self]``, read without building the
        rows (a compute step reading ``rows[*].name`` of a 10^6-row result), as canonical JSON values (the
        reader does not walk them again). Only where :meth:`has_column`."""
        raise NotImplementedError(f"{type(self).__name__} has no column {name!r}")
