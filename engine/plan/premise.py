"""The period a list of event predicates selects, so that a false premise is one outcome however it is
written (issue 27): "messages in May 2030" as a window, as ``t`` bounds or as ``month = 2030-05`` is refused
by the verifier's ``temporal_extent`` check alike, instead of the window being refused and the predicate
answering 0.

Read: the AND-ed predicates ``{field, op, value}`` on the event time (``t``, ``vt_s``: eq, ge, gt, le,
lt with an integer) and on the calendar keys ``year`` (the same ops with an integer), ``month``
(``YYYY-MM``) and ``day`` (``YYYY-MM-DD``, eq). Other predicates (other fields, ``in`` lists, field
comparisons) leave the period as it is; a value that is not of the key's form is left to the operator.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, TypeGuard

from tgms.engine.timeutil import OPEN_END

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_TIME_FIELDS = ("t", "vt_s")


def _us(d: dt.datetime) -> int:
    return (d - _EPOCH) // dt.timedelta(microseconds=1)


def _int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _year(y: int) -> tuple[int, int] | None:
    if not 1970 <= y <= 9998:
        return None
    return _us(dt.datetime(y, 1, 1, tzinfo=dt.UTC)), _us(dt.datetime(y + 1, 1, 1, tzinfo=dt.UTC))


def _calendar(field: str, value: Any) -> tuple[int, int] | None:
    """[start, end) of a ``month`` or ``day`` value, None when it is not of the key's form."""
    try:
        if field == "month" and isinstance(value, str) and len(value) == 7:
            start = dt.datetime.strptime(value, "%Y-%m").replace(tzinfo=dt.UTC)
            nxt = (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
            return (_us(start), _us(nxt)) if start >= _EPOCH else None
        if field == "day" and isinstance(value, str) and len(value) == 10:
            start = dt.datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=dt.UTC)
            return (_us(start), _us(start + dt.timedelta(days=1))) if start >= _EPOCH else None
    except ValueError:
        return None
    return None


def _bounds(op: str, lo: int, hi: int) -> tuple[int, int] | None:
    """The times a predicate ``key op value`` admits, for a value whose own period is [lo, hi)."""
    return {
        "eq": (lo, hi),
        "ge": (lo, OPEN_END),
        "gt": (hi, OPEN_END),
        "le": (0, hi),
        "lt": (0, lo),
    }.get(op)


def selected_period(predicates: Any) -> tuple[int, int] | None:
    """[a, b) of event times the predicates can admit (a ≥ b: none), or None when none of them bounds
    the time."""
    if not isinstance(predicates, list):
        return None
    a, b, bounded = 0, OPEN_END, False
    for p in predicates:
        if not isinstance(p, dict) or "other" in p:
            continue
        field, op, value = p.get("field"), p.get("op"), p.get("value")
        own: tuple[int, int] | None = None
        if field in _TIME_FIELDS and _int(value):
            own = (value, value + 1)
        elif field == "year" and _int(value):
            own = _year(value)
        elif field in ("month", "day") and op == "eq":
            own = _calendar(field, value)
        got = _bounds(op, *own) if own is not None and isinstance(op, str) else None
        if got is not None:
            a, b, bounded = max(a, got[0]), min(b, got[1]), True
    return (a, b) if bounded else None
