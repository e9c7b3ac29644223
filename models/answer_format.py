"""The typed answer format every system emits: ``{text, answer: {kind, value}, claims}`` (DESIGN §3.5, §4).

All four systems are scored on the ``answer`` they emit, so they are all asked for it the same way:
:func:`answer_schema` is the JSON schema sent as the structured-output format (arrays capped with
``maxItems``: a tiny model otherwise loops inside an array until ``max_tokens``), :func:`answer_instructions`
is the same contract in words, and :func:`read_answer` turns a reply into a checked answer object or says
what is wrong with it (for the one retry) — through the engine's own :func:`engine.api.parse_answer` and
:func:`engine.api.typed_value`, so a system cannot emit what the claim verifier could not read.
"""

from __future__ import annotations

import re
from typing import Any

from tgms.engine.api import ALLEN_RELATIONS, ANSWER_KINDS, TGMSError, parse_answer, typed_value
from tgms.models.errors import ModelOutputError
from tgms.models.prompting import extract_json

MAX_SET = 50  # entity_set / rows caps in the schema
MAX_CLAIMS = 4

_UID = {"type": "string", "maxLength": 64}
VALUE_SCHEMAS: dict[str, dict[str, Any]] = {
    "count": {"type": "integer"},
    "value": {"anyOf": [{"type": "number"}, {"type": "string", "maxLength": 200}]},
    "boolean": {"type": "boolean"},
    "entity": _UID,
    "entity_set": {"type": "array", "items": _UID, "maxItems": MAX_SET},
    "interval": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
    "relation": {"type": "string", "enum": list(ALLEN_RELATIONS)},
    "rows": {"type": "array", "items": {"type": "object"}, "maxItems": MAX_SET},
}
VALUE_WORDS: dict[str, str] = {
    "count": "a non-negative integer",
    "value": "a number (or a short string)",
    "boolean": "true or false",
    "entity": 'one node uid such as "n42"',
    "entity_set": 'a list of node uids such as ["n1", "n42"] ([] if there are none)',
    "interval": "a half-open interval [start, end) as two integers in epoch microseconds",
    "relation": f"one Allen relation name: {', '.join(ALLEN_RELATIONS)}",
    "rows": "a list of JSON objects",
}
assert set(VALUE_SCHEMAS) == set(ANSWER_KINDS) == set(VALUE_WORDS)

_CLAIM_COMMON: dict[str, Any] = {
    "id": {"type": "string", "maxLength": 8},
    "evidence": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 4},
    "from": {"type": "string", "maxLength": 120},
}
#: one branch per claim type, each requiring the key that carries the claim's value: with one loose object
#: (value optional) Qwen2.5-Coder-1.5B wrote count claims without a value on every trace of a 30-task run
#: (issue 25), and a claim with no value asserts nothing the verifier can check
_CLAIM_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                **_CLAIM_COMMON,
                "type": {"type": "string", "enum": ["count", "value"]},
                "value": {"anyOf": [{"type": "number"}, {"type": "string", "maxLength": 200}]},
            },
            "required": ["id", "type", "value", "evidence", "from"],
        },
        {
            "type": "object",
            "properties": {
                **_CLAIM_COMMON,
                "type": {"type": "string", "enum": ["entity"]},
                "uids": {"type": "array", "items": _UID, "minItems": 1, "maxItems": MAX_SET},
            },
            "required": ["id", "type", "uids", "evidence", "from"],
        },
    ]
}
#: the key that carries each simple claim type's value
_CLAIM_VALUE_KEY = {"count": "value", "value": "value", "entity": "uids"}


def answer_schema(kind: str, with_claims: bool = True) -> dict[str, Any]:
    """The JSON schema of an answer object whose typed answer is of ``kind``."""
    if kind not in VALUE_SCHEMAS:
        raise ModelOutputError(f"unknown answer kind {kind!r}", allowed=list(ANSWER_KINDS))
    props: dict[str, Any] = {
        "text": {"type": "string", "maxLength": 400},
        "answer": {
            "type": "object",
            "properties": {"kind": {"type": "string", "enum": [kind]}, "value": VALUE_SCHEMAS[kind]},
            "required": ["kind", "value"],
        },
    }
    if with_claims:
        props["claims"] = {"type": "array", "items": _CLAIM_SCHEMA, "maxItems": MAX_CLAIMS}
    return {"type": "object", "properties": props, "required": list(props)}


