"""Prompt hygiene shared by every LLM role: fencing untrusted data, and reading JSON out of a reply.

Stored graph content, questions and traces are *data*, never instructions (DESIGN §3.5). Every such
string enters a prompt through :func:`fence` (or :func:`fence_json`), which wraps it in
``<data name="...">...</data>`` after four steps (docs/security.md):

1. **sanitize**: characters that hide or reorder text are made visible as ``\\uXXXX`` text: C0/C1 controls
   (NUL, ESC, CR, NEL, ... — a fenced block keeps ``\\n`` and ``\\t``), Unicode format characters (bidi
   embeddings, overrides and isolates U+202A-202E / U+2066-2069, zero-width characters, BOM, tag
   characters), line/paragraph separators and lone surrogates (which are not even UTF-8);
2. **defang**: in anything a lenient reader could take for one of our fence tags — ``</data>``,
   ``</DATA >``, ``< / data>``, ``<data name=...>``, and their HTML-entity, numeric and fullwidth
   spellings (``&lt;/data&gt;``, ``&#60;/data``, ``＜/data＞``) — the ``d`` of ``data`` is written as its
   JSON escape ``\\u0064``, so the data holds no fence tag even for a reader that decodes entities once,
   and a fenced JSON value still decodes to the stored string; runs of three backticks (a markdown code
   fence) become entities;
3. **escape**: ``&``, ``<`` and ``>`` as entities, so no tag of any kind can appear inside;
4. **limit**: the escaped text is cut to ``limit`` characters (never inside an entity) with a visible
   marker saying how many characters of the data were cut.

A stored string embedded in a line that a builder writes itself (an edge list, an event sentence, a
dataset card) goes through :func:`clean` first: sanitized with its newlines too (one record stays one
line) and cut to :data:`STRING_LIMIT`; the line then goes into a fence as a whole. :func:`fence_json`
cleans every string (keys included) of a JSON value the same way before fencing it.

Small models wrap JSON in think blocks, code fences or chatter; :func:`extract_json` finds the first
complete JSON object (or array) in a reply and raises :class:`~models.errors.ModelOutputError` (a model
failure, scored) when there is none.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from typing import Any

from tgms.models.errors import ModelOutputError

#: default cap on one fenced block, in characters of escaped data (what the model reads)
DATA_LIMIT = 4000
#: default cap on one stored string inside a line or a JSON value (uids, labels, property values, ...)
STRING_LIMIT = 256
_TRUNCATED = " …[truncated {n} chars]"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,40}$")
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)

#: Unicode categories that hide or reorder text: controls, format characters (bidi, zero-width, tags),
#: surrogates (lone ones only reach Python strings: they are not UTF-8), line/paragraph separators
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: every spelling of "<" a lenient reader might decode: the character, fullwidth and small forms, HTML
#: entities (named, decimal, hex; the ";" optional as browsers allow), JSON/Python and URL escapes
_LESS_THAN = r"(?:<|\uff1c|\ufe64|&lt;?|&#0*60;?|&#x0*3c;?|\\u0*3c|\\x3c|%3c)"
#: a fence tag's start in any case and spacing: "<data", "</data", "< / DATA", "&lt;/data", ...
_FENCE_LIKE = re.compile("(" + _LESS_THAN + r"\s*/?\s*)(d)(?=ata\b)", re.IGNORECASE)
#: the "d" of a fence-like "data" in its JSON escape: no longer a tag after decoding entities, the same
#: text again after decoding JSON (a fenced JSON value still parses to the stored string)
_visible_d = {"d": "\\u0064", "D": "\\u0044"}
_BACKTICKS = re.compile(r"`{3,}")


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


@cache
def _hidden(keep_newlines: bool) -> re.Pattern[str]:
    """One character class of every code point in :data:`_HIDDEN_CATEGORIES` (built once, ~0.1 s), so
    sanitizing is one regex pass instead of a Python loop over the text."""
    codes = [
        c
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in _HIDDEN_CATEGORIES and not (keep_newlines and chr(c) in "\n\t")
    ]
    ranges, start = [], codes[0]
    for prev, cur in zip(codes, [*codes[1:], -1], strict=True):
        if cur != prev + 1:
            ranges.append(f"\\U{start:08x}" + (f"-\\U{prev:08x}" if prev != start else ""))
            start = cur
    return re.compile("[" + "".join(ranges) + "]")


def sanitize(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every character that hides or reorders text replaced by its visible ``\\uXXXX`` form.

    ``keep_newlines`` keeps ``\\n`` and ``\\t`` (a block of several lines); without it they are made
    visible too (one stored value inside a line the builder writes).
    """
    if text.isascii() and text.isprintable():  # the common case: nothing to look for
        return text
    return _hidden(keep_newlines).sub(lambda m: _visible(m.group(0)), text)


