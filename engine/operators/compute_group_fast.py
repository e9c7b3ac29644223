"""compute group's vectorized path (issue 27's speed goal: a group over 10^6 rows well under a second).

:func:`fast_rows` gives exactly the rows (before ``order_by``) the general loop of
:mod:`engine.operators.compute_group` gives, or None when the input is not one it handles exactly; the
caller then runs the general loop, which also reports every bad row. It handles:

- rows that are all plain dicts holding every needed field, every float among those fields finite;
- key fields whose values are str, int (not bool) or null: for these Python equality is the group
  identity the general loop uses (numbers by exact value, strings by themselves, null its own group), so
  a dict factorizes them, and the distinct values are ranked by the very sort key the general loop sorts
  groups by (``_key_part``); several keys combine their ranks lexicographically;
- count, first, last (any values: the picked value goes through the general loop's ``_out``);
  count_distinct over str / int / null values; sum and mean over int64 ints (and nulls, skipped) whose
  partial sums cannot overflow; min, max, median and quantile over ints, finite floats, or both when
  every int is a float exactly. Any other aggregate (floats summed exactly, strings or booleans among the
  numbers, ...) is computed per group by the general loop's own ``_value`` on the group's values in
  input order, group by group, so its result and any error it raises are the general loop's.

Order statistics pick a value of the sorted numbers; the picked value's exact value is the one the
general loop's Fraction order gives, because a float's exact value (its canonical decimal) is monotone in
it and ints are compared exactly (``order_stats``' argument).
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import repeat
from operator import is_not, itemgetter
from typing import Any

import numpy as np

from tgms.engine.canonical import canon_float
from tgms.engine.operators.compute_fns import exact, number_out

_KEY_TYPES = frozenset({str, int, type(None)})
_NUMS = frozenset({int, float})
#: ints up to this magnitude are floats exactly (an int and a float then sort correctly as float64)
_EXACT_FLOAT_INT = 2**53
_I64 = 2**63

Agg = tuple[str, str | None, str, Fraction | None]  # fn, field, name, q (compute_group.Agg)


def _columns(items: list[Any], needed: list[str]) -> dict[str, list[Any]] | None:
    if set(map(type, items)) != {dict}:
        return None
    try:
        cols = {f: list(map(itemgetter(f), items)) for f in needed}
    except KeyError:
        return None
    for col in cols.values():  # a NaN or infinity anywhere it is read is the general loop's error
        floats = [v for v in col if type(v) is float] if float in set(map(type, col)) else []
        if not all(map(math.isfinite, floats)):
            return None
    return cols


def _ranks(col: list[Any], part: Any) -> tuple[np.ndarray, list[Any]]:
    """Each value's rank among the column's distinct values in the general loop's key order."""
    distinct = sorted(dict.fromkeys(col), key=part)
    index = {v: i for i, v in enumerate(distinct)}
    return np.fromiter(map(index.__getitem__, col), np.int64, len(col)), distinct


class _Groups:
    """The groups of the rows: each row's group code (0..G-1 in key order) and each group's size."""

    def __init__(self, codes: np.ndarray, n_groups: int) -> None:
        self.codes = codes
        self.g = n_groups
        self.counts = np.bincount(codes, minlength=n_groups)
        self._order: np.ndarray | None = None

    def order(self) -> np.ndarray:
        """Row positions grouped, input order within a group (a stable sort)."""
        if self._order is None:
            self._order = np.argsort(self.codes, kind="stable")
        return self._order

    def starts(self) -> np.ndarray:
        return np.cumsum(self.counts) - self.counts

    def segments(self, col: list[Any]) -> list[list[Any]]:
        """Each group's values in input order."""
        grouped = list(map(col.__getitem__, self.order().tolist()))
        bounds = self.starts().tolist()
        return [grouped[s : s + c] for s, c in zip(bounds, self.counts.tolist(), strict=True)]