def answer_instructions(kind: str, with_claims: bool = True) -> str:
    """The answer contract in words, for the system prompt."""
    lines = [
        "Reply with one JSON object and nothing else:",
        f'{{"text": "<one sentence>", "answer": {{"kind": "{kind}", "value": <{VALUE_WORDS[kind]}>}}'
        + (', "claims": [...]}' if with_claims else "}"),
        f'"answer.kind" must be "{kind}"; "answer.value" must be {VALUE_WORDS[kind]}.',
    ]
    if with_claims:
        lines.append(
            'Each claim: {"id": "c1", "type": "count"|"value"|"entity", "value": <number> (count, value) or '
            '"uids": [...] (entity), "evidence": ["s1"], "from": "s1.<field>"} naming the step and field '
            "the value was read from."
        )
    return "\n".join(lines)


def _valued_claims(claims: Any, answer: Any) -> Any:
    """Claims with a value: a simple claim (count, value, entity) that omits its value asserts nothing.

    When it is the only claim, it takes the typed answer's value — the *model's* own answer, so the claim
    verifier still compares what the model said with the trace field the claim names. Other value-less
    claims are dropped (an answer left without claims is bound to ``answer_spec.from`` by the reporter).
    Anything else is left for :func:`engine.api.parse_answer` to judge.
    """
    if not isinstance(claims, list):
        return claims
    missing = [
        i
        for i, c in enumerate(claims)
        if isinstance(c, dict) and c.get("type") in _CLAIM_VALUE_KEY and _CLAIM_VALUE_KEY[c["type"]] not in c
    ]
    if not missing:
        return claims
    value = answer.get("value") if isinstance(answer, dict) else None
    if len(claims) == 1 and value is not None:
        claim = claims[0]
        if claim["type"] == "entity":
            uids = value if isinstance(value, list) else [value]
            if uids and all(isinstance(u, str) for u in uids):
                return [{**claim, "uids": uids}]
        elif not isinstance(value, (list, dict, bool)):
            return [{**claim, "value": value}]
    return [c for i, c in enumerate(claims) if i not in missing]


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _number(x: Any) -> int | float | None:
    """The number a string such as "0.551963048" writes; None for anything else."""
    if not isinstance(x, str) or not _NUMBER.fullmatch(x.strip()):
        return None
    text = x.strip()
    return float(text) if any(ch in text for ch in ".eE") else int(text)


def _numeric_claims(claims: Any, answer: Any) -> Any:
    """Count and value claims whose value is a number written as a string ("0.551963048"), when the typed
    answer is a number (or a number written as a string too): the number. Qwen2.5-Coder-1.5B quoted a
    right ratio so, and the claim verifier, which compares types strictly, found it unsupported and the
    gate abstained."""
    value = answer.get("value") if isinstance(answer, dict) else None
    if _number(value) is not None:
        value = _number(value)  # the typed answer written as a string too ("0.551963048")
    if not isinstance(claims, list) or not isinstance(value, (int, float)) or isinstance(value, bool):
        return claims
    out = []
    for c in claims:
        number = (
            _number(c.get("value")) if isinstance(c, dict) and c.get("type") in ("count", "value") else None
        )
        if number is not None:
            c = {**c, "value": number}
        out.append(c)
    return out


def read_answer(reply: str, kind: str) -> dict[str, Any]:
    """The checked answer object in ``reply``, its typed value normalized to ``kind``.

    Raises :class:`ModelOutputError` with ``details.problems`` listing what is wrong (for a retry prompt).
    """
    raw = extract_json(reply)
    if isinstance(raw, dict) and "answer" not in raw and "value" in raw:
        raw = {"text": raw.get("text", ""), "answer": {"kind": kind, "value": raw["value"]}}
    if isinstance(raw, dict):
        raw.setdefault("claims", [])
        raw.setdefault("text", "")
        raw["claims"] = _numeric_claims(_valued_claims(raw["claims"], raw.get("answer")), raw.get("answer"))
    try:
        answer = parse_answer(raw)
    except TGMSError as err:
        problems = err.details.get("problems", [err.message])
        raise ModelOutputError("the answer object is malformed", problems=problems) from err
    if answer.kind != kind:
        raise ModelOutputError(
            "wrong answer kind", problems=[f'answer.kind must be "{kind}", not {answer.kind!r}']
        )
    try:
        value = typed_value(kind, answer.value)
    except ValueError as err:
        raise ModelOutputError(
            "the answer value has the wrong shape",
            problems=[f"answer.value must be {VALUE_WORDS[kind]} ({err})"],
        ) from err
    if kind == "value" and _number(value) is not None:
        value = _number(value)  # a number written as a string is the number (as in its claims)
    out = answer.to_dict()
    out["answer"] = {"kind": kind, "value": value}
    return out
