"""Claims over incomplete evidence (a producer's page cut by ``limit``) and over the wrong belief state (a
value read at the current belief checked against a plan pinned to an ``as_of_tt`` before a correction)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tgms.engine.claims.answer import parse_answer
from tgms.engine.claims.gate import gate
from tgms.engine.claims.reporter import mechanical_answer
from tgms.engine.claims.verifier import VerifyConfig
from tgms.engine.execute.executor import ExecConfig, Trace
from tgms.engine.operators.context import OpContext
from tgms.engine.plan.model import build_plan
from tgms.engine.store import Store

from ._support import (
    MOTIF,
    N_REACHED,
    TT_BEFORE,
    S,
    claim,
    history,
    kinds,
    plan,
    raw_plan,
    reach,
    ref,
    run,
    step,
    verdict_of,
    verdicts,
)

PAGE = 2  # the cut page of s1: 2 of the N_REACHED rows (n2, n7)
#: the snapshot at S seeded by the page: n1 -msg-> n2 and n2 -follows-> n7 are valid then
SNAP_NODES = [("n2", 0), ("n7", 0), ("n1", 1)]
NO_TAINT = VerifyConfig(taint=False)


def cut_plan() -> Any:
    """s1 cut by its limit; s2 a snapshot seeded by the page (tainted through [*]); s3 a count over the
    page (it reads s1's whole list while taint is on; the page's count in the ablation); s4 a
    non-reducing compute over s2's total (runs, tainted); s5 an untainted step; s6 a count over s2's
    nodes (refused: s2 rests on a cut page, so its whole result is incomplete too)."""
    return plan(
        step("s1", "temporal_reachability", reach(limit=PAGE)),
        step("s2", "snapshot_subgraph", {"seeds": ref("s1.rows[*].uid"), "t_valid": S}, "s1"),
        step("s3", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1"),
        step("s4", "compute", {"fn": "diff", "a": ref("s2.nodes_total"), "b": 0}, "s2"),
        step("s5", "count_temporal_motifs", dict(MOTIF)),
        step("s6", "compute", {"fn": "count", "input": ref("s2.nodes")}, "s2"),
    )


@pytest.fixture(scope="module")
def cut(store: Store) -> Trace:
    return run(OpContext(store), cut_plan())


@pytest.fixture(scope="module")
def cut_untainted(store: Store) -> Trace:
    """The same plan with taint propagation off (the ablation): the count of the page is computed."""
    return run(OpContext(store), cut_plan(), ExecConfig(taint=False))


def test_cut_trace_outcomes(cut: Trace, cut_untainted: Trace) -> None:
    s1 = cut.record("s1")
    assert s1 is not None and (s1.rows, s1.rows_total, s1.truncated) == (PAGE, N_REACHED, True)
    assert {r.id: (r.status, r.upstream_truncated) for r in cut.steps} == {
        "s1": ("ok", False), "s2": ("ok", True), "s3": ("ok", False), "s4": ("ok", True),
        "s5": ("ok", False), "s6": ("refused", True),
    }  # fmt: skip
    assert cut.payload("s3")["value"] == N_REACHED  # read past the page
    assert [(n["uid"], n["hop"]) for n in cut.payload("s2")["nodes"]] == SNAP_NODES
    assert cut.payload("s4")["value"] == len(SNAP_NODES)
    assert all(r.status == "ok" for r in cut_untainted.steps)
    assert not any(r.upstream_truncated for r in cut_untainted.steps)
    assert cut_untainted.payload("s3")["value"] == PAGE  # the count of a page, not of the result


@pytest.mark.parametrize(
    "c",
    [
        claim("count", "s1", src="s1.rows", value=PAGE),  # the length of a cut list
        claim("count", "s2", src="s2.nodes_total", value=len(SNAP_NODES)),  # exact, over tainted input
        claim("value", "s4", src="s4.value", value=len(SNAP_NODES)),  # computed from a tainted step
        claim("count", "s4", value=len(SNAP_NODES)),
        claim("count", "s1", value=N_REACHED),  # without from: a cited step is truncated
        claim("entity", "s1", src="s1.rows[*].uid", uids=["n2", "n7"]),
        claim("entity", "s2", uids=["n1"]),  # tainted through [*]
        claim("entity", "s2", src="s2.nodes[0].uid", uids=["n2"]),  # an index, but s2 itself is tainted
    ],
)
def test_claims_over_a_cut_page_are_weakly_supported(cut: Trace, ctx: OpContext, c: dict[str, Any]) -> None:
    v = verdict_of(c, cut, ctx)
    assert (v.verdict, v.tainted) == ("weakly_supported", True), v.reason
    assert "incomplete" in v.reason
    off = verdict_of(c, cut, ctx, NO_TAINT)
    assert (off.verdict, off.tainted) == ("supported", True)  # the value-only ablation still sees it


@pytest.mark.parametrize(
    "c",
    [
        claim("count", "s1", src="s1.rows_total", value=N_REACHED),  # totals are exact
        claim("entity", "s1", src="s1.rows[1].uid", uids=["n7"]),  # an element inside the page is exact
        claim("value", "s1", src="s1.truncated", value=True),
        claim("temporal_pattern", "s5", assertion={"op": "count_temporal_motifs", "args": dict(MOTIF),
                                                   "field": "count", "value": 1}),
        claim("count", "s3", src="s3.value", value=N_REACHED),  # a count that read past the page
    ],
)  # fmt: skip
def test_exact_reads_of_a_cut_page_are_supported(cut: Trace, ctx: OpContext, c: dict[str, Any]) -> None:
    v = verdict_of(c, cut, ctx)
    assert (v.verdict, v.tainted) == ("supported", False), v.reason


def test_a_pattern_citing_a_tainted_step_is_weakly_supported(cut: Trace, ctx: OpContext) -> None:
    a = {"op": "count_temporal_motifs", "args": dict(MOTIF), "field": "count", "value": 1}
    assert verdict_of(claim("temporal_pattern", "s2", assertion=a), cut, ctx).verdict == "weakly_supported"


def test_the_refused_count_is_unverifiable(cut: Trace, ctx: OpContext) -> None:
    rec = cut.record("s6")
    assert rec is not None and rec.error is not None and rec.error["details"]["reason"] == "truncated_input"
    v = verdict_of(claim("count", "s6", src="s6.value", value=len(SNAP_NODES)), cut, ctx)
    assert v.verdict == "unverifiable"
    assert "refused" in v.reason


def test_the_taint_ablation_makes_the_count_of_a_page_supported(cut_untainted: Trace, ctx: OpContext) -> None:
    """With ExecConfig(taint=False) the trace no longer knows s3 read a cut page: the count of the page
    is *supported* under either verifier config, and the true count is not — the failure the taint
    prevents."""
    page = claim("count", "s3", src="s3.value", value=PAGE)
    true = claim("count", "s3", src="s3.value", value=N_REACHED)
    for cfg in (None, NO_TAINT):
        assert verdict_of(page, cut_untainted, ctx, cfg).verdict == "supported"
        assert verdict_of(true, cut_untainted, ctx, cfg).verdict == "unsupported"
    # a read the verifier itself sees cut is still capped: that does not depend on the executor
    lst = claim("count", "s1", src="s1.rows", value=PAGE)
    assert verdict_of(lst, cut_untainted, ctx).verdict == "weakly_supported"
    assert verdict_of(lst, cut_untainted, ctx, NO_TAINT).verdict == "supported"


def test_a_weakly_supported_claim_is_emitted_by_the_gate(cut: Trace, ctx: OpContext) -> None:
    ans = parse_answer(
        {"text": "n2 and n7.", "answer": {"kind": "entity_set", "value": ["n2", "n7"]},
         "claims": [claim("entity", "s1", src="s1.rows[*].uid", uids=["n2", "n7"])]}
    )  # fmt: skip
    out = gate(ans, verdicts(ans, cut, ctx))
    assert out["emitted"] and out["verdicts"][0]["verdict"] == "weakly_supported"
    assert out["text"] == "n2 and n7."


# -- the wrong belief state -------------------------------------------------------------------------------


def pinned_raw(answer: str, kind: str) -> dict[str, Any]:
    """n2's history as believed before its correction (one version, score 2)."""
    return raw_plan(step("s1", "entity_history", history(as_of_tt=TT_BEFORE)), answer=answer, kind=kind)


