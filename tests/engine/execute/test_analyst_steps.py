"""Issue 17's belief_changes, longest_temporal_path and compute join/derive inside plans: the executor
runs them, a join over a cut page reads the whole lists (compute's ``full_input``), and the plan verifier's
rules reach them through their markers and traits (no name switches)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.plan._plans import check
from tgms.engine.operators.context import OpContext
from tgms.engine.timeutil import OPEN_END

from ._support import REACHED, plan, reach, ref, run, statuses, step


def _payload(trace: Any, sid: str) -> dict[str, Any]:
    out = trace.payload(sid)
    assert isinstance(out, dict), statuses(trace)
    return out


def test_the_correction_is_found_and_counted(ctx: OpContext) -> None:
    changes = {"tt_from": 0, "tt_to": OPEN_END, "uid": "a", "kinds": ["corrected"]}
    p = plan(
        step("s1", "belief_changes", changes),
        step("s2", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1"),
        answer="s2.value",
        kind="count",
    )
    trace = run(ctx, p)
    (row,) = _payload(trace, "s1")["rows"]
    assert (row["before"]["props"], row["after"]["props"]) == ({"w": 1}, {"w": 9})  # a->b corrected
    assert trace.answer()["value"] == 1


def test_join_and_derive_over_producer_rows(ctx: OpContext) -> None:
    """Nodes reached from a and from b, joined on uid; then the difference of their arrivals."""
    both = {"fn": "join", "a": ref("s1.rows"), "b": ref("s2.rows"), "on": "uid"}
    delay = {"fn": "derive", "input": ref("s3.rows"), "expr": {"op": "sub", "left": "b_earliest_arrival",
             "right": "earliest_arrival"}, "as": "later_by"}  # fmt: skip
    p = plan(
        step("s1", "temporal_reachability", reach()),
        step("s2", "temporal_reachability", reach(src="b")),
        step("s3", "compute", both, "s1", "s2"),
        step("s4", "compute", delay, "s3"),
    )
    trace = run(ctx, p)
    rows = _payload(trace, "s4")["rows"]
    from_b = {r["uid"]: r["earliest_arrival"] for r in _payload(trace, "s2")["rows"]}
    want = [(u, from_b[u] - t) for u, t in REACHED if u in from_b]
    assert [(r["uid"], r["later_by"]) for r in rows] == want and want  # a's order; not empty


def test_a_join_over_a_cut_page_joins_the_whole_lists(ctx: OpContext) -> None:
    """A join reads both lists whole: over b's cut page it gives what it gives over b's complete page."""
    both = {"fn": "join", "a": ref("s1.rows"), "b": ref("s2.rows"), "on": "uid", "how": "anti"}
    got = {}
    for limit in (2, 100):
        p = plan(
            step("s1", "temporal_reachability", reach()),
            step("s2", "temporal_reachability", reach(limit=limit, src="b")),
            step("s3", "compute", both, "s1", "s2"),
        )
        trace = run(ctx, p)
        assert statuses(trace)["s3"] == "ok" and not trace.record("s3").upstream_truncated  # type: ignore[union-attr]
        got[limit] = _payload(trace, "s3")
    assert got[2] == got[100] and got[2]["rows"]  # a's nodes that b does not reach: not none


def test_longest_path_in_a_plan(ctx: OpContext) -> None:
    p = plan(
        step("s1", "longest_temporal_path", {"window": {"t_a": 0, "t_b": 100}, "src": "a"}),
        answer="s1.hops",
        kind="count",
    )
    trace = run(ctx, p)
    # a->b at 1, b->c at 2, c->d at 3, d->e at 4, e->f at 60 (a->c 'follows' [0, 50) is one hop only)
    assert trace.answer()["value"] == 5 and _payload(trace, "s1")["nodes"] == list("abcdef")


@pytest.mark.parametrize(
    ("s", "code", "field"),
    [
        (step("s1", "belief_changes", {"tt_from": 0, "tt_to": 10, "kinds": []}), "vacuous_arg", "args.kinds"),
        (step("s1", "longest_temporal_path", {"window": {"t_a": 0, "t_b": 9}, "rel_types": []}),
         "vacuous_arg", "args.rel_types"),
        (step("s1", "longest_temporal_path", {"window": {"t_a": 0, "t_b": 9}, "src": "zz"}),
         "grounding", "args.src"),
        (step("s1", "belief_changes", {"tt_from": 0, "tt_to": 10, "uid": "zz"}), "grounding", "args.uid"),
        (step("s1", "co_active", {"a_spec": {}, "b_spec": {}, "allen_relation": "meets", "gap": 5}),
         "arg_value", "args"),
    ],
)  # fmt: skip
def test_verifier_rules_reach_the_new_arguments(
    ctx: OpContext, s: dict[str, Any], code: str, field: str
) -> None:
    raw = {"plan_id": "p", "question": "q?", "steps": [s]}
    violations = [(v.code, v.field) for v in check(raw, ctx).violations]
    assert any(c == code and (f or "").startswith(field) for c, f in violations), violations


def test_a_yes_no_question_is_answered_by_compare_and_its_claim_verifies(ctx: OpContext) -> None:
    """ "Does a reach at least 2 nodes?": a count, then compare, then a boolean answer whose claim the
    verifier supports from the trace (issue 27, item 5)."""
    from tgms.engine.claims.reporter import mechanical_answer
    from tgms.engine.claims.verifier import verify_claims

    for threshold, want in ((2, True), (len(REACHED) + 1, False)):
        p = plan(
            step("s1", "temporal_reachability", reach()),
            step("s2", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1"),
            step("s3", "compute", {"fn": "compare", "a": ref("s2.value"), "b": threshold, "cmp": ">="}, "s2"),
            answer="s3.value",
            kind="boolean",
        )
        trace = run(ctx, p)
        assert trace.answer()["value"] is want, statuses(trace)
        answer = mechanical_answer(trace)
        assert answer["answer"]["value"] is want
        verdicts = verify_claims(answer, trace, ctx)
        assert verdicts and all(v.verdict == "supported" for v in verdicts), verdicts
