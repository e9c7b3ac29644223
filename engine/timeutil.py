"""Time in TGMS: int64 epoch microseconds, UTC; intervals are half-open ``[s, e)``."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from tgms.engine.errors import InvalidArgError

OPEN_END: int = 2**62
"""The open upper bound of valid and transaction time."""

US_PER_SECOND = 1_000_000
US_PER_DAY = 86_400 * US_PER_SECOND


def check_time(value: Any, name: str, *, allow_open_end: bool = False) -> int:
    """Validate one timestamp: an int in ``[0, 2**62)`` (``2**62`` itself only as an open end)."""
    # A float is refused even when integral (``1.0``, ``1e3``), exactly like ``1.5``: JSON input that
    # writes a time as a float is malformed, and the operators' strict args refuse it the same way.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgError(f"{name} must be an integer number of microseconds", field=name, value=value)
    hi = OPEN_END if allow_open_end else OPEN_END - 1
    if not 0 <= value <= hi:
        raise InvalidArgError(
            f"{name} must lie in [0, 2**62{']' if allow_open_end else ')'}", field=name, value=value
        )
    return value


def check_interval(vt_s: Any, vt_e: Any, prefix: str = "vt") -> tuple[int, int]:
    s = check_time(vt_s, f"{prefix}_s")
    e = check_time(vt_e, f"{prefix}_e", allow_open_end=True)
    if s >= e:
        raise InvalidArgError(
            f"{prefix}_s must be < {prefix}_e (intervals are half-open [s, e))",
            field=f"{prefix}_s",
            vt_s=s,
            vt_e=e,
        )
    return s, e


def us_to_iso(us: int) -> str:
    """Readable UTC form of a microsecond timestamp (``OPEN_END`` prints as ``open``)."""
    if us >= OPEN_END:
        return "open"
    dt = _dt.datetime.fromtimestamp(us // US_PER_SECOND, tz=_dt.UTC) + _dt.timedelta(
        microseconds=us % US_PER_SECOND
    )
    return dt.isoformat().replace("+00:00", "Z")
