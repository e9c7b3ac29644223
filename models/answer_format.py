"""The typed answer format every system emits: ``{text, answer: {kind, value}, claims}`` (DESIGN §3.5, §4).

All four systems are scored on the ``answer`` they emit, so they are all asked for it the same way:
:func:`answer_schema` is the JSON schema sent as the structured-output format (arrays capped with
``maxItems``: a tiny model otherwise loops inside an array until ``max_tokens``), :func:`answer_instructions`
is the same contract in words, and :func:`read_answer` turns a reply into a checked answer object or says
what is wrong with it (for the one retry) — through the engine's own :func:`engine.api.parse_answer` and
:func:`engine.api.typed_value`, so a system cannot emit what the claim verifier could not read.
"""

from __future__ import annotations

from typing import Any

from engine.api import ALLEN_RELATIONS, ANSWER_KINDS, TGMSError, parse_answer, typed_value
from models.errors import ModelOutputError
from models.prompting import extract_json

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

_CLAIM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "maxLength": 8},
        "type": {"type": "string", "enum": ["count", "value", "entity"]},
        "value": {"anyOf": [{"type": "number"}, {"type": "string", "maxLength": 200}]},
        "uids": {"type": "array", "items": _UID, "maxItems": MAX_SET},
        "evidence": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 4},
        "from": {"type": "string", "maxLength": 120},
    },
    "required": ["id", "type", "evidence"],
}


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
    out = answer.to_dict()
    out["answer"] = {"kind": kind, "value": value}
    return out
