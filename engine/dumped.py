"""Large values dumped to canonical JSON once, then spliced into every larger object that holds them.

A plan step that reads a whole result (compute over 10^6 event times) holds one large list in several
objects the executor digests: the read itself (its ``{items, digest}``), the step's resolved arguments,
the call's ``args_echo`` and its envelope. Dumping the list again for each costs a full pass each time
(~130 ms for 10^6 times on the 2-core VM, far more for rows). :class:`Dumped` keeps the canonical text of
each large value it dumped, by the value's identity (holding the value, so the identity stays its own),
and :meth:`Dumped.text_of` dumps an object holding such values with their texts spliced in.

The result is byte for byte the plain dump (tests/engine/test_dumped.py): the known values are replaced
by unique placeholder strings, the rest is dumped as usual (canonicalized first when asked), and each
placeholder's JSON string is replaced by its value's text. Should the rest hold a placeholder's own
spelling (a string a caller chose), the splice is not made and the whole object is dumped plainly.
Placeholders stand only for dict values (the objects that hold a step's large lists are dicts: the
arguments, the echo, the envelope), so the walk never enters a list.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tgms.engine.canonical import canonicalize, dumps_canonical

#: how deep in nested dicts a known value is looked for (envelope -> args_echo -> input is 2)
_DEPTH = 4
#: a placeholder: NUL never appears raw in canonical JSON (it is written \u0000), so only a string that
#: spells this very text can clash, and that is detected
_HOLDER = "\x00tgms-dumped-{}\x00"


class Dumped:
    """The canonical texts of large canonical values, by identity, for one step's objects."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Any, str]] = {}

    def dumps(self, value: Any) -> str:
        """The canonical JSON text of ``value`` (already canonical), kept for later splices."""
        text = dumps_canonical(value)
        self._texts[id(value)] = (value, text)
        return text

    def known(self, value: Any) -> str | None:
        """The kept text of this very object, or None."""
        got = self._texts.get(id(value))
        return got[1] if got is not None and got[0] is value else None

    def text_of(self, obj: Any, *, canonical: bool) -> str:
        """The canonical JSON text of ``obj`` (canonicalized first unless ``canonical``), each kept value
        it holds spliced in from its text instead of dumped again."""
        parts: list[str] = []
        stub = self._stub(obj, parts, 0) if self._texts else obj
        if not parts:
            return dumps_canonical(obj if canonical else canonicalize(obj))
        text = dumps_canonical(stub if canonical else canonicalize(stub))
        tokens = [json.dumps(_HOLDER.format(i), ensure_ascii=False) for i in range(len(parts))]
        if any(text.count(t) != 1 for t in tokens):  # a string of the object spells a placeholder
            return dumps_canonical(obj if canonical else canonicalize(obj))
        by_token = dict(zip(tokens, parts, strict=True))
        return re.sub("|".join(map(re.escape, tokens)), lambda m: by_token[m.group(0)], text)

    def _stub(self, obj: Any, parts: list[str], depth: int) -> Any:
        """``obj`` with each kept value inside its dicts replaced by a placeholder (dicts on the way copied,
        nothing else)."""
        if type(obj) is not dict or depth > _DEPTH:
            return obj
        out = {}
        for k, v in obj.items():
            text = self.known(v) if type(v) in (list, dict) else None
            if text is not None:
                out[k] = _HOLDER.format(len(parts))
                parts.append(text)
            else:
                out[k] = self._stub(v, parts, depth + 1)
        return out