def control_raw(raw: dict[str, Any]) -> dict[str, Any]:
    """The same plan with ``as_of_tt`` removed: the current belief (two versions, score 20 on [0, 5S))."""
    out = copy.deepcopy(raw)
    for s in out["steps"]:
        s["args"].pop("as_of_tt", None)
    return out


@pytest.mark.parametrize(
    ("answer", "kind", "pinned", "current"),
    [
        ("s1.rows_total", "count", 1, 2),
        ("s1.rows", "count", 1, 2),
        ("s1.rows[0].props.score", "value", 2, 20),
        ("s1.rows[0]", "interval", [0, 2**62], [0, 5_000_000]),
    ],
)
def test_a_value_from_the_current_belief_is_unsupported_against_the_pinned_trace(
    ctx: OpContext, answer: str, kind: str, pinned: Any, current: Any
) -> None:
    raw = pinned_raw(answer, kind)
    trace = run(ctx, build_plan(raw))
    control = run(ctx, build_plan(control_raw(raw)))
    assert trace.answer()["value"] is not None  # type: ignore[index]
    right, wrong = mechanical_answer(trace), mechanical_answer(control)
    assert (right["answer"]["value"], wrong["answer"]["value"]) == (pinned, current)
    # the control's claim, citing the pinned trace's steps: contradicted by the belief the plan asked for
    v_wrong = verdicts(wrong, trace, ctx)
    assert kinds(v_wrong) == ["unsupported"], v_wrong
    assert kinds(verdicts(right, trace, ctx)) == ["supported"]
    assert kinds(verdicts(wrong, control, ctx)) == ["supported"]  # it is right about the control
    assert gate(parse_answer(wrong), v_wrong)["abstained"]


