"""Reading evidence out of result payloads: the uids and numbers a result contains, intervals, and the one
notion of "the same value" the claim verifier, the gate and the reporter share.

Entity evidence is the cited **results** — the payload, never ``args_echo``: an argument echoed back proves
only that the planner asked about a uid, not that the data returned it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from tgms.engine.canonical import dumps
from tgms.engine.errors import TGMSError

#: payload keys whose strings are never uids (labels, types, property data, paging tokens, ...)
NON_ENTITY_KEYS = frozenset(
    {
        "cursor",
        "label",
        "rel_type",
        "disc",
        "source",
        "provenance_ref",
        "match",
        "kind",
        "key",
        "change",
        "props",
        "name",
        "before",
        "after",
        "metric",
        "motif",
    }
)
TOLERANCE = 1e-9


def strings(payload: Any, skip: frozenset[str] = NON_ENTITY_KEYS) -> Iterator[str]:
    """Every string leaf of a payload outside the non-entity keys (candidate uids)."""
    if isinstance(payload, str):
        yield payload
    elif isinstance(payload, dict):
        for k, v in payload.items():
            if k not in skip:
                yield from strings(v, skip)
    elif isinstance(payload, list):
        for v in payload:
            yield from strings(v, skip)


def uids_in(payload: Any, known: dict[str, int] | frozenset[str] | None = None) -> set[str]:
    """The uids a payload names (restricted to ``known`` uids when given)."""
    found = set(strings(payload))
    return found if known is None else {u for u in found if u in known}


def uid_of(x: Any) -> str | None:
    """The uid a value names: a uid string, or an object's ``uid`` (entity answers and claims)."""
    if isinstance(x, str):
        return x
    if isinstance(x, dict) and isinstance(x.get("uid"), str):
        return x["uid"]
    return None


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def values_in(payload: Any) -> Iterator[Any]:
    """Every sub-value of a payload (itself, its fields' values, its elements), depth first; the paging
    cursor is skipped."""
    yield payload
    if isinstance(payload, dict):
        for k, v in payload.items():
            if k != "cursor":
                yield from values_in(v)
    elif isinstance(payload, list):
        for v in payload:
            yield from values_in(v)


def numbers_in(payload: Any) -> Iterator[int | float]:
    """Every numeric leaf of a payload, depth first (booleans are not numbers; the paging cursor is
    skipped). A number is a leaf, so these are the numbers among :func:`values_in`, in its order."""
    return (v for v in values_in(payload) if is_number(v))


def as_interval(x: Any) -> tuple[int, int] | None:
    """``[s, e]``, ``{vt_s, vt_e}``, ``{t_a, t_b}`` or ``{s, e}`` as a half-open ``(s, e)``; an int t as
    the instant ``(t, t + 1)``; else None."""

    def ok(s: Any, e: Any) -> bool:
        return all(isinstance(v, int) and not isinstance(v, bool) for v in (s, e)) and s < e

    if isinstance(x, int) and not isinstance(x, bool):
        return (x, x + 1)
    if isinstance(x, list) and len(x) == 2 and ok(*x):
        return (x[0], x[1])
    if isinstance(x, dict):
        for s, e in (("vt_s", "vt_e"), ("t_a", "t_b"), ("s", "e"), ("start", "end")):
            if s in x and e in x and ok(x[s], x[e]):
                return (x[s], x[e])
    return None


def intervals_in(payload: Any) -> set[tuple[int, int]]:
    """Every interval-shaped object of a payload (not bare ints)."""
    return {iv for v in values_in(payload) if not isinstance(v, int) and (iv := as_interval(v)) is not None}


def same_number(a: Any, b: Any) -> bool:
    if not (is_number(a) and is_number(b)):
        return False
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= TOLERANCE


_INTERVAL_KEYS = ({"vt_s", "vt_e"}, {"t_a", "t_b"}, {"s", "e"}, {"start", "end"})


def is_bare_interval(x: Any) -> bool:
    """``[s, e]`` or an object holding only an interval's two keys (not a row that also has other fields)."""
    if isinstance(x, list):
        return as_interval(x) is not None
    return isinstance(x, dict) and set(x) in _INTERVAL_KEYS and as_interval(x) is not None


def same_value(claimed: Any, actual: Any) -> bool:
    """Numbers within 1e-9; an interval against an interval-shaped value by their endpoints (``[s, e]``
    states the interval of a row; two rows are compared whole); anything else by canonical JSON (so key
    order and 4.0 vs 4 do not matter)."""
    if is_number(claimed) or is_number(actual):
        return same_number(claimed, actual)
    if is_bare_interval(claimed) or is_bare_interval(actual):
        ia, ib = as_interval(claimed), as_interval(actual)
        if ia is not None and ib is not None:
            return ia == ib
    try:
        return dumps(claimed) == dumps(actual)
    except (TGMSError, TypeError, ValueError):  # a value that is not JSON equals nothing
        return False


def contains_value(payload: Any, claimed: Any) -> bool:
    """Whether some sub-value of ``payload`` is :func:`same_value` as ``claimed``."""
    if is_number(claimed):
        return any(same_number(claimed, n) for n in numbers_in(payload))
    return any(same_value(claimed, v) for v in values_in(payload))
