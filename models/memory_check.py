"""The number check of a memory note: every number, date and identifier in it must be a computed fact.

A note is what a model wrote about a week's facts; it reaches later prompts, so a number the model made up
(a sum, a percentage, a misread count) would be repeated as if the engine had said it. The check reads the
note the way a careful reader would and refuses it when anything in it is not among the facts:

1. **Dates and times** — ISO dates (``2004-04-12``), timestamps (``2004-04-12T00:00:00Z``) and ISO weeks
   (``2004-W16``) must be one of the week's calendar strings or a string fact (the busiest day).
2. **Numbers** — digits with optional thousands separators and decimals: ``1234``, ``1,234``, ``12.5``,
   ``12.5%``; a sign is ignored. A number written with *d* decimals matches a fact value that rounds to it
   at *d* decimals (``12.35`` matches 12.3456; ``12`` matches 12 or 12.4). A percentage is the number
   before ``%``: the facts hold no shares, so a percentage passes only when that number is itself a fact.
   Number words are numbers too: ``two`` … ``twenty``, ``dozen``, ``hundred``, ``thousand``, ``million``,
   ``billion``; ``one`` is not read (it is a pronoun far more often than a count).
3. **Identifiers** — any other token holding a digit (``n42``, ``user_7``, ``3rd``) must be a uid or
   string among the facts: a note may only name the accounts the facts name. (A uid with no digit cannot
   be told from a word and is not checked; the data sets' uids all carry digits.)

4. **Characters** — control characters (other than newline and tab) and bidirectional marks and
   overrides (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) are refused: a note is plain text, and such
   characters only serve to make a prompt read differently from what it says.

The result is a list of problems, each ``{"kind", "text", "why"}``; empty means the note may be stored.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from tgms.models.memory_facts import WeekFacts, numbers_in, strings_in

_DATE = re.compile(
    r"\d{4}-W\d{2}(?:-\d)?"  # ISO week (and week date)
    r"|\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
_NUMBER = re.compile(r"(?<![\w.])[-+−]?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%?)(?![\w])")
_TOKEN_WITH_DIGIT = re.compile(r"[\w.-]*\d[\w.-]*")
_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "dozen": 12, "hundred": 100,
    "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000,
}  # fmt: skip
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)


def allowed_values(wf: WeekFacts) -> tuple[list[Decimal], set[str]]:
    """The numbers and strings a note about ``wf`` may contain: the facts' and the week's calendar ones."""
    numbers = [*numbers_in(list(wf.values().values())), *numbers_in(wf.week.calendar())]
    strings = {*strings_in(list(wf.values().values())), *wf.week.strings()}
    return [Decimal(str(n)) for n in numbers], strings


def _matches(written: Decimal, places: int, allowed: list[Decimal]) -> bool:
    quantum = Decimal(1).scaleb(-places)
    return any(a.quantize(quantum, rounding=ROUND_HALF_EVEN) == written for a in allowed)


def _blank(text: str, m: re.Match[str]) -> str:
    """``text`` with the match replaced by spaces (offsets kept, nothing left for a later pass)."""
    return text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]


def check_note(text: str, wf: WeekFacts) -> list[dict[str, Any]]:
    """The problems of note ``text`` against the facts ``wf`` (see the module docstring); [] = it agrees."""
    numbers, strings = allowed_values(wf)
    problems: list[dict[str, Any]] = [
        {
            "kind": "character",
            "text": f"U+{ord(ch):04X}",
            "why": "a control or bidirectional-override character",
        }
        for ch in sorted(set(_HIDDEN.findall(text)))
    ]
    rest = text
    for m in list(_DATE.finditer(text)):
        token = m.group(0)
        same = token in strings or token.replace(" ", "T") in strings
        if not same:
            problems.append({"kind": "date", "text": token, "why": "not the week's dates or a fact's"})
        rest = _blank(rest, m)
    for m in list(_TOKEN_WITH_DIGIT.finditer(rest)):
        token = m.group(0).strip(".-")
        if _NUMBER.fullmatch(token) or token in strings:
            if token in strings:
                rest = _blank(rest, m)
            continue
        if re.fullmatch(r"[\d.,]+", token):
            continue  # a number with odd punctuation ("1,23"): the number pass reads its parts
        problems.append({"kind": "identifier", "text": token, "why": "not a uid or value among the facts"})
        rest = _blank(rest, m)
    for m in _NUMBER.finditer(rest):
        whole, frac, percent = m.group(1), m.group(2) or "", m.group(3)
        try:
            written = Decimal(whole.replace(",", "") + frac)
        except InvalidOperation:  # pragma: no cover - the pattern admits only digits
            continue
        if not _matches(written, len(frac) - 1 if frac else 0, numbers):
            why = "a percentage that is not a fact" if percent else "not a computed value"
            problems.append({"kind": "number", "text": m.group(0).strip(), "why": why})
    for m in _WORD.finditer(rest):
        if not _matches(Decimal(_WORDS[m.group(1).lower()]), 0, numbers):
            problems.append({"kind": "number", "text": m.group(0), "why": "a number word that is not a fact"})
    return problems
