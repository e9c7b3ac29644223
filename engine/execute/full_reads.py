"""The whole results a plan's full-input steps read past a cut page (docs/plans.md §3, "Full reads").

The executor keeps the full (unpaged) payload of every cut step a full-input step (compute) reads, as the
call returned it: a list may be held lazily (:class:`~engine.operators.lazy_rows.LazyRows`, rows built
for the slice read). :class:`FullResults` builds only what a read needs, once:

- a projection of one field of every row (``s1.rows[*].vt_s``) of a lazily held list that can give that
  field as a column (:meth:`LazyRows.column`) reads the column, never building the rows: a median over
  10^6 event times costs the times, not 10^6 row objects;
- any other read builds the list it names (every row), canonical, and resolves the ref against it.

Either way the value is exactly what resolving the ref against the canonical whole payload gives (tested
in tests/engine/execute/test_full_reads.py), so traces and digests do not depend on the path taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.operators.lazy_rows import LazyRows
from tgms.engine.plan.refs import Field, Ref, Resolved, Star, resolve


def materialized(value: Any) -> Any:
    """A payload list held as a lazy sequence, as a list (anything else unchanged)."""
    if isinstance(value, Sequence) and not isinstance(value, (str, list, tuple)):
        return list(value[0 : len(value)])
    return value


def _column_field(ref: Ref) -> str | None:
    """The field a ``list[*].field`` ref projects (None for any other ref)."""
    if len(ref.path) == 2 and isinstance(ref.path[0], Star) and isinstance(ref.path[1], Field):
        return ref.path[1].name
    return None


@dataclass
class FullResults:
    """Whole payloads by step id, and the canonical lists built from them so far (never serialized)."""

    _raw: dict[str, dict[str, Any]] = field(default_factory=dict)
    _built: dict[tuple[str, str], Any] = field(default_factory=dict)

    def keep(self, sid: str, payload: dict[str, Any]) -> None:
        self._raw[sid] = payload

    def has(self, sid: str) -> bool:
        return sid in self._raw

    def stopped_early(self, sid: str) -> bool:
        """Whether the step's operator itself stopped short of the whole result (its ``truncated``)."""
        return bool(self._raw[sid].get("truncated"))

    def shape(self, sid: str, name: str) -> tuple[int, Any] | None:
        """The length and the canonical first element of a kept list, without building the list (a lazily
        held one builds its first row); None when step ``sid`` kept no list ``name``."""
        value = self._raw.get(sid, {}).get(name)
        if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
            return None
        return len(value), canonicalize(value[0]) if len(value) else None

    def reads_column(self, ref: Ref) -> bool:
        """Whether reading ``ref`` takes one column of a lazily held list instead of building its rows."""
        name = _column_field(ref)
        value = self._raw.get(ref.step, {}).get(ref.field)
        return name is not None and isinstance(value, LazyRows) and value.has_column(name)

    def read(self, ref: Ref) -> Resolved:
        """``ref`` resolved against its step's whole result (``has(ref.step)``): a complete read
        (``truncated`` False) unless the ref crosses a list that is itself cut."""
        whole = self._raw[ref.step]
        if self.reads_column(ref):
            name = _column_field(ref)
            assert name is not None
            rows = whole[ref.field]
            ints = rows.int_column(name)
            if ints is not None:
                return Resolved(ints.tolist(), False, ints)
            return Resolved(rows.column(name), False)  # canonical values (LazyRows.column)
        key = (ref.step, ref.field)
        if ref.field in whole and key not in self._built:  # built at its first read only: it can be large
            raw = whole[ref.field]
            built = materialized(raw)
            canonical = isinstance(raw, LazyRows) and raw.canonical_rows  # fresh rows, canonical as built
            self._built[key] = built if canonical else canonicalize(built)
        view = dict(whole)
        if key in self._built:
            view[ref.field] = self._built[key]
        return resolve(ref, view)