def _count_distinct(col: list[Any], kinds: set[type], gr: _Groups) -> list[int] | None:
    if not kinds <= _KEY_TYPES:  # floats (exact-value identity), booleans, containers: per group
        return None
    values = list(dict.fromkeys(col))
    index = {v: i for i, v in enumerate(values)}
    ids = np.fromiter(map(index.__getitem__, col), np.int64, len(col))
    codes = gr.codes
    if None in index:
        keep = ids != index[None]
        ids, codes = ids[keep], codes[keep]
    pairs = np.unique(codes * len(values) + ids)
    return np.bincount(pairs // len(values), minlength=gr.g).tolist()


class _Numbers:
    """A field's numbers (nulls skipped), sorted by group, then by value: each group's sorted run."""

    def __init__(self, col: list[Any], kinds: set[type], gr: _Groups) -> None:
        codes = gr.codes
        if type(None) in kinds:
            keep = np.fromiter(map(is_not, col, repeat(None)), bool, len(col))
            col = [v for v in col if v is not None]
            codes = codes[keep]
        self.ints = kinds & _NUMS == {int}
        if self.ints:
            values = np.array(col, dtype=np.int64)  # OverflowError: the caller's fallback
        else:
            if int in kinds and any(abs(v) > _EXACT_FLOAT_INT for v in col if type(v) is int):
                raise OverflowError("an int that is no float")
            values = np.array(col, dtype=np.float64)
        order = np.lexsort((values, codes))
        self.sorted = values[order]
        self.m = np.bincount(codes, minlength=gr.g)
        self.start = np.cumsum(self.m) - self.m

    def pick(self, at: np.ndarray) -> list[Any]:
        """The sorted values at ``at``, each as its exact value leaves compute (None where at < 0)."""
        if not len(self.sorted):  # no numbers at all: every group's is null
            return [None] * len(at)
        got = self.sorted[np.maximum(at, 0)].tolist()
        if self.ints:  # an int's exact value leaves as the int itself
            return [v if i >= 0 else None for v, i in zip(got, at.tolist(), strict=True)]
        return [
            number_out(exact(v, "input")) if i >= 0 else None for v, i in zip(got, at.tolist(), strict=True)
        ]

    def sums(self) -> list[int] | None:
        """Each group's sum, exact, when no partial sum can overflow int64 (else None)."""
        if not self.ints or not len(self.sorted):
            return [0] * len(self.m) if self.ints else None
        # the bound in Python ints: np.abs(-2**63) wraps around
        bound = max(-int(self.sorted.min()), int(self.sorted.max()))
        if bound * len(self.sorted) >= _I64:
            return None
        acc = np.concatenate(([0], np.cumsum(self.sorted)))
        return (acc[self.start + self.m] - acc[self.start]).tolist()


def _numeric(fn: str, q: Fraction | None, nums: _Numbers) -> list[Any] | None:
    m, start = nums.m, nums.start
    if fn in ("sum", "mean"):
        sums = nums.sums()
        if sums is None:
            return None
        if fn == "sum":
            return sums
        # number_out(Fraction(s, c)): the int when c divides s, else the float of s/c (int / int is
        # correctly rounded, as float(Fraction) is) rounded as every number leaves
        return [None if not c else (s // c if s % c == 0 else canon_float(s / c))
                for s, c in zip(sums, m.tolist(), strict=True)]  # fmt: skip
    empty = m == 0
    if fn == "min":
        return nums.pick(np.where(empty, -1, start))
    if fn == "max":
        return nums.pick(np.where(empty, -1, start + m - 1))
    if fn == "quantile":
        assert q is not None
        a, b = q.numerator, q.denominator
        rank = [max(1, -(-a * c // b)) for c in m.tolist()]  # max(1, ceil(q·c)), in ints
        return nums.pick(np.where(empty, -1, start + np.array(rank, dtype=np.int64) - 1))
    hi = nums.pick(np.where(empty, -1, start + m // 2))  # median
    lo = nums.pick(np.where(empty | (m % 2 == 1), -1, start + m // 2 - 1))
    out: list[Any] = []
    for x, y in zip(lo, hi, strict=True):
        if x is None:  # an odd count (its middle value) or no numbers (None)
            out.append(y)
        elif nums.ints:
            s = x + y  # (x + y) / 2 exactly: the int, or k + 0.5, a float exactly below 2^53
            out.append(
                s // 2 if s % 2 == 0 else (s / 2 if abs(s) < _EXACT_FLOAT_INT else number_out(Fraction(s, 2)))
            )
        else:
            out.append(number_out((exact(x, "input") + exact(y, "input")) / 2))
    return out


def _vector(fn: str, q: Fraction | None, col: list[Any], gr: _Groups, out: Any) -> list[Any] | None:
    """One aggregate of every group at once, or None: compute it per group."""
    if fn in ("first", "last"):
        order, starts = gr.order(), gr.starts()
        at = order[starts if fn == "first" else starts + gr.counts - 1].tolist()
        return [out(col[i]) for i in at]
    kinds = set(map(type, col))
    if fn == "count_distinct":
        return _count_distinct(col, kinds, gr)
    if not kinds - {type(None)} <= _NUMS:  # strings or booleans among the numbers: skipped per group
        return None
    try:
        nums = _Numbers(col, kinds, gr)
    except OverflowError:
        return None
    return _numeric(fn, q, nums)


def fast_rows(
    items: list[Any], keys: list[str], aggs: list[Agg], part: Any, value: Any, out: Any
) -> list[dict[str, Any]] | None:
    """The group's rows in key order, or None (the general loop's case). ``part``, ``value`` and ``out``
    are the general loop's key part, per-group aggregate and output of a value."""
    if not items:
        return None
    needed = list(dict.fromkeys([*keys, *(a[1] for a in aggs if a[1] is not None)]))
    cols = _columns(items, needed)
    if cols is None or any(not set(map(type, cols[k])) <= _KEY_TYPES for k in keys):
        return None
    ranked = [_ranks(cols[k], part) for k in keys]
    sizes = [len(d) for _, d in ranked]
    if math.prod(sizes) >= _I64:
        return None
    combined = ranked[0][0]
    for (r, _), size in zip(ranked[1:], sizes[1:], strict=True):
        combined = combined * size + r
    if len(keys) == 1:  # every rank occurs: the ranks are the group codes
        present, codes = np.arange(sizes[0]), combined
    else:
        present, codes = np.unique(combined, return_inverse=True)
    gr = _Groups(codes.reshape(-1), len(present))
    key_values: list[list[Any]] = []
    rest = present
    for (_, distinct), size in zip(reversed(ranked), reversed(sizes), strict=True):
        key_values.append([distinct[i] for i in (rest % size).tolist()])  # a key value leaves as itself
        rest = rest // size
    key_values.reverse()
    vectors: list[list[Any] | None] = []
    for fn, field, _, q in aggs:
        if fn == "count" and field is None:
            vectors.append(gr.counts.tolist())
        elif fn == "count":  # a field's non-null values
            assert field is not None
            set_ = np.array([v is not None for v in cols[field]], dtype=np.float64)
            vectors.append(np.bincount(gr.codes, weights=set_, minlength=gr.g).astype(np.int64).tolist())
        else:
            assert field is not None
            vectors.append(_vector(fn, q, cols[field], gr, out))
    segments = {
        a[1]: gr.segments(cols[a[1]]) for a, v in zip(aggs, vectors, strict=True) if v is None and a[1]
    }
    rows = []
    for g in range(gr.g):  # group by group, as the general loop: its errors come in its order
        row = {k: kv[g] for k, kv in zip(keys, key_values, strict=True)}
        for (fn, field, name, q), vec in zip(aggs, vectors, strict=True):
            row[name] = vec[g] if vec is not None else value(fn, q, segments[field or ""][g])
        rows.append(row)
    return rows
