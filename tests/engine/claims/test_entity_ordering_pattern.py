"""entity, ordering and temporal_pattern claims against the trace of :func:`base_plan`."""

from __future__ import annotations

from typing import Any

import pytest

from tgms.engine.execute.executor import Trace
from tgms.engine.operators.context import OpContext

from ._support import FOLLOWS, MOTIF, REACHED, S, W, claim, kinds, plan, run, step, verdict_of, verdicts

REACHED_UIDS = [u for u, _ in REACHED]

# -- entity -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("c", "where"),
    [
        (claim("entity", "s1", uids=REACHED_UIDS), "results"),
        (claim("entity", "s1", src="s1.rows[*].uid", uids=REACHED_UIDS), "s1.rows[*].uid"),
        (claim("entity", "s1", src="s1.rows", uids=["n5", "n3"]), "s1.rows"),
        (claim("entity", "s1", src="s1.rows[1].uid", uids=["n7"]), "s1.rows[1].uid"),
        (claim("entity", "s4", uids=["n1", "n3", "n7"]), "results"),  # edge endpoints of n2's history
        (claim("entity", "s1", "s4", uids=["n1", "n6"]), "results"),  # n1 from s4, n6 from s1
    ],
)
def test_entity_in_the_cited_results_is_supported(
    base: Trace, ctx: OpContext, c: dict[str, Any], where: str
) -> None:
    v = verdict_of(c, base, ctx)
    assert v.verdict == "supported", v.reason
    assert where in v.reason


def test_entity_is_checked_for_precision_only(base: Trace, ctx: OpContext) -> None:
    """The deliberate negative: naming fewer members than the result holds is not a wrong claim."""
    for subset in (REACHED_UIDS[:1], REACHED_UIDS[1:], ["n6"]):
        assert verdict_of(claim("entity", "s1", uids=subset), base, ctx).verdict == "supported"
        assert verdict_of(claim("entity", "s1", src="s1.rows[*].uid", uids=subset), base, ctx).verdict == (
            "supported"
        )


@pytest.mark.parametrize("src", [None, "s1.rows[*].uid"])
def test_a_fabricated_uid_is_unsupported(base: Trace, ctx: OpContext, src: str | None) -> None:
    v = verdict_of(claim("entity", "s1", src=src, uids=["n2", "n99"]), base, ctx)
    assert v.verdict == "unsupported"
    assert "n99" in v.reason and "not uids of the store" in v.reason


def test_the_src_echoed_in_args_is_not_evidence(base: Trace, ctx: OpContext) -> None:
    """n1 is the source of s1: its args_echo names it, its results do not. The planner asked about n1;
    the data did not return it."""
    env = base.envelope("s1")
    assert env is not None and env["args_echo"]["src"] == "n1"
    assert "n1" not in {r["uid"] for r in env["payload"]["rows"]}
    for src in (None, "s1.rows[*].uid", "s1.rows"):
        v = verdict_of(claim("entity", "s1", src=src, uids=["n1"]), base, ctx)
        assert v.verdict == "unsupported", v.reason
        assert "do not appear" in v.reason


def test_a_real_uid_outside_the_cited_results_is_unsupported(base: Trace, ctx: OpContext) -> None:
    # n4 is reached by s1 but is no endpoint of n2's history (s4); n1 is in s4 but not in s1.rows[0]
    assert verdict_of(claim("entity", "s4", uids=["n4"]), base, ctx).verdict == "unsupported"
    assert verdict_of(claim("entity", "s1", uids=["n3", "n1"]), base, ctx).verdict == "unsupported"
    assert verdict_of(claim("entity", "s1", src="s1.rows[0].uid", uids=["n7"]), base, ctx).verdict == (
        "unsupported"
    )


def test_entity_unverifiable(base: Trace, ctx: OpContext) -> None:
    assert (
        kinds(
            verdicts(
                {
                    "text": "",
                    "claims": [
                        claim("entity", cid="c1", uids=["n2"]),
                        claim("entity", "s5", cid="c2", uids=["n2"]),
                        claim("entity", "s1", cid="c3", src="s4.rows[0].uid", uids=["n2"]),
                    ],
                },
                base,
                ctx,
            )
        )
        == ["unverifiable"] * 3
    )


