"""The typed-answer rule (DESIGN §4, Scoring): whether a predicted typed answer counts as the gold one.

Scoring compares the typed final answer, never prose, so a system is judged by the value it commits to:

- ``count``, ``value``: numbers equal within 1e-9 after float canonicalization (``canon_float`` on both;
  ints compare exactly; ``4`` equals ``4.0``). A bool is not a number and a numeric string is not
  accepted as a number. A non-numeric ``value`` falls back to canonical-JSON equality.
- ``entity``: the same uid (a uid string, or an object with a ``uid`` key).
- ``entity_set``: set equality of uids (strings or objects with ``uid``; order and duplicates ignored).
- ``interval``: intersection-over-union ≥ 0.5 of half-open integer intervals (any shape
  :func:`engine.claims.evidence.as_interval` reads except a bare instant, as the mechanical reporter).
- ``boolean``, ``relation``, ``rows`` and any other kind: canonical-JSON equality.

A prediction never makes :func:`score` raise: an abstention (``None``) or a value without the kind's
shape scores False. A *gold* value without its kind's shape raises ``ValueError``: that is a bug in the
task suite, and scoring every system wrong on it silently would hide it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tgms.engine.api import (
    ANSWER_KINDS,
    TGMSError,
    as_interval,
    canon_float,
    canonical_json,
    is_number,
    same_number,
    uid_of,
)

#: the rule each answer kind is scored by (kinds outside ANSWER_KINDS use ``json``)
RULES: dict[str, str] = {
    kind: {
        "count": "number",
        "value": "number_or_json",
        "entity": "uid",
        "entity_set": "uid_set",
        "interval": "iou",
    }.get(kind, "json")
    for kind in ANSWER_KINDS
}
#: the least intersection-over-union at which an interval answer is correct (compared exactly in score)
IOU_THRESHOLD = 0.5


class _NoShape(Exception):
    """A value does not have the shape its kind's rule needs."""


def score(kind: str, gold: Any, predicted: Any) -> bool:
    """Whether ``predicted`` is a correct answer of ``kind`` for ``gold`` (abstention, ``None``: False).

    Raises ``ValueError`` when ``gold`` itself lacks the kind's shape (a suite bug, not a wrong answer).
    """
    if predicted is None:
        return False
    gold, predicted = _plain(gold), _plain(predicted)
    rule = RULES.get(kind, "json")
    if rule == "number_or_json" and not is_number(gold):
        rule = "json"
    try:
        g = _READ[rule](gold)
    except _NoShape as exc:
        raise ValueError(f"gold answer of kind {kind!r} is not {exc}: {gold!r}") from None
    try:
        p = _READ[rule](predicted)
    except _NoShape:
        return False
    if rule in ("number", "number_or_json"):
        return same_number(g, p)
    if rule == "iou":
        inter, union = _overlap(g, p)
        return 2 * inter >= union  # IoU >= 0.5, exact in integers (endpoints may be as large as OPEN_END)
    return bool(g == p)


def iou(a: Any, b: Any) -> float:
    """Intersection-over-union of two half-open integer intervals, given in any shape ``as_interval``
    reads (``[s, e]``, ``{vt_s, vt_e}``, ``{t_a, t_b}``, ...): |A∩B| / |A∪B|, the union measured as the
    length of the union (disjoint or touching → 0.0, identical → 1.0). ``ValueError`` if either is not
    an interval."""
    try:
        ia, ib = _interval(a), _interval(b)
    except _NoShape:
        raise ValueError(f"iou needs two non-empty integer intervals, got {a!r} and {b!r}") from None
    inter, union = _overlap(ia, ib)
    return inter / union


# --- readers: a value in the comparable form of its rule, or _NoShape -----------------------------------


def _number(x: Any) -> int | float:
    if not is_number(x):
        raise _NoShape("a number")
    if isinstance(x, int):
        return x
    try:
        return canon_float(x)
    except TGMSError:  # NaN, infinities
        raise _NoShape("a finite number") from None


def _uid(x: Any) -> str:
    uid = uid_of(x)
    if uid is None:
        raise _NoShape("a uid")
    return uid


def _uid_set(x: Any) -> frozenset[str]:
    if not isinstance(x, (list, tuple, set, frozenset)):
        raise _NoShape("a list of uids")
    return frozenset(_uid(v) for v in x)


def _interval(x: Any) -> tuple[int, int]:
    if isinstance(x, tuple):
        x = list(x)
    iv = None if isinstance(x, int) else as_interval(x)  # a bare instant is not an interval answer
    if iv is None:
        raise _NoShape("an interval")
    return iv


def _json(x: Any) -> str:
    try:
        return canonical_json(x)
    except (TGMSError, TypeError, ValueError):
        raise _NoShape("a JSON value") from None


_READ: dict[str, Callable[[Any], Any]] = {
    "number": _number,
    "number_or_json": _number,
    "uid": _uid,
    "uid_set": _uid_set,
    "iou": _interval,
    "json": _json,
}


# --- helpers -------------------------------------------------------------------------------------------


def _plain(x: Any) -> Any:
    """A numpy scalar as its Python value (anything else unchanged)."""
    if type(x).__module__ == "numpy" and getattr(x, "shape", None) == ():
        return x.item()
    return x


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """(|A∩B|, |A∪B|) of two non-empty half-open intervals, in exact integers."""
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter, (a[1] - a[0]) + (b[1] - b[0]) - inter
