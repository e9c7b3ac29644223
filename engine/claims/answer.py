"""The reporter's answer object (DESIGN §3.5), parsed into immutable typed claims.

::

    {"text": "n9 reached 343 nodes in the first week.",
     "answer": {"kind": "count", "value": 343},                # the typed final answer (scored)
     "claims": [{"id": "c1", "type": "count", "value": 343, "evidence": ["s1"], "from": "s1.rows_total"}]}

Claim types and their payload keys:

- ``count``: ``value`` (an int); ``value``: ``value`` (any JSON value: a number, string, interval, list);
- ``entity``: ``uids`` (non-empty list of uids the answer names);
- ``ordering``: ``a``, ``b`` (intervals, instants, or ref strings such as ``"s1.rows[0]"``) and
  ``relation`` (one of the 13 Allen relations of a to b);
- ``temporal_pattern``: ``assertion`` ``{op, args, field, cmp?, value}`` — re-executing ``op(args)`` gives a
  payload whose ``field`` (a dotted path) compares with ``value`` by ``cmp`` (default ``==``).

Every claim names its ``evidence`` (step ids of the trace) and may name ``from``, the trace field the value
was read from (a ref string). A malformed answer raises ``E_SCHEMA`` listing every problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tgms.engine.errors import SchemaError
from tgms.engine.operators.compute_fns import ALLEN
from tgms.engine.plan.model import ANSWER_KINDS

CLAIM_TYPES = ("count", "value", "entity", "ordering", "temporal_pattern")
CLAIM_KEYS: dict[str, tuple[str, ...]] = {
    "count": ("value",),
    "value": ("value",),
    "entity": ("uids",),
    "ordering": ("a", "b", "relation"),
    "temporal_pattern": ("assertion",),
}
COMMON_KEYS = ("id", "type", "evidence", "from")
CMPS = ("==", "!=", "<", "<=", ">", ">=", "contains")


@dataclass(frozen=True)
class Claim:
    id: str
    type: str
    evidence: tuple[str, ...]
    source: str | None = None  # the JSON key is "from"
    value: Any = None
    uids: tuple[str, ...] = ()
    a: Any = None
    b: Any = None
    relation: str | None = None
    assertion: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "type": self.type, "evidence": list(self.evidence)}
        if self.source is not None:
            d["from"] = self.source
        for key in CLAIM_KEYS[self.type]:
            v = getattr(self, key)
            d[key] = list(v) if isinstance(v, tuple) else v
        return d


@dataclass(frozen=True)
class Answer:
    text: str
    claims: tuple[Claim, ...]
    kind: str | None = None  # the typed final answer, when given
    value: Any = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def has_typed(self) -> bool:
        return self.kind is not None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"text": self.text, "claims": [c.to_dict() for c in self.claims]}
        if self.kind is not None:
            d["answer"] = {"kind": self.kind, "value": self.value}
        return d


def _claim(i: int, raw: Any, problems: list[str]) -> Claim | None:
    where = f"claims[{i}]"
    if not isinstance(raw, dict):
        problems.append(f"{where} must be an object")
        return None
    typ = raw.get("type")
    if typ not in CLAIM_TYPES:
        problems.append(f"{where}.type must be one of {list(CLAIM_TYPES)}")
        return None
    before = len(problems)
    extra = set(raw) - set(COMMON_KEYS) - set(CLAIM_KEYS[typ])
    if extra:
        problems.append(f"{where}: keys {sorted(extra)} do not belong to a {typ} claim")
    cid = raw.get("id", f"c{i + 1}")
    if not isinstance(cid, str) or not cid:
        problems.append(f"{where}.id must be a non-empty string")
    ev = raw.get("evidence", [])
    if not isinstance(ev, list) or not all(isinstance(e, str) for e in ev):
        problems.append(f"{where}.evidence must be a list of step ids")
    src = raw.get("from")
    if isinstance(src, dict) and set(src) == {"$ref"}:
        src = src["$ref"]
    if src is not None and not isinstance(src, str):
        problems.append(f"{where}.from must be a ref string such as 's1.rows_total'")
    for key in CLAIM_KEYS[typ]:
        if key not in raw:
            problems.append(f"{where}: a {typ} claim needs {key!r}")
    if (
        typ == "count"
        and "value" in raw
        and (not isinstance(raw["value"], int) or isinstance(raw["value"], bool))
    ):
        problems.append(f"{where}.value of a count claim must be an integer")
    uids = raw.get("uids", [])
    if typ == "entity" and (
        not isinstance(uids, list) or not uids or not all(isinstance(u, str) for u in uids)
    ):
        problems.append(f"{where}.uids must be a non-empty list of uid strings")
    if typ == "ordering" and raw.get("relation") not in ALLEN:
        problems.append(f"{where}.relation must be one of the Allen relations {list(ALLEN)}")
    if typ == "temporal_pattern":
        a = raw.get("assertion")
        if (
            not isinstance(a, dict)
            or not isinstance(a.get("op"), str)
            or not isinstance(a.get("args"), dict)
            or not isinstance(a.get("field"), str)
            or "value" not in a
            or a.get("cmp", "==") not in CMPS
        ):
            problems.append(
                f"{where}.assertion must be {{op, args, field, cmp?, value}} with cmp in {list(CMPS)}"
            )
    if len(problems) > before:
        return None
    return Claim(
        cid,
        typ,
        tuple(ev),
        src,
        value=raw.get("value"),
        uids=tuple(uids) if typ == "entity" else (),
        a=raw.get("a"),
        b=raw.get("b"),
        relation=raw.get("relation"),
        assertion=raw.get("assertion"),
    )


def parse_answer(raw: Any) -> Answer:
    """An :class:`Answer`, or ``E_SCHEMA`` with ``details.problems`` naming every malformed part."""
    if not isinstance(raw, dict):
        raise SchemaError(
            "an answer must be a JSON object {text, answer?, claims}", problems=["not an object"]
        )
    problems: list[str] = []
    extra = set(raw) - {"text", "answer", "claims"}
    if extra:
        problems.append(f"unknown answer keys {sorted(extra)}")
    text = raw.get("text", "")
    if not isinstance(text, str):
        problems.append("text must be a string")
    kind = value = None
    typed = raw.get("answer")
    if typed is not None:
        if not isinstance(typed, dict) or typed.get("kind") not in ANSWER_KINDS or "value" not in typed:
            problems.append(f"answer must be {{kind, value}} with kind in {list(ANSWER_KINDS)}")
        else:
            kind, value = typed["kind"], typed["value"]
    claims_raw = raw.get("claims", [])
    if not isinstance(claims_raw, list):
        problems.append("claims must be a list")
        claims_raw = []
    parsed = [_claim(i, c, problems) for i, c in enumerate(claims_raw)]
    claims = [c for c in parsed if c is not None]
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        problems.append(f"claim ids must be unique (got {ids})")
    if problems:
        raise SchemaError(f"malformed answer: {problems[0]}", problems=problems)
    return Answer(text if isinstance(text, str) else "", tuple(claims), kind, value, dict(raw))
