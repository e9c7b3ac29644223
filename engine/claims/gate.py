"""Gating: what of a verified answer may be emitted, and how much of its text the claims cover.

:func:`gate` drops every claim of a *gated* type (count, value, entity, ordering by default; pattern claims
are reported but not gated, as in the paper) whose verdict is in ``drop`` (unsupported and unverifiable by
default), and **abstains** when no gated claim with a supported or weakly supported verdict is left, or
when the typed final answer is not backed by a kept claim (a number nobody could check is not emitted).
When a claim is dropped the reporter's text is not emitted either — it may state the dropped claim — and
is replaced by a plain rendering of the kept claims.

:func:`coverage` measures which numbers and uids mentioned in the text some claim covers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tgms.engine.claims.answer import Answer, Claim
from tgms.engine.claims.evidence import as_interval, is_number, numbers_in, same_number, same_value, strings
from tgms.engine.claims.verifier import Verdict

GATED_TYPES = ("count", "value", "entity", "ordering")
DROP = ("unsupported", "unverifiable")
PASSING = ("supported", "weakly_supported")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_:\-]*[A-Za-z0-9]|[A-Za-z]")


@dataclass(frozen=True)
class GateConfig:
    gated_types: tuple[str, ...] = GATED_TYPES
    drop: tuple[str, ...] = DROP


def _backs(c: Claim, kind: str, value: Any) -> bool:
    if kind == "entity_set" and value == []:
        return c.type == "count" and c.value == 0  # "there are none"
    if kind in ("entity", "entity_set"):
        want = {value} if isinstance(value, str) else set(value) if isinstance(value, list) else set()
        return c.type == "entity" and bool(want) and want <= set(c.uids)
    if kind == "relation":
        return (c.type == "ordering" and c.relation == value) or (
            c.type == "value" and same_value(c.value, value)
        )
    if kind == "interval":
        return (
            c.type == "value"
            and as_interval(c.value) is not None
            and as_interval(c.value) == as_interval(value)
        )
    return c.type in ("count", "value") and same_value(c.value, value)


def render(claims: list[Claim]) -> str:
    parts = []
    for c in claims:
        if c.type in ("count", "value"):
            parts.append(f"{c.type}: {c.value!r}")
        elif c.type == "entity":
            parts.append("entities: " + ", ".join(c.uids))
        elif c.type == "ordering":
            parts.append(f"{c.a!r} {c.relation} {c.b!r}")
        else:
            parts.append(f"pattern: {c.assertion!r}")
    return "; ".join(parts)


def gate(answer: Answer, verdicts: list[Verdict], config: GateConfig | None = None) -> dict[str, Any]:
    cfg = config or GateConfig()
    by_id = {v.claim: v for v in verdicts}
    kept: list[Claim] = []
    dropped: list[dict[str, Any]] = []
    for c in answer.claims:
        v = by_id.get(c.id)
        if c.type in cfg.gated_types and (v is None or v.verdict in cfg.drop):
            dropped.append(
                {
                    "claim": c.id,
                    "verdict": v.verdict if v else "unverifiable",
                    "reason": v.reason if v else "not verified",
                }
            )
        else:
            kept.append(c)
    passing = [c for c in kept if c.type in cfg.gated_types and by_id[c.id].verdict in PASSING]
    reason = None
    if not passing:
        reason = "no supported gated claim is left"
    elif answer.has_typed and not any(_backs(c, answer.kind or "", answer.value) for c in passing):
        reason = f"the typed answer {answer.value!r} is not backed by a supported claim"
    emitted = reason is None
    out: dict[str, Any] = {
        "emitted": emitted,
        "abstained": not emitted,
        "reason": reason,
        "dropped": dropped,
        "verdicts": [v.to_dict() for v in verdicts],
    }
    if emitted:
        out["text"] = answer.text if not dropped else render(kept)
        out["claims"] = [c.to_dict() for c in kept]
        if answer.has_typed:
            out["answer"] = {"kind": answer.kind, "value": answer.value}
    return out


def _numbers(text: str) -> list[float | int]:
    out: list[float | int] = []
    for m in _NUMBER.finditer(text):
        s = m.group(0).replace(",", "")
        out.append(float(s) if "." in s else int(s))
    return out


def _claim_numbers(c: Claim) -> list[Any]:
    if c.type in ("count", "value"):
        return list(numbers_in(c.value))
    if c.type == "ordering":
        return [x for v in (c.a, c.b) if (iv := as_interval(v)) for x in iv] + [
            v for v in (c.a, c.b) if is_number(v)
        ]
    if c.type == "temporal_pattern" and c.assertion and is_number(c.assertion.get("value")):
        return [c.assertion["value"]]
    return []


def coverage(answer: Answer, known_uids: Any = None) -> dict[str, Any]:
    """Numbers and uids in the answer's text, and which of them a claim covers. A uid is a text token that
    is a store uid (``known_uids``), or without a store any token shaped like ``n<digits>``."""
    nums = _numbers(answer.text)
    claimed = [x for c in answer.claims for x in _claim_numbers(c)]
    cov_nums = [n for n in nums if any(same_number(n, x) for x in claimed)]
    tokens = _TOKEN.findall(answer.text)
    if known_uids is not None:
        ids = [t for t in tokens if t in known_uids]
    else:
        ids = [t for t in tokens if re.fullmatch(r"n\d+", t)]
    claim_ids = {u for c in answer.claims for u in c.uids}
    claim_ids |= {v for c in answer.claims if c.type == "value" for v in strings(c.value)}
    cov_ids = [u for u in ids if u in claim_ids]
    return {
        "numbers": len(nums),
        "numbers_covered": len(cov_nums),
        "ids": len(ids),
        "ids_covered": len(cov_ids),
        "uncovered": [n for n in nums if n not in cov_nums] + [u for u in ids if u not in cov_ids],
    }