def defang(text: str) -> str:
    """Break anything that reads as a fence tag (even after decoding entities) and markdown code fences."""
    text = _FENCE_LIKE.sub(lambda m: m.group(1) + _visible_d[m.group(2)], text)
    return _BACKTICKS.sub(lambda m: "&#96;" * len(m.group(0)), text)


def escape(text: str) -> str:
    """Fence-like tags defanged, then ``&``, ``<``, ``>`` as entities: fenced data can neither close its
    fence nor open a tag, not even for a reader that decodes the entities once."""
    text = defang(text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _marker(cut: int) -> str:
    return _TRUNCATED.format(n=cut) if cut > 0 else ""


def clean(text: Any, limit: int = STRING_LIMIT) -> str:
    """One stored string for a line a builder writes: sanitized (newlines made visible too, so a record
    stays one line) and cut to ``limit`` characters with a marker. Not escaped: the line is fenced."""
    raw = str(text)
    out = sanitize(raw[:limit], keep_newlines=False)
    if len(out) <= limit and len(raw) <= limit:
        return out
    kept, size = 0, 0  # whole characters only: a visible \uXXXX form is never split
    for ch in raw[:limit]:
        n = len(sanitize(ch, keep_newlines=False))
        if size + n > limit:
            break
        kept, size = kept + 1, size + n
    return sanitize(raw[:kept], keep_newlines=False) + _marker(len(raw) - kept)


def escaped_data(text: str, limit: int = DATA_LIMIT) -> str:
    """What a fence holds: ``text`` sanitized, defanged, escaped and cut to at most ``limit`` characters
    (never inside an entity or a visible form), with a marker saying how many characters were cut."""
    if limit < 1:
        raise ValueError("a fence limit must be at least 1")

    def shown(k: int) -> str:
        return escape(sanitize(text[:k]))

    # every input character gives at least one output character, so `limit` input characters are enough
    out = shown(limit)
    if len(out) <= limit:
        return out + _marker(len(text) - limit)
    # the longest input prefix whose safe form fits (its length never shrinks as the prefix grows)
    lo, hi = 0, min(limit, len(text))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(shown(mid)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return shown(lo) + _marker(len(text) - lo)


def fence(text: str, name: str = "data", limit: int = DATA_LIMIT) -> str:
    """``text`` made safe by :func:`escaped_data` (at most ``limit`` characters plus the marker), fenced."""
    if not _NAME.match(name):
        raise ValueError(f"fence name {name!r} must be a short identifier")
    return f'<data name="{name}">\n{escaped_data(str(text), limit)}\n</data>'


def clean_value(value: Any, string_limit: int = STRING_LIMIT) -> Any:
    """A JSON value with every string (dict keys too) passed through :func:`clean`."""
    if isinstance(value, str):
        return clean(value, string_limit)
    if isinstance(value, dict):
        return {clean(str(k), string_limit): clean_value(v, string_limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_value(v, string_limit) for v in value]
    return value


def fence_json(
    value: Any, name: str = "data", limit: int = DATA_LIMIT, string_limit: int = STRING_LIMIT
) -> str:
    """A JSON value (compact, keys sorted, each string cleaned and cut to ``string_limit``) fenced."""
    text = json.dumps(
        clean_value(value, string_limit), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return fence(text, name, limit)


def strip_wrappers(reply: str) -> str:
    """The reply without think blocks (closed or left open at the end)."""
    return _THINK.sub("", reply).strip()


def extract_json(reply: str) -> Any:
    """The first JSON object or array in ``reply`` (inside a code fence first, then anywhere).

    Raises :class:`ModelOutputError` with the reply's head when there is none.
    """
    body = strip_wrappers(reply)
    candidates = [m.group(1) for m in _FENCE.finditer(body)] + [body]
    decoder = json.JSONDecoder()
    for text in candidates:
        for start, ch in enumerate(text):
            if ch not in "{[":
                continue
            try:
                value, _ = decoder.raw_decode(text, start)
            except ValueError:
                continue
            if isinstance(value, (dict, list)):
                return value
    raise ModelOutputError("the reply holds no JSON object", reply_head=reply[:300])