def test_entity_without_store_checks_only_the_results(base: Trace) -> None:
    """Without a store context nothing says a uid is fabricated, but it must still be in the results."""
    assert verdict_of(claim("entity", "s1", uids=["n2"]), base, None).verdict == "supported"
    assert verdict_of(claim("entity", "s1", uids=["n99"]), base, None).verdict == "unsupported"


def test_labels_are_not_entities(base: Trace) -> None:
    """``label`` and ``rel_type`` strings are never uids, even without a store to look uids up in."""
    for word in ("user", "follows", "msg"):
        assert verdict_of(claim("entity", "s4", uids=[word]), base, None).verdict == "unsupported"


# -- ordering ---------------------------------------------------------------------------------------------
# s4.edges: [0] n2 -follows-> n7 [S/2, 7S/2); [1] n1 -msg-> n2 [S, S+1); [2] n2 -msg-> n3 [2S, 2S+1)


@pytest.mark.parametrize(
    ("a", "b", "relation"),
    [
        ("s4.edges[1]", "s4.edges[0]", "during"),
        ("s4.edges[0]", "s4.edges[1]", "contains"),
        ("s4.edges[1]", "s4.edges[2]", "before"),
        ("s4.edges[2]", "s4.edges[1]", "after"),
        ("s4.edges[0]", "s4.edges[0]", "equals"),
        ("s4.edges[0]", "s4.rows[0]", "during"),  # [S/2, 7S/2) during n2's corrected [0, 5S)
        ("s1.rows[0].earliest_arrival", "s4.edges[1]", "equals"),  # an instant t is [t, t+1)
        ("s1.rows[0].earliest_arrival", "s4.edges[2]", "before"),
    ],
)
def test_ordering_by_refs_is_recomputed(base: Trace, ctx: OpContext, a: str, b: str, relation: str) -> None:
    ev = dict.fromkeys([a.split(".")[0], b.split(".")[0]])
    v = verdict_of(claim("ordering", *ev, a=a, b=b, relation=relation), base, ctx)
    assert v.verdict == "supported", v.reason


@pytest.mark.parametrize(
    ("a", "b", "relation"),
    [
        ("s4.edges[0]", "s4.edges[1]", "during"),  # swapped: edges[0] contains edges[1]
        ("s4.edges[2]", "s4.edges[1]", "before"),  # swapped
        ("s4.edges[1]", "s4.edges[2]", "meets"),  # wrong relation
    ],
)
def test_ordering_with_swapped_operands_is_unsupported(
    base: Trace, ctx: OpContext, a: str, b: str, relation: str
) -> None:
    v = verdict_of(claim("ordering", "s4", a=a, b=b, relation=relation), base, ctx)
    assert v.verdict == "unsupported", v.reason
    assert f"not {relation}" in v.reason


def test_ordering_with_literal_operands(base: Trace, ctx: OpContext) -> None:
    edge0, edge1 = list(FOLLOWS), {"vt_s": S, "vt_e": S + 1}
    assert kinds(
        verdicts(
            {
                "text": "",
                "claims": [
                    claim("ordering", "s4", cid="c1", a=edge1, b=edge0, relation="during"),
                    claim("ordering", "s4", cid="c2", a=edge0, b=edge1, relation="during"),  # swapped
                    claim("ordering", "s4", cid="c3", a=[S, S + 2], b=edge0, relation="during"),  # not cited
                    claim("ordering", "s1", cid="c4", a=edge1, b=edge0, relation="during"),  # not in s1
                    claim("ordering", "s4", cid="c5", a="s4.edges[1]", b=edge0, relation="during"),  # mixed
                    claim("ordering", "s9", cid="c6", a=[0, 5], b=[3, 9], relation="overlaps"),  # echoed
                    claim("ordering", "s9", cid="c7", a=[3, 9], b=[0, 5], relation="overlaps"),
                ],
            },
            base,
            ctx,
        )
    ) == ["supported", "unsupported", "unsupported", "unsupported", "supported", "supported", "unsupported"]


def test_ordering_unverifiable(base: Trace, ctx: OpContext) -> None:
    assert (
        kinds(
            verdicts(
                {
                    "text": "",
                    "claims": [
                        claim("ordering", cid="c1", a=[0, 5], b=[3, 9], relation="overlaps"),
                        claim("ordering", "s4", cid="c2", a="s8.value", b="s4.edges[0]", relation="during"),
                        claim("ordering", "s5", cid="c3", a="s5.rows[0]", b=[0, 1], relation="after"),
                    ],
                },
                base,
                ctx,
            )
        )
        == ["unverifiable"] * 3
    )