def test_the_pinned_trace_is_not_moved_by_the_correction(ctx: OpContext) -> None:
    """Both belief states are in the store at once; only ``as_of_tt`` selects between them."""
    raw = pinned_raw("s1.rows[0].props.score", "value")
    a, b = run(ctx, build_plan(raw)), run(ctx, build_plan(raw))
    assert a.digest == b.digest
    assert a.payload("s1")["rows"][0]["props"] == {"score": 2}
    assert run(ctx, build_plan(control_raw(raw))).payload("s1")["rows"][0]["props"] == {"score": 20}


@pytest.fixture(scope="module")
def per_row(store: Store) -> Trace:
    """Per-row computes over the cut page of s1 read its whole list (s2 filter, s3 derive: exact); over a
    producer resting on a cut page (s4, seeded by the page) they run and carry the cut forward (s5)."""
    keep = {"fn": "filter", "input": ref("s1.rows"), "field": "earliest_arrival", "cmp": ">=", "value": 0}
    twice = {"fn": "derive", "input": ref("s1.rows"), "expr": {"op": "mul", "left": "earliest_arrival",
             "right": 2}, "as": "x"}  # fmt: skip
    hops = {"fn": "filter", "input": ref("s4.nodes"), "field": "hop", "cmp": ">=", "value": 0}
    return run(
        OpContext(store),
        plan(
            step("s1", "temporal_reachability", reach(limit=PAGE)),
            step("s2", "compute", keep, "s1"),
            step("s3", "compute", twice, "s1"),
            step("s4", "snapshot_subgraph", {"seeds": ref("s1.rows[*].uid"), "t_valid": S}, "s1"),
            step("s5", "compute", hops, "s4"),
        ),
    )


PER_ROW_OUTCOMES = {
    "s1": ("ok", False), "s2": ("ok", False), "s3": ("ok", False), "s4": ("ok", True), "s5": ("ok", True),
}  # fmt: skip


@pytest.mark.parametrize(
    "c",
    [
        claim("count", "s2", src="s2.value", value=N_REACHED),  # the whole list's count
        claim("count", "s3", src="s3.rows_total", value=N_REACHED),
        claim("entity", "s3", src="s3.rows[0].uid", uids=["n2"]),
    ],
)
def test_claims_over_a_per_row_compute_of_a_cut_page_are_supported(
    per_row: Trace, ctx: OpContext, c: dict[str, Any]
) -> None:
    assert {r.id: (r.status, r.upstream_truncated) for r in per_row.steps} == PER_ROW_OUTCOMES
    v = verdict_of(c, per_row, ctx)
    assert (v.verdict, v.tainted) == ("supported", False), v.reason


@pytest.mark.parametrize(
    "c",
    [
        claim("count", "s5", src="s5.value", value=len(SNAP_NODES)),  # counted from a page's snapshot
        claim("entity", "s5", src="s5.rows[*].uid", uids=[u for u, _ in SNAP_NODES]),
        claim("entity", "s5", src="s5.rows[0].uid", uids=["n2"]),  # an index into a tainted step
    ],
)
def test_claims_over_a_per_row_compute_of_a_tainted_producer_are_weakly_supported(
    per_row: Trace, ctx: OpContext, c: dict[str, Any]
) -> None:
    v = verdict_of(c, per_row, ctx)
    assert (v.verdict, v.tainted) == ("weakly_supported", True), v.reason
