"""The claim-local mutation classes: each edits one field of one pool claim, no re-execution needed.

They model the reporter errors trace grounding is meant to catch (a miscounted number, an invented or
uncited uid, swapped ordering operands, a µs time read as ms, a citation of the wrong step) and one it
cannot by construction (a dropped entity-set member: the verifier checks precision, not completeness).
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Sequence
from typing import Any

from tgms.engine.api import Ref, RefSyntaxError, TGMSError, resolve_ref, uids_in
from tgms.pipeline.mutations.base import Mutant, claim_types, mutant, mutation_class
from tgms.pipeline.mutations.pool import PoolItem

US_PER_MS = 1000
#: argument keys that hold times (a pattern call's windows and instants)
TIME_KEYS = ("t_a", "t_b", "t", "t1", "t2", "t_valid", "vt_s", "vt_e", "window")
#: payload fields that hold times (a value read from one states a time)
TIME_FIELDS = ("t", "arrival", "earliest_arrival", "first_seen", "last_seen", "t_a", "t_b", "vt_s", "vt_e")


def replace_number(text: str, old: Any, new: Any) -> str:
    """``text`` with the first standalone occurrence of the number ``old`` replaced by ``new``."""
    return re.sub(rf"(?<!\d)(?<!\d\.){re.escape(str(old))}(?!\d|\.\d)", str(new), text, count=1)


@mutation_class("count ±1", row=1, applies_to="count claims", applies=claim_types("count"))
def count_pm1(item: PoolItem, rng: random.Random) -> Mutant | None:
    c = item.claim
    if c["type"] != "count":
        return None
    delta = rng.choice((-1, 1)) if c["value"] > 0 else 1
    new = {**c, "value": c["value"] + delta}
    return mutant(item, new, replace_number(item.answer["text"], c["value"], new["value"]))


def _known(item: PoolItem) -> dict[str, int]:
    return item.ctx.nid_index()


@mutation_class(
    "entity substitution (fabricated)", row=2, applies_to="entity claims", applies=claim_types("entity")
)
def fabricated_entity(item: PoolItem, rng: random.Random) -> Mutant | None:
    c = item.claim
    if c["type"] != "entity":
        return None
    known = _known(item)
    while (fake := f"n{rng.randrange(10**6, 10**7)}") in known:
        pass
    uids = list(c["uids"])
    uids[rng.randrange(len(uids))] = fake
    return mutant(item, {**c, "uids": uids})


@mutation_class(
    "real-but-uncited entity added", row=3, applies_to="entity claims", applies=claim_types("entity")
)
def uncited_entity(item: PoolItem, rng: random.Random) -> Mutant | None:
    c = item.claim
    if c["type"] != "entity":
        return None
    known = _known(item)
    cited: set[str] = set()
    for sid in c["evidence"]:
        payload = item.trace.payload(sid)
        if payload is not None:
            cited |= uids_in(payload, known)
    choices = sorted(u for u in known if u not in cited and u not in c["uids"])
    if not choices:
        return None
    uids = list(c["uids"])
    uids.insert(rng.randrange(len(uids) + 1), rng.choice(choices))
    return mutant(item, {**c, "uids": uids})


def _asymmetric_ordering(item: PoolItem) -> bool:
    # equals is the one symmetric relation
    return item.claim["type"] == "ordering" and item.claim["relation"] != "equals"


@mutation_class(
    "ordering operand swap",
    row=4,
    applies_to="ordering claims with a non-symmetric relation",
    applies=_asymmetric_ordering,
)
def ordering_swap(item: PoolItem, rng: random.Random) -> Mutant | None:
    c = item.claim
    if not _asymmetric_ordering(item):
        return None
    return mutant(item, {**c, "a": c["b"], "b": c["a"]})


def _as_ms(x: Any) -> Any:
    """Every time in ``x`` (an int, a list's ints, an object's time keys, recursively) divided by 1000."""
    if isinstance(x, int) and not isinstance(x, bool):
        return x // US_PER_MS
    if isinstance(x, list):
        return [_as_ms(v) for v in x]
    if isinstance(x, dict):
        return {k: _as_ms(v) if k in TIME_KEYS or isinstance(v, dict) else v for k, v in x.items()}
    return x


def time_valued(c: dict[str, Any]) -> bool:
    """A value claim that states a time: read from a time field, or an interval ``[s, e]``."""
    last = re.split(r"[.\[]", str(c.get("from", "")))[-1]
    v = c["value"]
    is_iv = isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v)
    return last in TIME_FIELDS or is_iv


def _times(item: PoolItem) -> bool:
    c = item.claim
    if c["type"] == "ordering":
        return not (isinstance(c["a"], str) and isinstance(c["b"], str))
    return (c["type"] == "value" and time_valued(c)) or c["type"] == "temporal_pattern"


@mutation_class(
    "unit confusion (µs as ms)",
    row=5,
    applies_to="ordering claims with literal operands; value claims stating a time; temporal-pattern claims",
    applies=_times,
)
def unit_confusion(item: PoolItem, rng: random.Random) -> Mutant | None:
    """A literal ordering operand, a value claim's time, or a pattern call's window read as ms."""
    c = item.claim
    new: dict[str, Any] | None = None
    if c["type"] == "ordering":
        sides = [k for k in ("a", "b") if not isinstance(c[k], str)]
        if sides:
            side = rng.choice(sides)
            new = {**c, side: _as_ms(c[side])}
    elif c["type"] == "value" and time_valued(c):
        new = {**c, "value": _as_ms(c["value"])}
    elif c["type"] == "temporal_pattern":
        a = copy.deepcopy(c["assertion"])
        a["args"] = _as_ms(a["args"])
        new = {**c, "assertion": a}
    return None if new is None or new == c else mutant(item, new)


def _has_from(item: PoolItem) -> bool:
    return item.claim.get("from") is not None and len(item.trace.steps) > 1


@mutation_class(
    "wrong-step citation",
    row=8,
    applies_to="claims with `from` in multi-step traces",
    applies=_has_from,
    expect_detected=False,
    note="caught only when the surrogate step cannot ground the claim; a cited step holding the same "
    "value genuinely grounds it (the mutation moves `from` together with `evidence`)",
)
def wrong_step(item: PoolItem, rng: random.Random) -> Mutant | None:
    """Cite another step of the same trace: ``evidence`` and ``from`` both moved to it."""
    c = item.claim
    found = _other_steps(item)
    if found is None:
        return None
    _, rest, others = found
    other = rng.choice(others)
    return mutant(item, {**c, "evidence": [other], "from": f"{other}.{rest}"})


def _other_steps(
    item: PoolItem, skip: Sequence[str] = (), ok_only: bool = False
) -> tuple[str, str, list[str]] | None:
    """``(from, rest, others)`` for a claim ``from`` ``step.rest``: the trace's steps other than ``step``
    and those in ``skip`` (with ``ok_only``, successful ones only); None without a ``from`` or others."""
    src = item.claim.get("from")
    if src is None:
        return None
    step, rest = src.split(".", 1)
    others = [r.id for r in item.trace.steps if r.id != step and r.id not in skip and (r.ok or not ok_only)]
    return (src, rest, others) if others else None


@mutation_class(
    "uncited provenance pointer",
    row=9,
    applies_to="claims with `from` in multi-step traces",
    applies=_has_from,
    has_without=True,
    note="`from` names a step the claim does not cite (evidence unchanged): rejected outright by the "
    "cite rule; without it the pointer is read from the trace, and a step holding the same value passes",
)
def uncited_pointer(item: PoolItem, rng: random.Random) -> Mutant | None:
    """Point ``from`` at another step of the trace, keeping ``evidence``: a provenance pointer naming a step
    the claim does not cite. Steps whose value at the same path equals the claim's are preferred (the case
    a value-only check would pass)."""
    c = item.claim
    found = _other_steps(item, skip=c["evidence"], ok_only=True)
    if found is None or c["type"] not in ("count", "value", "entity"):
        return None
    src, rest, others = found
    same = [o for o in others if _value_at(item, f"{o}.{rest}") == _value_at(item, src)]
    other = rng.choice(same or others)
    return mutant(item, {**c, "from": f"{other}.{rest}"})


def _value_at(item: PoolItem, ref_text: str) -> Any:
    ref = Ref.parse(ref_text)
    payload = item.trace.payload(ref.step)
    if payload is None:
        return None
    try:
        return resolve_ref(ref, payload).value
    except TGMSError:
        return None


def _multi(item: PoolItem) -> bool:
    return item.claim["type"] == "entity" and len(item.claim["uids"]) > 1


@mutation_class(
    "entity member dropped",
    row=10,
    applies_to="multi-uid entity claims",
    applies=_multi,
    expect_detected=False,
    note="invisible to trace grounding by construction: the verifier checks that claimed uids appear in "
    "the cited evidence (precision); set completeness is checked by gold scoring, not the trace",
)
def member_dropped(item: PoolItem, rng: random.Random) -> Mutant | None:
    c = item.claim
    if not _multi(item):
        return None
    uids = list(c["uids"])
    del uids[rng.randrange(len(uids))]
    return mutant(item, {**c, "uids": uids})


def _row0(item: PoolItem) -> bool:
    # applies only where the page holds a next element whose value differs (a one-row page has none)
    if item.claim["type"] not in ("count", "value") or "[0]" not in str(item.claim.get("from", "")):
        return False
    return wrong_row(item, random.Random(0)) is not None


@mutation_class(
    "wrong row of the right step", row=12, applies_to="count/value claims from `rows[0]`", applies=_row0
)
def wrong_row(item: PoolItem, rng: random.Random) -> Mutant | None:
    """The value of the next element (``[1]`` for a ``[0]`` of ``from``, first one that differs) quoted
    with the citation of the right one."""
    c = item.claim
    src = c.get("from")
    if c["type"] not in ("count", "value") or src is None:
        return None
    payload = item.trace.payload(src.split(".", 1)[0])
    if payload is None:
        return None
    for hit in re.finditer(r"\[0\]", src):
        other = src[: hit.start()] + "[1]" + src[hit.end() :]
        try:
            value = resolve_ref(Ref.parse(other), payload).value
        except (TGMSError, RefSyntaxError):  # no second element (or not that shape)
            continue
        if value != c["value"] and (c["type"] != "count" or isinstance(value, int)):
            return mutant(item, {**c, "value": value})
    return None
