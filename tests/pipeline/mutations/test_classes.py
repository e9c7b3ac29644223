"""Each mutation generator changes exactly what its class says, and the verifier rates it as expected."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tgms.engine.claims.verifier import VerifyConfig
from tgms.engine.operators.context import OpContext
from tgms.pipeline.mutations import classes as m
from tgms.pipeline.mutations import variants as v
from tgms.pipeline.mutations.base import MUTATION_CLASSES, Mutant, claim_types, mutant, mutation_class
from tgms.pipeline.mutations.experiment import run_class
from tgms.pipeline.mutations.pool import Pool, PoolItem, verdict
from tgms.pipeline.mutations.registry import CLASSES, all_classes

from .conftest import item
from .table5 import TABLE5_ORDER


def _changed(it: PoolItem, mut: Mutant) -> set[str]:
    """The keys of the target claim that changed; every other claim must be untouched."""
    before = {c["id"]: c for c in it.answer["claims"]}
    after = {c["id"]: c for c in mut.answer["claims"]}
    assert before.keys() == after.keys() and mut.claim_id == it.claim_id
    for cid in before:
        if cid != it.claim_id:
            assert before[cid] == after[cid]
    a, b = before[it.claim_id], after[it.claim_id]
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def _verdict(mut: Mutant, ctx: OpContext, cfg: VerifyConfig | None = None) -> str:
    return verdict(mut.claim, mut.trace, ctx, cfg)


def test_pool_is_all_supported(pool: Pool, ctx: OpContext) -> None:
    assert pool.tasks_kept == pool.tasks_total == 8
    assert {"count", "value", "entity", "ordering", "temporal_pattern"} <= set(pool.sizes())
    assert all(verdict(it.claim, it.trace, ctx) == "supported" for it in pool.items)


def test_count_pm1(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "reach", "count")
    mut = m.count_pm1(it, random.Random(0))
    assert mut is not None and _changed(it, mut) == {"value"}
    assert abs(mut.claim["value"] - it.claim["value"]) == 1
    assert mut.answer["text"] == it.answer["text"].replace(str(it.claim["value"]), str(mut.claim["value"]))
    assert mut.answer["answer"] == it.answer["answer"]
    assert _verdict(mut, ctx) == "unsupported"


def test_fabricated_and_uncited_entity(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "present", "entity")
    fab = m.fabricated_entity(it, random.Random(0))
    assert fab is not None and _changed(it, fab) == {"uids"}
    assert len(fab.claim["uids"]) == len(it.claim["uids"])
    (new,) = set(fab.claim["uids"]) - set(it.claim["uids"])
    assert new not in ctx.nid_index()
    assert _verdict(fab, ctx) == "unsupported"
    unc = m.uncited_entity(it, random.Random(0))
    assert unc is not None and _changed(it, unc) == {"uids"}
    (added,) = set(unc.claim["uids"]) - set(it.claim["uids"])
    assert added in ctx.nid_index() and added not in ("n1", "n2", "n3")
    assert _verdict(unc, ctx) == "unsupported"


def test_ordering_swap(pool: Pool, ctx: OpContext) -> None:
    for it in (x for x in pool.items if x.claim["type"] == "ordering"):
        mut = m.ordering_swap(it, random.Random(0))
        assert mut is not None and _changed(it, mut) == {"a", "b"}
        assert (mut.claim["a"], mut.claim["b"]) == (it.claim["b"], it.claim["a"])
        assert _verdict(mut, ctx) == "unsupported"


def test_unit_confusion(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "arrival", "value")
    mut = m.unit_confusion(it, random.Random(0))
    assert (
        mut is not None and _changed(it, mut) == {"value"} and mut.claim["value"] == it.claim["value"] // 1000
    )
    assert _verdict(mut, ctx) == "unsupported"
    literal = next(
        x for x in pool.items if x.claim["type"] == "ordering" and not isinstance(x.claim["a"], str)
    )
    mut = m.unit_confusion(literal, random.Random(0))
    assert mut is not None and len(_changed(literal, mut)) == 1
    assert _verdict(mut, ctx) != "supported"
    pattern = item(pool, "motif", "temporal_pattern")
    mut = m.unit_confusion(pattern, random.Random(0))
    assert mut is not None and _changed(pattern, mut) == {"assertion"}
    assert (
        mut.claim["assertion"]["args"]["window"]["t_b"]
        == pattern.claim["assertion"]["args"]["window"]["t_b"] // 1000
    )
    assert _verdict(mut, ctx) != "supported"
    assert m.unit_confusion(item(pool, "first", "value"), random.Random(0)) is None  # a uid is no time


def test_wrong_belief(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "versions", "count")
    mut = v.wrong_belief(it, random.Random(0))
    assert mut is not None and _changed(it, mut) == {"value"}
    assert (it.claim["value"], mut.claim["value"]) == (1, 2)  # n2's correction added a version
    assert _verdict(mut, ctx) == "unsupported"
    assert v.wrong_belief(item(pool, "reach", "count"), random.Random(0)) is None  # not a probe


def test_truncated_page(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "reach", "count")
    mut = v.truncated_page(it, random.Random(0))
    assert mut is not None and mut.without is not None
    assert _changed(it, mut) == {"value", "evidence", "from"}
    assert mut.claim["from"] == f"{v.PAGE_STEP}.value" and 1 <= mut.claim["value"] < it.claim["value"]
    page = mut.trace.record(v.PAGE_STEP)
    # compute reads the whole list past the cut page (issue 27's full reads): the step counts every
    # element, so the page's count is contradicted by the trace
    assert page is not None and page.ok and not page.upstream_truncated
    assert mut.trace.payload(v.PAGE_STEP)["value"] > mut.claim["value"]  # type: ignore[index]
    assert _verdict(mut, ctx) == "unsupported"  # detected: the full read gives the whole count
    plain, cfg = mut.without
    assert verdict(mut.claim, plain, ctx, cfg) == "supported"  # without the mechanism: not detected
    assert v.truncated_page(item(pool, "common", "count"), random.Random(0)) is None  # a compute's total


def test_refused_citation(pool: Pool, ctx: OpContext) -> None:
    """A count over a producer's cut page is no longer refused (compute reads the whole list), so there is
    no refused step to cite: the class does not apply to a page count any more."""
    it = item(pool, "reach", "count")
    assert v.refused_citation(it, random.Random(0)) is None


def test_wrong_step(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "common", "count")
    mut = m.wrong_step(it, random.Random(0))
    assert mut is not None and _changed(it, mut) == {"evidence", "from"}
    (other,) = mut.claim["evidence"]
    assert other in ("s1", "s2") and mut.claim["from"] == f"{other}.rows_total"
    total = mut.trace.record(other).rows_total  # type: ignore[union-attr]
    expected = "supported" if total == it.claim["value"] else "unsupported"
    assert _verdict(mut, ctx) == expected
    assert _verdict(mut, ctx, VerifyConfig(cite_rule=False)) == expected
    assert m.wrong_step(item(pool, "reach", "count"), random.Random(0)) is None  # one step only


def test_uncited_pointer(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "common", "count")
    mut = m.uncited_pointer(it, random.Random(0))
    assert mut is not None and _changed(it, mut) == {
        "from"
    }  # evidence kept: the pointer names an uncited step
    step = mut.claim["from"].split(".", 1)[0]
    assert step not in mut.claim["evidence"]
    assert _verdict(mut, ctx) == "unverifiable"  # the cite rule rejects it outright
    # without the rule the pointer is read from the trace: it passes exactly when that step holds the value
    total = mut.trace.record(step).rows_total  # type: ignore[union-attr]
    expected = "supported" if total == it.claim["value"] else "unsupported"
    assert _verdict(mut, ctx, VerifyConfig(cite_rule=False)) == expected
    assert m.uncited_pointer(item(pool, "reach", "count"), random.Random(0)) is None  # one step only


def test_cite_rule_switch(pool: Pool, ctx: OpContext) -> None:
    it = next(x for x in pool.items if x.claim["type"] == "ordering" and isinstance(x.claim["a"], str))
    claim: dict[str, Any] = {**it.claim, "from": "s9.rows_total"}  # names a step the claim does not cite
    assert verdict(claim, it.trace, ctx) == "unverifiable"
    assert verdict(claim, it.trace, ctx, VerifyConfig(cite_rule=False)) == "supported"


def test_member_dropped_is_not_detected(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "present", "entity")
    mut = m.member_dropped(it, random.Random(0))
    assert mut is not None and _changed(it, mut) == {"uids"}
    assert set(mut.claim["uids"]) < set(it.claim["uids"]) and len(mut.claim["uids"]) == 2
    assert _verdict(mut, ctx) == "supported"


def test_wrong_row_and_shifted_window(pool: Pool, ctx: OpContext) -> None:
    it = item(pool, "first", "value")
    mut = m.wrong_row(it, random.Random(0))
    assert mut is not None and _changed(it, mut) == {"value"} and mut.claim["value"] == "n7"
    assert _verdict(mut, ctx) == "unsupported"
    it = item(pool, "reach", "count")
    mut = v.shifted_window(it, random.Random(0))
    assert mut is not None and _changed(it, mut) == {"value"}
    assert _verdict(mut, ctx) == "unsupported"


def test_classes_apply_where_they_say(pool: Pool) -> None:
    for cls in CLASSES:
        for it in pool.items:
            mut = cls.generate(it, random.Random(0))
            assert mut is None or cls.applies(it), (cls.name, it.task_id, it.claim)


def test_registered_classes_come_in_table5_order() -> None:
    assert tuple(c.name for c in CLASSES) == TABLE5_ORDER
    assert [c.row for c in CLASSES] == list(range(1, len(TABLE5_ORDER) + 1))


def test_a_class_registered_elsewhere_joins_the_experiment(pool: Pool) -> None:
    @mutation_class("toy: count +1000", row=99, applies_to="count claims", applies=claim_types("count"))
    def toy(item: PoolItem, rng: random.Random) -> Mutant | None:
        return mutant(item, {**item.claim, "value": item.claim["value"] + 1000})

    try:
        assert all_classes()[-1].name == "toy: count +1000" and all_classes()[:-1] == CLASSES
        rec = run_class(all_classes()[-1], pool, 5, 0, {id(it): "supported" for it in pool.items})
        assert rec["cases"] > 0 and rec["detected"] == rec["cases"]
    finally:
        del MUTATION_CLASSES["toy: count +1000"]
    assert all_classes() == CLASSES


def test_the_registry_refuses_a_duplicate_name_or_row() -> None:
    with pytest.raises(RuntimeError, match="registered twice"):
        mutation_class("count ±1", row=98, applies_to="", applies=claim_types("count"))(m.count_pm1)
    with pytest.raises(RuntimeError, match="row 1 is taken"):
        mutation_class("another", row=1, applies_to="", applies=claim_types("count"))(m.count_pm1)
