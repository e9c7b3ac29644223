"""The mutation classes of the experiment, in Table 5's order, with what each applies to.

Kept apart from the generators so the table's rows, their applicability and their notes (why a class is
a deliberate negative) are read in one place.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from pipeline.mutations import classes as m
from pipeline.mutations import variants as v
from pipeline.mutations.base import MutationClass
from pipeline.mutations.pool import PoolItem


def _typ(*types: str) -> Callable[[PoolItem], bool]:
    def f(item: PoolItem) -> bool:
        return item.claim["type"] in types

    return f


def _has_from(item: PoolItem) -> bool:
    return item.claim.get("from") is not None and len(item.trace.steps) > 1


def _multi(item: PoolItem) -> bool:
    return item.claim["type"] == "entity" and len(item.claim["uids"]) > 1


def _probe_before(item: PoolItem) -> bool:
    return item.task.get("probe_half") == "before" and item.claim["type"] in ("count", "value")


def _paged(item: PoolItem) -> bool:
    return v._paged_list(item) is not None


def _times(item: PoolItem) -> bool:
    c = item.claim
    if c["type"] == "ordering":
        return not (isinstance(c["a"], str) and isinstance(c["b"], str))
    return (c["type"] == "value" and m.time_valued(c)) or c["type"] == "temporal_pattern"


def _windowed_answer(item: PoolItem) -> bool:
    return v.is_answer_claim(item) and v.shift(item.task["oracle_plan"]) != item.task["oracle_plan"]


def _row0(item: PoolItem) -> bool:
    # applies only where the page holds a next element whose value differs (a one-row page has none)
    if item.claim["type"] not in ("count", "value") or "[0]" not in str(item.claim.get("from", "")):
        return False
    return m.wrong_row(item, random.Random(0)) is not None


CLASSES: tuple[MutationClass, ...] = (
    MutationClass("count ±1", m.count_pm1, "count claims", _typ("count")),
    MutationClass("entity substitution (fabricated)", m.fabricated_entity, "entity claims", _typ("entity")),
    MutationClass("real-but-uncited entity added", m.uncited_entity, "entity claims", _typ("entity")),
    MutationClass(
        "ordering operand swap", m.ordering_swap, "ordering claims with a non-symmetric relation",
        lambda it: it.claim["type"] == "ordering" and it.claim["relation"] != "equals",
    ),
    MutationClass(
        "unit confusion (µs as ms)",
        m.unit_confusion,
        "ordering claims with literal operands; value claims stating a time; temporal-pattern claims",
        _times,
    ),
    MutationClass("wrong belief state", v.wrong_belief, "probe `before` answer claims", _probe_before),
    MutationClass(
        "truncated-page count", v.truncated_page, "count claims from a list's L_total", _paged,
        has_without=True,
    ),
    MutationClass(
        "wrong-step citation", m.wrong_step, "claims with `from` in multi-step traces", _has_from,
        expect_detected=False,
        note="caught only when the surrogate step cannot ground the claim; a cited step holding the same "
        "value genuinely grounds it (the mutation moves `from` together with `evidence`)",
    ),
    MutationClass(
        "uncited provenance pointer", m.uncited_pointer, "claims with `from` in multi-step traces",
        _has_from, has_without=True,
        note="`from` names a step the claim does not cite (evidence unchanged): rejected outright by the "
        "cite rule; without it the pointer is read from the trace, and a step holding the same value passes",
    ),
    MutationClass(
        "entity member dropped", m.member_dropped, "multi-uid entity claims", _multi, expect_detected=False,
        note="invisible to trace grounding by construction: the verifier checks that claimed uids appear in "
        "the cited evidence (precision); set completeness is checked by gold scoring, not the trace",
    ),
    MutationClass("value from a shifted window", v.shifted_window, "answer claims of windowed plans",
                  _windowed_answer),
    MutationClass("wrong row of the right step", m.wrong_row, "count/value claims from `rows[0]`", _row0),
    MutationClass("right count, refused step cited", v.refused_citation, "count claims from a list's L_total",
                  _paged),
)  # fmt: skip
