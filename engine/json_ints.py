"""The canonical JSON text of a long list of int64 integers, written by numpy.

A whole read of 10^6 event times is dumped once for its digest (engine/canonical.py: ``Dumped``);
``json.dumps`` writes it at ~110 ns a value on the 2-core VM, most of a plan step that takes a median
over it. Canonical JSON of an int is its decimal digits with ``-`` before a negative one, so the text of
a list of ints can be written column by column: every value's decimal digits in a fixed-width byte matrix
(four digits at a time, by a 10,000-entry table), then the values of one width cut out of it as one
rectangle. That holds while the widths come in few runs (times, sorted ids); otherwise the caller dumps
as usual (:func:`ints_text` returns None). The text is byte for byte ``json.dumps`` of the same list
(tests/engine/test_json_ints.py).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

#: the most runs of equal width (sign included) a list may come in for the matrix to be cut by runs
MAX_RUNS = 64

#: "0000" .. "9999" as uint32s whose four bytes (little-endian) are the ASCII digits in reading order
_QUADS = np.array([ord(c) for i in range(10_000) for c in f"{i:04d}"], dtype=np.uint8).view(np.uint32)
#: 10^1 .. 10^19: a magnitude's digit count is 1 + how many of these it reaches
_POWERS = np.array([10**k for k in range(1, 20)], dtype=np.uint64)
_TEN_THOUSAND = np.uint64(10_000)


def ints_text(values: np.ndarray) -> memoryview | None:
    """``json.dumps(values.tolist(), separators=(",", ":"))`` as ASCII bytes (a view of the array numpy
    wrote them in: hashed and decoded without one more copy of 17 MB), or None when its values' widths
    come in more than :data:`MAX_RUNS` runs."""
    n = len(values)
    if n == 0:
        return memoryview(b"[]")
    neg = values < 0
    mag = np.abs(values).view(np.uint64)  # |-2^63| wraps to -2^63, which is 2^63 as uint64
    digits = np.searchsorted(_POWERS, mag, "right") + 1
    chars = digits + neg  # a value's width: its digits and its sign
    cut = np.flatnonzero(chars[1:] != chars[:-1]) + 1
    if len(cut) >= MAX_RUNS:
        return None
    quads = int(digits.max()) // 4 + 1  # room for the widest value's digits and one byte before them
    rows = _matrix(mag, quads)
    end = 4 * quads  # the comma's column
    if neg.any():
        at = np.flatnonzero(neg)
        rows[at, end - 1 - digits[at]] = ord("-")
    bounds = [0, *cut.tolist(), n]
    out = np.empty(1 + int(chars.sum()) + n, np.uint8)  # "[", then each value and a comma (the last: "]")
    out[0] = ord("[")
    at_out = 1
    for a, b in pairwise(bounds):
        first = end - int(chars[a])  # the run's first column: its sign or its first digit
        size = (b - a) * (end + 1 - first)
        out[at_out : at_out + size].reshape(b - a, -1)[...] = rows[a:b, first : end + 1]
        at_out += size
    out[-1] = ord("]")
    return out.data  # the array's own buffer


def _matrix(mag: np.ndarray, quads: int) -> np.ndarray:
    """(n, 4·quads + 4) bytes per value: its digits right-aligned and zero-padded in the first 4·quads
    columns, then a comma and three pad bytes. Built column-major (each four digits of every value one
    contiguous row) and transposed once: writing strided columns is several times slower."""
    cols = np.empty((quads + 1, len(mag)), dtype=np.uint32)
    cols[quads] = ord(",")
    x = mag
    for k in range(quads - 1, -1, -1):  # from the right: q = x // 10^4 and x − 10^4·q, as numbers < 10^4
        q = x // _TEN_THOUSAND
        _QUADS.take((x - q * _TEN_THOUSAND).view(np.int64), out=cols[k])
        x = q
    return np.ascontiguousarray(cols.T).view(np.uint8)