def test_an_operand_that_is_no_interval_is_unsupported(base: Trace, ctx: OpContext) -> None:
    v = verdict_of(claim("ordering", "s1", a="s1.rows[0].uid", b="s1.rows[1]", relation="equals"), base, ctx)
    assert v.verdict == "unsupported"
    assert "not an interval" in v.reason


def test_a_literal_instant_is_not_grounded_by_the_echoed_limit(base: Trace, ctx: OpContext) -> None:
    assert base.envelope("s9")["args_echo"]["limit"] == 100  # type: ignore[index]
    v = verdict_of(claim("ordering", "s9", a=100, b=[3, 9], relation="after"), base, ctx)
    assert v.verdict == "unsupported", v.reason


def test_literals_are_not_grounded_by_the_arguments_of_a_diff(ctx: OpContext) -> None:
    trace = run(ctx, plan(step("s1", "compute", {"fn": "diff", "a": 6 * S, "b": S})))
    v = verdict_of(claim("ordering", "s1", a=6 * S, b=S, relation="after"), trace, ctx)
    assert v.verdict == "unsupported", v.reason


# -- temporal_pattern -------------------------------------------------------------------------------------


def pattern(value: Any, cmp: str | None = None, fld: str = "count", **args: Any) -> dict[str, Any]:
    assertion: dict[str, Any] = {"op": "count_temporal_motifs", "args": dict(MOTIF) | args, "field": fld}
    assertion["value"] = value
    if cmp is not None:
        assertion["cmp"] = cmp
    return claim("temporal_pattern", "s7", assertion=assertion)


@pytest.mark.parametrize(
    "c",
    [
        pattern(1),
        pattern(1, "=="),
        pattern(0, ">"),
        pattern(1, ">="),
        pattern(2, "<"),
        pattern(5, "!="),
        pattern(7, fld="n_events_in_window"),
        pattern(0, motif="M_2node_pingpong"),
        pattern(0, window={"t_a": 0, "t_b": 3 * S}),  # the third event is at 3S
    ],
)
def test_pattern_reexecution_supported(base: Trace, ctx: OpContext, c: dict[str, Any]) -> None:
    v = verdict_of(c, base, ctx)
    assert v.verdict == "supported", v.reason
    assert "re-executed count_temporal_motifs" in v.reason


@pytest.mark.parametrize(
    "c",
    [pattern(2), pattern(0), pattern(1, "<"), pattern(1, "!="), pattern(1, delta=S), pattern(1, fld="rows")],
)
def test_pattern_reexecution_unsupported(base: Trace, ctx: OpContext, c: dict[str, Any]) -> None:
    assert verdict_of(c, base, ctx).verdict == "unsupported"


@pytest.mark.parametrize(
    "c",
    [
        pattern(1, motif="M_no_such_motif"),  # the operator refuses its arguments
        pattern(1, window={"t_a": 5, "t_b": 1}),
        pattern(1, node_filter=["n1", "n99"]),
        claim("temporal_pattern", "s7", assertion={"op": "no_such_op", "args": {}, "field": "x", "value": 1}),
        pattern(1) | {"evidence": []},
        pattern(1) | {"evidence": ["s6"]},
    ],
)
def test_pattern_unverifiable(base: Trace, ctx: OpContext, c: dict[str, Any]) -> None:
    v = verdict_of(c, base, ctx)
    assert v.verdict == "unverifiable", v.reason


def test_pattern_without_a_store_is_unverifiable(base: Trace) -> None:
    v = verdict_of(pattern(1), base, None)
    assert v.verdict == "unverifiable"
    assert "needs the store" in v.reason


def test_pattern_reexecutes_on_the_store_not_the_trace(base: Trace, ctx: OpContext) -> None:
    """The assertion is checked on the store even when its window differs from the cited step's."""
    assert base.resolved_args("s7")["window"] == W  # type: ignore[index]
    assert verdict_of(pattern(0, window={"t_a": 4 * S, "t_b": 10 * S}), base, ctx).verdict == "supported"
