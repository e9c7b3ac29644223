"""The valid-time window a question names, read from the question's own text.

Memory notes are retrieved by the time range the *question* asks about, never by anything derived from an
answer (the suite's oracle plan, the gold): a system under evaluation sees only what a user would give it.
The window is the span of every valid time the question names:

- ISO timestamps (``2004-05-01T12:00:00Z``) are points ``[t, t + 1)``; ISO dates (``2004-05-01``) are
  whole UTC days; ISO weeks (``2004-W18``) whole weeks;
- bare microsecond numbers (``1083412800000000 µs``) count only when they fall inside the store's
  valid-time extent (given as ``extent``): outside it they are durations (``1 hour (3600000000 µs)``) or
  other quantities, not times;
- a time written right after the words "transaction time(s)" (within the same clause) is a transaction
  time, not a valid time, and is skipped (the belief-history questions name both).

The window is ``{t_a, t_b}`` from the earliest start to the latest end; ``None`` when the question names no
valid time (then no note is retrieved: a note about some arbitrary week would be noise, not memory).
"""

from __future__ import annotations

import datetime as dt
import re

from tgms.models.memory_facts import DAY, US_PER_S, WEEK, weeks_between

_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?Z?")
_DATE = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d:T])")
_ISO_WEEK = re.compile(r"(?<!\d)(\d{4})-W(\d{2})(?!\d)")
_MICROS = re.compile(r"(?<![\d.,])(\d{10,19})\s*µs")
#: "transaction time(s)" earlier in the same sentence (a sentence ends at . ; ? ! before a space)
_TT_CONTEXT = re.compile(r"transaction[- ]times?\b(?:(?![.;?!](?:\s|$)).)*$", re.IGNORECASE | re.DOTALL)


def _epoch_us(d: dt.datetime) -> int:
    return int((d - dt.datetime(1970, 1, 1)).total_seconds()) * US_PER_S + d.microsecond


def _is_transaction_time(question: str, start: int) -> bool:
    return _TT_CONTEXT.search(question[:start]) is not None


def question_window(question: str, extent: tuple[int, int] | None = None) -> dict[str, int] | None:
    """``{t_a, t_b}`` spanning the valid times ``question`` names, or None (see the module docstring).

    ``extent`` is the store's valid-time ``(vt_min, vt_max)``; without it bare µs numbers are ignored."""
    spans: list[tuple[int, int]] = []
    taken: list[tuple[int, int]] = []  # character ranges already read (a timestamp holds a date)

    def keep(m: re.Match[str], span: tuple[int, int]) -> None:
        taken.append(m.span())
        if not _is_transaction_time(question, m.start()):
            spans.append(span)

    for m in _TIMESTAMP.finditer(question):
        y, mo, d, h, mi, s, frac = m.groups()
        try:
            when = dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s or 0))
        except ValueError:
            continue
        t = _epoch_us(when) + int((frac or "0").ljust(6, "0"))
        keep(m, (t, t + 1))
    for m in _DATE.finditer(question):
        if any(a <= m.start() < b for a, b in taken):
            continue
        try:
            day = dt.datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            continue
        t = _epoch_us(day)
        keep(m, (t, t + DAY))
    for m in _ISO_WEEK.finditer(question):
        try:
            monday = dt.datetime.combine(
                dt.date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1), dt.time()
            )
        except ValueError:
            continue
        t = _epoch_us(monday)
        keep(m, (t, t + WEEK))
    if extent is not None:
        lo, hi = extent
        for m in _MICROS.finditer(question):
            t = int(m.group(1))
            if lo <= t <= hi + WEEK and not _is_transaction_time(question, m.start()):
                spans.append((t, t + 1))  # a window's exclusive end may lie just past the data
    if not spans:
        return None
    return {"t_a": min(a for a, _ in spans), "t_b": max(b for _, b in spans)}


def weeks_of(window: dict[str, int] | None) -> list[str]:
    """The ISO week labels a window touches (for records: what the retrieval looked at)."""
    if window is None:
        return []
    return [w.label for w in weeks_between(window["t_a"], window["t_b"])]
