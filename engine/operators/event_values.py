"""Values of the event vocabulary as keys: the one total order of JSON values (group keys, order_by,
distinct counts) and the coding of value columns into int64 codes in that order."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import numpy as np


def value_sort_key(x: Any) -> tuple[Any, ...]:
    """The total order of JSON values used for keys and order_by: null < false < true < numbers <
    strings (code points) < lists/objects (canonical JSON text)."""
    if x is None:
        return (0,)
    if isinstance(x, bool):
        return (1, int(x))
    if isinstance(x, (int, float)):
        return (2, Fraction(x) if isinstance(x, int) else Fraction(repr(x)))
    if isinstance(x, str):
        return (3, x)
    return (4, json.dumps(x, sort_keys=True, separators=(",", ":")))


def norm_value(x: Any) -> Any:
    """A property value as a key: an integral float is the int (1.0 and 1 are one value)."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def encode(values: Any) -> tuple[np.ndarray, list[Any]]:
    """Codes of JSON values in :func:`value_sort_key` order (equal numbers share a code), and the
    (normalized) value of each code."""
    seen: dict[Any, int] = {}
    firsts: list[Any] = []
    raw = np.empty(len(values), dtype=np.int64)
    for i, x in enumerate(values):
        if isinstance(x, (list, dict)):
            k: Any = value_sort_key(x)
        else:  # scalars hash by kind and value (True and 1 differ; 1 and 1.0 do not)
            k = (type(x) is bool, norm_value(x)) if x is not None else None
        j = seen.get(k)
        if j is None:
            j = seen[k] = len(firsts)
            firsts.append(norm_value(x))
        raw[i] = j
    order = sorted(range(len(firsts)), key=lambda j: value_sort_key(firsts[j]))
    remap = np.empty(len(firsts), dtype=np.int64)
    remap[np.array(order, dtype=np.int64)] = np.arange(len(firsts), dtype=np.int64)
    return (remap[raw] if len(firsts) else raw), [firsts[j] for j in order]


def unique_inverse(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, index of each element's value): one argsort (NumPy 2's hash-based
    ``np.unique`` was 10x slower on 10^6 int64 keys here)."""
    if not len(a):
        return a[:0], np.zeros(0, dtype=np.int64)
    o = np.argsort(a, kind="stable")
    srt = a[o]
    new = np.concatenate([[True], srt[1:] != srt[:-1]])
    inv = np.empty(len(a), dtype=np.int64)
    inv[o] = np.cumsum(new) - 1
    return srt[new], inv
