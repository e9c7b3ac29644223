"""Canonical JSON and hashing: the byte form behind every digest.

Canonical JSON (DESIGN §3.3): sorted keys, no spaces, UTF-8, floats rounded to 9 decimals, NaN and
infinities refused. An integral float is written as an integer (``4.0`` -> ``4``), since JSON does not
distinguish the two and a value must have exactly one byte form. ``-0.0`` becomes ``0``.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import chain, pairwise
from typing import Any

import numpy as np

from tgms.engine.errors import InvalidArgError, LimitError

FLOAT_DECIMALS = 9
_INT_FLOAT_LIMIT = 2**53

#: How deeply JSON input (op props, operator args, compute input, plans) may nest. The deepest legitimate
#: input is a plan step's args (plan -> steps -> step -> args -> window / $ref -> value): under ten levels;
#: props are small records. The bound keeps every recursive walk (canonicalization, pydantic, the
#: verifier) far from Python's recursion limit, so deep input is refused with ``E_LIMIT``, not a crash.
MAX_JSON_DEPTH = 64


def canon_float(x: float) -> float | int:
    """Round a float the one way every digest and threshold comparison sees it."""
    if math.isnan(x) or math.isinf(x):
        raise InvalidArgError("NaN and infinite numbers are not allowed", value=repr(x))
    r = round(x, FLOAT_DECIMALS)
    if r == 0:
        return 0
    if r.is_integer() and abs(r) < _INT_FLOAT_LIMIT:
        return int(r)
    return r


#: the exact types that are already canonical JSON values (not their subclasses: an IntEnum is walked)
_PLAIN = frozenset({str, int, bool, type(None)})


def canonicalize(value: Any, path: str = "$") -> Any:
    """Return a JSON value in canonical form; raise ``E_INVALID_ARG`` for anything not JSON."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        try:
            return canon_float(value)
        except InvalidArgError as exc:
            exc.details["path"] = path
            raise
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidArgError("object keys must be strings", path=path, key=repr(k))
            # a str, int, bool or null is its own canonical form: no walk (and no path string) for it
            out[k] = v if type(v) in _PLAIN else canonicalize(v, f"{path}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        kinds = list_kinds(value)  # one C-level pass: a 10^6-element list is not walked per element
        if kinds <= _PLAIN:  # a list of 10^6 ids or times: copied, not walked
            return list(value)
        if kinds == _DICT and _flat_rows(value):  # 10^6 rows {src, t}: each copied, not walked
            return list(map(dict, value))
        return [v if type(v) in _PLAIN else canonicalize(v, f"{path}[{i}]") for i, v in enumerate(value)]
    # numpy scalars: accept ints and floats by value (arrays are not JSON values)
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return canonicalize(value.item(), path)
    raise InvalidArgError(
        f"value of type {type(value).__name__} is not JSON", path=path, type=type(value).__name__
    )


_DICT = frozenset({dict})
#: exact types that hold no container (check_depth's leaves; float too, unlike _PLAIN)
_LEAF = frozenset({str, int, float, bool, type(None)})


def _flat_rows(rows: list[Any] | tuple[Any, ...]) -> bool:
    """Whether every element (each a plain dict) has str keys and only _PLAIN values: canonicalize would
    then copy each as it is, and none holds a container."""
    return (
        set(map(type, chain.from_iterable(rows))) <= _STR
        and set(map(type, chain.from_iterable(map(dict.values, rows)))) <= _PLAIN
    )


_STR = frozenset({str})


def check_depth(value: Any, what: str = "value", limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse (``E_LIMIT``) a JSON value nested deeper than ``limit`` containers.

    Iterative, so it is safe on input that would overflow the recursive walks it protects."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > limit:
            raise LimitError(f"{what} is nested more than {limit} levels deep", what=what, max_depth=limit)
        if type(node) is list:  # a long list of scalars or of flat rows: typed in C-level passes
            kinds = list_kinds(node)
            if kinds <= _LEAF:
                continue
            if kinds == _DICT and set(map(type, chain.from_iterable(map(dict.values, node)))) <= _LEAF:
                if depth + 1 > limit:  # its rows are containers one level down, holding none
                    raise LimitError(
                        f"{what} is nested more than {limit} levels deep", what=what, max_depth=limit
                    )
                continue
        # only containers can nest deeper: scalars (most of a big list) are not stacked
        stack.extend([(c, depth + 1) for c in children if isinstance(c, (dict, list, tuple))])


def dumps(value: Any) -> str:
    """Canonical JSON text of a (not yet canonical) value."""
    return json.dumps(
        canonicalize(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def dumps_canonical(value: Any) -> str:
    """Canonical JSON text of a value that is already canonical (skips the walk)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(data: str | bytes | memoryview) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def sha256_pieces(pieces: list[bytes | memoryview]) -> str:
    """:func:`sha256_hex` of the pieces' bytes one after another (never joined)."""
    h = hashlib.sha256()
    for p in pieces:
        h.update(p)
    return h.hexdigest()


def digest(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value``."""
    return sha256_hex(dumps(value))


def hash64(text: str) -> int:
    """A stable signed 64-bit hash of a string (first 8 bytes of BLAKE2b), for integer identities."""
    h = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(h, "big", signed=True)


# -- an int64 column's canonical JSON, written by numpy -----------------------------------------------

# A whole read of 10^6 event times is dumped once for its digest (:class:`Dumped`); ``json.dumps`` writes it
# at ~110 ns a value on the 2-core VM, most of a plan step that takes a median over it. Canonical JSON of an
# int is its decimal digits with ``-`` before a negative one, so the text of a list of ints can be written
# column by column: every value's decimal digits in a fixed-width byte matrix (four digits at a time, by a
# 10,000-entry table), then the values of one width cut out of it as one rectangle. That holds while the
# widths come in few runs (times, sorted ids); otherwise the caller dumps as usual (:func:`ints_text`
# returns None). The text is byte for byte ``json.dumps`` of the same list (tests/engine/test_json_ints.py).

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
    lo, hi = int(values.min()), int(values.max())
    if lo >= 0 and len(str(lo)) == len(str(hi)) >= _ONE_WIDTH_MIN:  # every value as wide (times, ids)
        return _one_width(values, len(str(hi)))
    neg = values < 0
    mag = np.abs(values).view(np.uint64)  # |-2^63| wraps to -2^63, which is 2^63 as uint64
    digits = np.searchsorted(_POWERS, mag, "right") + 1
    chars = digits + neg  # a value's width: its digits and its sign
    cut = np.flatnonzero(chars[1:] != chars[:-1]) + 1
    if len(cut) >= MAX_RUNS:
        return None
    # room for the widest value's digits, and one byte before them when some value has a sign
    widest = int(digits.max())
    quads = widest // 4 + 1 if neg.any() else -(-widest // 4)
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


#: the fewest digits :func:`_one_width` writes (a narrower value's first quad would overhang a value
#: written in the same pass, not only the comma and digits written after it)
_ONE_WIDTH_MIN = 5


def _one_width(values: np.ndarray, width: int) -> memoryview:
    """:func:`ints_text` of non-negative values all ``width`` (≥ 5) digits wide, written in place: value i
    is row i of ``width`` digits and a comma, each quad of digits stored as one (unaligned) uint32 at its
    column of every row, no matrix to transpose and cut (~2x faster for 10^6 times)."""
    n = len(values)
    quads = -(-width // 4)
    pad = 4 * quads - width  # leading zeros of the first quad: they land before the row, in bytes
    out = np.empty(pad + 1 + n * (width + 1), np.uint8)  # rewritten later (the row before's end, or spare)

    def put(k: int, quad: np.ndarray) -> None:  # quad k of every value, at its column of each row
        np.ndarray((n,), np.uint32, buffer=out, offset=1 + 4 * k, strides=(width + 1,))[...] = quad

    x = values.view(np.uint64)
    top = np.uint64(10 ** (4 * (quads - 1)))
    q = x // top
    text = _QUADS.take(q.view(np.int64))
    put(0, text)  # the first quad first: its overhang is rewritten after it
    rest = x - np.multiply(q, top, out=q)  # a buffer of ours, as q and text are
    _low_quads(rest, quads - 1, lambda k, quad: put(k + 1, quad), q, text)
    body = out[pad:]
    np.ndarray((n,), np.uint8, buffer=body, offset=width + 1, strides=(width + 1,))[...] = ord(",")
    body[0], body[-1] = ord("["), ord("]")
    return body.data


def _low_quads(
    x: np.ndarray, quads: int, write: Callable[[int, np.ndarray], None], q: np.ndarray, text: np.ndarray
) -> None:
    """``write(k, text)`` for k = quads − 1 … 0: the ASCII bytes (one uint32 each) of the digits
    ``4k .. 4k + 3`` from the left of the ``4·quads``-digit zero-padded uint64s ``x``, the rightmost quad
    first, each in ``text``. ``x``, ``q`` and ``text`` are the caller's scratch, overwritten: ``q = x //
    10^4`` and ``r = x − 10^4·q`` go into buffers allocated once (a fresh 8 MB temporary per operation cost
    more than the operation: ~2 ms a quad against ~5)."""
    r = np.empty_like(x)
    for k in range(quads - 1, -1, -1):
        np.floor_divide(x, _TEN_THOUSAND, out=q)
        np.multiply(q, _TEN_THOUSAND, out=r)
        np.subtract(x, r, out=r)
        _QUADS.take(r.view(np.int64), out=text)
        write(k, text)
        x, q = q, x


def _matrix(mag: np.ndarray, quads: int) -> np.ndarray:
    """(n, 4·quads + 4) bytes per value: its digits right-aligned and zero-padded in the first 4·quads
    columns, then a comma and three pad bytes. Built column-major (each four digits of every value one
    contiguous row) and transposed once: writing strided columns is several times slower. ``mag`` (the
    caller's own array) is overwritten."""
    cols = np.empty((quads + 1, len(mag)), dtype=np.uint32)
    cols[quads] = ord(",")
    _low_quads(mag, quads, cols.__setitem__, np.empty_like(mag), np.empty(len(mag), np.uint32))
    return np.ascontiguousarray(cols.T).view(np.uint8)


# -- large values dumped once --------------------------------------------------------------------------

# Large values dumped to canonical JSON once, then spliced into every larger object that holds them.
#
# A plan step that reads a whole result (compute over 10^6 event times) holds one large list in several
# objects the executor digests: the read itself (its ``{items, digest}``), the step's resolved arguments,
# the call's ``args_echo`` and its envelope. Dumping the list again for each costs a full pass each time
# (~130 ms for 10^6 times on the 2-core VM, far more for rows). :class:`Dumped` keeps the canonical text of
# each large value it dumped, by the value's identity (holding the value, so the identity stays its own),
# and :meth:`Dumped.text_of` dumps an object holding such values with their texts spliced in.
#
# The result is byte for byte the plain dump (tests/engine/test_dumped.py): the known values are replaced
# by unique placeholder strings, the rest is dumped as usual (canonicalized first when asked), and each
# placeholder's JSON string is replaced by its value's text. Should the rest hold a placeholder's own
# spelling (a string a caller chose), the splice is not made and the whole object is dumped plainly.
# Placeholders stand only for dict values (the objects that hold a step's large lists are dicts: the
# arguments, the echo, the envelope), so the walk never enters a list.
#
# It also remembers, while one call runs (:meth:`Dumped.active`), what else a pass over a long list finds:
# its element types (:func:`list_kinds`: the depth check, canonicalization and compute's median each
# asked again, ~17 ms a pass over 10^6 values) and, for a list the executor read from an int64 column, the
# column itself (:func:`int_array`: the median partitions it, the dump writes it with numpy). Within a
# call nothing mutates a list it was given, so what was found of it stays true until the call ends.

#: how deep in nested dicts a known value is looked for (envelope -> args_echo -> input is 2)
_DEPTH = 4
#: a placeholder: NUL never appears raw in canonical JSON (it is written \u0000), so only a string that
#: spells this very text can clash, and that is detected
_HOLDER = "\x00tgms-dumped-{}\x00"
#: lists shorter than this are typed again when asked (remembering them costs more than a pass)
_REMEMBER_MIN = 1000

#: the Dumped of the call running in this context (see :meth:`Dumped.active`)
_ACTIVE: ContextVar[Dumped | None] = ContextVar("tgms_active_dumped", default=None)


class Dumped:
    """What is known of one step's large canonical values, by identity: their canonical texts, the
    element types of long lists, the int64 columns some lists were read from."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Any, str]] = {}
        self._kinds: dict[int, tuple[Any, frozenset[type]]] = {}
        self._ints: dict[int, tuple[Any, np.ndarray]] = {}
        self._bytes: dict[int, tuple[Any, memoryview]] = {}

    def dumps(self, value: Any) -> str:
        """The canonical JSON text of ``value`` (already canonical), kept for later splices."""
        return self._dump(value)[0]

    def data(self, value: Any) -> bytes | memoryview:
        """:meth:`dumps` as UTF-8 bytes (the bytes numpy wrote, when it wrote them), kept for splices."""
        text, data = self._dump(value)
        return data if data is not None else text.encode("utf-8")

    def _dump(self, value: Any) -> tuple[str, memoryview | None]:
        """The text, kept, and its bytes when they were written first (an int column's, by numpy)."""
        column = self.int_array(value)
        data = ints_text(column) if column is not None else None
        text = codecs.ascii_decode(data)[0] if data is not None else dumps_canonical(value)
        self._texts[id(value)] = (value, text)
        if data is not None:
            self._bytes[id(value)] = (value, data)
        return text, data

    def known(self, value: Any) -> str | None:
        """The kept text of this very object, or None."""
        got = self._texts.get(id(value))
        return got[1] if got is not None and got[0] is value else None

    def note_ints(self, value: list[int], column: np.ndarray) -> None:
        """Record that ``value`` is ``column.tolist()`` (an int64 column read as a list)."""
        assert column.dtype == np.int64 and len(column) == len(value)
        self._ints[id(value)] = (value, column)
        self._kinds[id(value)] = (value, frozenset({int}) if len(value) else frozenset())

    def int_array(self, value: Any) -> np.ndarray | None:
        """The int64 column this very list was read from (:meth:`note_ints`), or None."""
        got = self._ints.get(id(value))
        return got[1] if got is not None and got[0] is value else None

    def kinds(self, value: list[Any] | tuple[Any, ...]) -> frozenset[type]:
        """The exact types of the elements of ``value``, found once per list."""
        got = self._kinds.get(id(value))
        if got is not None and got[0] is value:
            return got[1]
        kinds = frozenset(map(type, value))
        self._kinds[id(value)] = (value, kinds)
        return kinds

    @contextmanager
    def active(self) -> Iterator[Dumped]:
        """Within: :func:`list_kinds` and :func:`int_array` answer from (and remember in) this object. For
        the span of one call, whose arguments nothing mutates."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def text_of(self, obj: Any, *, canonical: bool) -> str:
        """The canonical JSON text of ``obj`` (canonicalized first unless ``canonical``), each kept value
        it holds spliced in from its text instead of dumped again."""
        pieces = self._pieces(obj, canonical)
        if pieces is None:
            return dumps_canonical(obj if canonical else canonicalize(obj))
        return "".join(p if k % 2 == 0 else self._texts[id(p)][1] for k, p in enumerate(pieces))

    def data_of(self, obj: Any, *, canonical: bool) -> list[bytes | memoryview]:
        """:meth:`text_of` as UTF-8 bytes, in pieces to hash or write one after another: a kept int
        column's text goes in as the bytes numpy wrote, and the whole is never built as one str or one bytes
        (each such copy of 10^6 times is 17 MB more and ~4 ms)."""
        pieces = self._pieces(obj, canonical)
        if pieces is None:
            return [dumps_canonical(obj if canonical else canonicalize(obj)).encode("utf-8")]
        return [p.encode("utf-8") if k % 2 == 0 else self._data(p) for k, p in enumerate(pieces)]

    def _pieces(self, obj: Any, canonical: bool) -> list[Any] | None:
        """The canonical text of ``obj`` as pieces: at even positions the dumped rest (strs), at odd ones
        the kept values it holds; None when it holds none, or when a string of the object spells a
        placeholder (then the whole object is dumped plainly)."""
        values: list[Any] = []
        stub = self._stub(obj, values, 0) if self._texts else obj
        if not values:
            return None
        text = dumps_canonical(stub if canonical else canonicalize(stub))
        tokens = [json.dumps(_HOLDER.format(i), ensure_ascii=False) for i in range(len(values))]
        if any(text.count(t) != 1 for t in tokens):
            return None
        by_token = dict(zip(tokens, values, strict=True))
        pieces: list[Any] = re.split("(" + "|".join(map(re.escape, tokens)) + ")", text)
        return [by_token[p] if k % 2 else p for k, p in enumerate(pieces)]  # split keeps tokens at odd places

    def _data(self, value: Any) -> bytes | memoryview:
        """A kept value's text as bytes: numpy's own when it wrote them."""
        data = self._bytes.get(id(value))
        return data[1] if data is not None and data[0] is value else self._texts[id(value)][1].encode("utf-8")

    def _stub(self, obj: Any, values: list[Any], depth: int) -> Any:
        """``obj`` with each kept value inside its dicts replaced by a placeholder (dicts on the way copied,
        nothing else); the values replaced, in order, appended to ``values``."""
        if type(obj) is not dict or depth > _DEPTH:
            return obj
        out = {}
        for k, v in obj.items():
            if type(v) in (list, dict) and self.known(v) is not None:
                out[k] = _HOLDER.format(len(values))
                values.append(v)
            else:
                out[k] = self._stub(v, values, depth + 1)
        return out


def list_kinds(value: list[Any] | tuple[Any, ...]) -> frozenset[type]:
    """``frozenset(map(type, value))``: for a long list, remembered by the active :class:`Dumped`."""
    active = _ACTIVE.get()
    if active is None or len(value) < _REMEMBER_MIN:
        return frozenset(map(type, value))
    return active.kinds(value)


def int_array(value: Any) -> np.ndarray | None:
    """The int64 column the active :class:`Dumped` knows ``value`` was read from, or None."""
    active = _ACTIVE.get()
    return None if active is None else active.int_array(value)
