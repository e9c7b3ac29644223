"""engine/canonical.py's ``Dumped``: an object holding large values already dumped is dumped with their
texts spliced in, byte for byte the plain dump, whatever the object holds (a placeholder's own spelling
included)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from tgms.engine.canonical import _HOLDER, Dumped, canonicalize, dumps, dumps_canonical


def _kept(*values: Any) -> Dumped:
    d = Dumped()
    for v in values:
        assert d.dumps(v) == dumps_canonical(v)
    return d


BIG = list(range(50))
ROWS = [{"src": f"n{i}", "t": i, "w": None} for i in range(20)]


@pytest.mark.parametrize(
    "obj",
    [
        {"fn": "median", "input": BIG},
        {"op": "compute", "args_echo": {"fn": "median", "input": BIG}, "payload": {"rows": [1]}},
        # the same list twice; once inside a list (dumped plainly there)
        {"a": BIG, "b": BIG, "c": ROWS, "d": [BIG]},
        {"z": 1.5, "input": ROWS, "q": 'text with \u0000 and "quotes"'},
        {"nothing": "kept"},
    ],
)
@pytest.mark.parametrize("canonical", [True, False])
def test_the_splice_is_the_plain_dump(obj: dict[str, Any], canonical: bool) -> None:
    d = _kept(BIG, ROWS)
    text = d.text_of(obj, canonical=canonical)
    assert text == (dumps_canonical(obj) if canonical else dumps(obj))
    assert json.loads(text) == json.loads(dumps(obj))
    assert b"".join(d.data_of(obj, canonical=canonical)) == text.encode("utf-8")  # what a store hashes


def test_a_noted_int_column_goes_into_the_bytes_as_numpy_wrote_it() -> None:
    column = np.arange(-5, 3000, dtype=np.int64) * 7
    times = column.tolist()
    d = Dumped()
    d.note_ints(times, column)
    d.dumps(times)
    obj = {"args_echo": {"fn": "median", "input": times}, "rows": ["é", 1], "n": times}
    assert b"".join(d.data_of(obj, canonical=True)) == dumps_canonical(obj).encode("utf-8")
    assert d.text_of(obj, canonical=True) == dumps_canonical(obj)


def test_an_object_spelling_a_placeholder_is_dumped_plainly() -> None:
    """A string of the object that is a placeholder's very text cannot be told from the placeholder: the
    splice is not made (the text is still the plain dump)."""
    d = _kept(BIG)
    obj = {"a": BIG, "b": _HOLDER.format(0)}
    assert d.text_of(obj, canonical=True) == dumps_canonical(obj)
    assert json.loads(d.text_of(obj, canonical=True))["b"] == _HOLDER.format(0)


def test_only_the_very_object_is_spliced() -> None:
    """An equal list that is another object is dumped itself (its text may differ: True == 1)."""
    d = _kept([1, 2])
    obj = {"a": [True, 2], "b": list([1, 2])}
    assert d.text_of(obj, canonical=True) == '{"a":[true,2],"b":[1,2]}'


def test_canonicalizing_the_rest_still_refuses_what_is_not_json() -> None:
    d = _kept(BIG)
    with pytest.raises(Exception, match="not JSON"):
        d.text_of({"a": BIG, "b": {1, 2}}, canonical=False)
    expected = dumps_canonical(canonicalize({"a": BIG, "b": 2}))
    assert d.text_of({"a": BIG, "b": 2.0}, canonical=False) == expected
