"""Truncation taint: which reads of a cut page mark a step ``upstream_truncated``, how taint travels down a
chain, ref lists cut at an argument's ``maxItems`` / ``max_ref_items``, the refusal of a reducing compute
over incomplete input, and the ``taint=False`` ablation (which gets the wrong number on purpose).
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.execute.executor import Trace
from engine.operators.context import OpContext
from engine.operators.registry import get_operator
from engine.plan.model import Plan

from ._support import N_REACHED, REACHED, plan, reach, ref, run, snapshot, statuses, step

PAGE = 2  # the cut page: the first two of the five reachable nodes
PAGE_UIDS = [u for u, _ in REACHED[:PAGE]]
ALL_UIDS = [u for u, _ in REACHED]


def _rec(trace: Trace, sid: str) -> Any:
    rec = trace.record(sid)
    assert rec is not None, sid
    return rec


def tainted(trace: Trace) -> dict[str, bool]:
    return {r.id: r.upstream_truncated for r in trace.steps}


def _consumer(args_ref: dict[str, Any], limit: int = PAGE) -> Plan:
    return plan(
        step("s1", "temporal_reachability", reach(limit)), step("s2", "snapshot_subgraph", args_ref, "s1")
    )


# -- which reads are tainted -----------------------------------------------------------------------------


@pytest.mark.parametrize("producer", ["temporal_reachability", "snapshot_subgraph"])
def test_projecting_a_cut_page_taints_the_consumer(ctx: OpContext, producer: str) -> None:
    if producer == "temporal_reachability":
        s1 = step("s1", producer, reach(PAGE))
        proj = "s1.rows[*].uid"
    else:  # a - c - d at t 3 within two hops: three nodes, cut to one
        s1 = step("s1", producer, {**snapshot(["a"], hops=2), "limit": 1})
        proj = "s1.nodes[*].uid"
    trace = run(ctx, plan(s1, step("s2", "snapshot_subgraph", snapshot(ref(proj)), "s1")))
    p, c = _rec(trace, "s1"), _rec(trace, "s2")
    assert p.ok and p.truncated and not p.upstream_truncated
    assert p.rows is not None and p.rows_total is not None
    assert c.ok and c.upstream_truncated and c.tainted and not c.truncated
    assert c.reads == [{"ref": proj, "at": "args.seeds", "truncated": True}]
    assert c.ref_cuts == []


def test_reading_the_whole_cut_list_taints(ctx: OpContext) -> None:
    select = {"fn": "filter", "input": ref("s1.rows"), "field": "earliest_arrival", "cmp": ">=", "value": 0}
    trace = run(
        ctx, plan(step("s1", "temporal_reachability", reach(PAGE)), step("s2", "compute", select, "s1"))
    )
    s2 = _rec(trace, "s2")
    assert s2.upstream_truncated
    assert s2.reads == [{"ref": "s1.rows", "at": "args.input", "truncated": True}]


def test_reading_only_the_total_of_a_cut_page_is_not_tainted(ctx: OpContext) -> None:
    total = {"fn": "diff", "a": ref("s1.rows_total"), "b": 1}
    trace = run(
        ctx, plan(step("s1", "temporal_reachability", reach(PAGE)), step("s2", "compute", total, "s1"))
    )
    s2 = _rec(trace, "s2")
    assert s2.ok and not s2.upstream_truncated
    assert s2.reads == [{"ref": "s1.rows_total", "at": "args.a", "truncated": False}]
    assert trace.payload("s2")["value"] == N_REACHED - 1  # type: ignore[index]


def test_an_index_inside_the_page_is_not_tainted(ctx: OpContext) -> None:
    trace = run(ctx, _consumer(snapshot([ref("s1.rows[0].uid"), ref("s1.rows[1].uid")])))
    s2 = _rec(trace, "s2")
    assert s2.ok and not s2.upstream_truncated
    assert [r["truncated"] for r in s2.reads] == [False, False]
    assert trace.resolved_args("s2") == snapshot(PAGE_UIDS)


def test_an_index_beyond_the_cut_page_is_e_limit(ctx: OpContext) -> None:
    trace = run(ctx, _consumer(snapshot([ref(f"s1.rows[{PAGE}].uid")])))
    assert statuses(trace) == {"s1": "ok", "s2": "error"}
    err = _rec(trace, "s2").error
    assert err["error"] == "E_LIMIT" and err["details"]["total"] == N_REACHED
    # on a complete page the same index is just an element
    assert run(ctx, _consumer(snapshot([ref(f"s1.rows[{PAGE}].uid")]), limit=100)).status == "ok"


def test_a_complete_page_taints_nothing(ctx: OpContext) -> None:
    trace = run(ctx, _consumer(snapshot(ref("s1.rows[*].uid")), limit=N_REACHED))
    assert not _rec(trace, "s1").truncated
    assert tainted(trace) == {"s1": False, "s2": False}
    assert trace.resolved_args("s2") == snapshot(ALL_UIDS)


def test_taint_is_transitive_through_a_chain(ctx: OpContext) -> None:
    trace = run(
        ctx,
        plan(
            step("s1", "temporal_reachability", reach(PAGE)),
            step("s2", "snapshot_subgraph", snapshot(ref("s1.rows[*].uid")), "s1"),
            step("s3", "compute", {"fn": "diff", "a": ref("s2.rows_total"), "b": 0}, "s2"),
            step("s4", "compute", {"fn": "diff", "a": ref("s3.value"), "b": 0}, "s3"),
            step("s5", "compute", {"fn": "diff", "a": ref("s1.rows_total"), "b": 0}, "s1"),
        ),
    )
    assert trace.status == "ok"
    # s3 reads only an exact total, but of a step that rests on a cut page
    assert tainted(trace) == {"s1": False, "s2": True, "s3": True, "s4": True, "s5": False}
    assert _rec(trace, "s3").reads == [{"ref": "s2.rows_total", "at": "args.a", "truncated": True}]


# -- ref lists cut at the argument's capacity --------------------------------------------------------------


def test_a_ref_list_longer_than_max_ref_items_is_cut_and_taints(ctx: OpContext) -> None:
    trace = run(ctx, _consumer(snapshot(ref("s1.rows[*].uid")), limit=100), max_ref_items=3)
    s1, s2 = _rec(trace, "s1"), _rec(trace, "s2")
    assert not s1.truncated and s2.ok
    assert s2.ref_cuts == [{"at": "args.seeds", "ref": "s1.rows[*].uid", "kept": 3, "total": N_REACHED}]
    assert s2.upstream_truncated
    assert s2.reads == [{"ref": "s1.rows[*].uid", "at": "args.seeds", "truncated": True}]
    assert trace.resolved_args("s2") == snapshot(ALL_UIDS[:3])


def test_a_ref_list_exactly_max_ref_items_long_is_not_cut(ctx: OpContext) -> None:
    trace = run(ctx, _consumer(snapshot(ref("s1.rows[*].uid")), limit=100), max_ref_items=N_REACHED)
    assert _rec(trace, "s2").ref_cuts == [] and not _rec(trace, "s2").upstream_truncated


def test_a_ref_list_longer_than_the_arguments_max_items_is_cut(ctx: OpContext) -> None:
    """``seeds`` accepts at most 10,000 uids: a 10,001-element list (one element of a page) is cut to that
    even when ``max_ref_items`` would allow more."""
    big = ["a"] * 10_000 + ["b"]
    trace = run(
        ctx,
        plan(
            step("s1", "compute", {"fn": "topk", "input": [{"x": 1, "seeds": big}], "field": "x", "k": 1}),
            step("s2", "snapshot_subgraph", snapshot(ref("s1.rows[0].seeds")), "s1"),
        ),
        max_ref_items=50_000,
    )
    s2 = _rec(trace, "s2")
    assert s2.ok, s2.error
    assert s2.ref_cuts == [{"at": "args.seeds", "ref": "s1.rows[0].seeds", "kept": 10_000, "total": 10_001}]
    assert s2.upstream_truncated and not _rec(trace, "s1").tainted
    assert trace.resolved_args("s2")["seeds"] == ["a"] * 10_000  # type: ignore[index]


def test_a_count_over_a_cut_ref_list_is_refused(ctx: OpContext) -> None:
    trace = run(
        ctx,
        plan(
            step("s1", "temporal_reachability", reach()),
            step("s2", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1"),
        ),
        max_ref_items=3,
    )
    assert statuses(trace) == {"s1": "ok", "s2": "refused"}
    assert _rec(trace, "s2").error["details"]["reason"] == "truncated_input"


# -- reducing computes over incomplete input ---------------------------------------------------------------


def _count_plan(limit: int, fn: str = "count", field: str | None = None) -> Plan:
    args: dict[str, Any] = {"fn": fn, "input": ref("s1.rows")}
    if field is not None:
        args["field"] = field
    if fn == "quantile":
        args["q"] = 0.9
    if fn == "group":  # per arrival time, how many: a page's groups are not the groups
        args.pop("field")
        args.update(by=field, aggregates=[{"fn": "count"}])
    return plan(
        step("s1", "temporal_reachability", reach(limit)),
        step("s2", "compute", args, "s1"),
        step("s3", "compute", {"fn": "diff", "a": ref("s2.value"), "b": 0}, "s2"),
        step("s4", "compute", {"fn": "diff", "a": ref("s1.rows_total"), "b": 0}, "s1"),
        answer="s2.value",
        kind="count",
    )


def test_a_count_over_a_truncated_page_is_refused(ctx: OpContext) -> None:
    trace = run(ctx, _count_plan(PAGE))
    assert statuses(trace) == {"s1": "ok", "s2": "refused", "s3": "skipped", "s4": "ok"}
    err = _rec(trace, "s2").error
    assert err["error"] == "E_UPSTREAM"
    assert err["details"]["reason"] == "truncated_input" and err["details"]["reads"] == ["s1.rows"]
    assert _rec(trace, "s2").envelope_digest is None and _rec(trace, "s2").result_digest is None
    s3 = _rec(trace, "s3")
    assert s3.error["error"] == "E_UPSTREAM" and s3.error["details"]["failed"] == ["s2"]
    assert trace.payload("s4")["value"] == N_REACHED  # type: ignore[index]  # the exact total is fine
    assert trace.status == "partial"
    answer = trace.answer()
    assert answer is not None and "value" not in answer and "error" in answer


def test_a_count_over_a_complete_page_is_the_right_count(ctx: OpContext) -> None:
    trace = run(ctx, _count_plan(100))
    assert trace.status == "ok"
    assert not any(r.tainted for r in trace.steps)
    assert trace.payload("s2")["value"] == N_REACHED  # type: ignore[index]
    assert trace.answer() == {"kind": "count", "from": "s2.value", "value": N_REACHED, "truncated": False}


def test_with_taint_off_the_count_is_the_count_of_the_page(ctx: OpContext) -> None:
    trace = run(ctx, _count_plan(PAGE), taint=False)
    assert trace.status == "ok"
    assert not any(r.upstream_truncated for r in trace.steps)
    assert _rec(trace, "s1").truncated  # the producer's own page is still reported as cut
    assert trace.payload("s2")["value"] == PAGE != N_REACHED  # type: ignore[index]  # the wrong number
    assert trace.answer() == {"kind": "count", "from": "s2.value", "value": PAGE, "truncated": False}
    assert trace.config["taint"] is False


@pytest.mark.parametrize(
    ("fn", "field"),
    [("sum", "earliest_arrival"), ("max", "earliest_arrival"), ("mean", "earliest_arrival"),
     ("median", "earliest_arrival"), ("min", "earliest_arrival"), ("topk", "earliest_arrival"),
     ("quantile", "earliest_arrival"), ("distinct", "earliest_arrival"), ("group", "earliest_arrival")],
)  # fmt: skip
def test_every_reducer_over_a_truncated_page_is_refused(ctx: OpContext, fn: str, field: str) -> None:
    assert get_operator("compute").traits.reduces_list({"fn": fn})
    trace = run(ctx, _count_plan(PAGE, fn, field))
    assert _rec(trace, "s2").status == "refused"
    assert _rec(trace, "s2").error["details"]["reason"] == "truncated_input"
    assert run(ctx, _count_plan(100, fn, field)).record("s2").ok  # type: ignore[union-attr]


def test_a_count_of_a_filter_of_a_cut_page_is_not_a_number(ctx: OpContext) -> None:
    """Counting what a filter selected from a page would count a page's selection: s3 is refused (or,
    should the filter itself be refused, skipped); it never returns a number."""
    trace = run(
        ctx,
        plan(
            step("s1", "temporal_reachability", reach(PAGE)),
            step("s2", "compute", {"fn": "filter", "input": ref("s1.rows"), "field": "earliest_arrival",
                                   "cmp": ">", "value": 0}, "s1"),
            step("s3", "compute", {"fn": "count", "input": ref("s2.rows")}, "s2"),
        ),
    )  # fmt: skip
    s2, s3 = _rec(trace, "s2"), _rec(trace, "s3")
    assert s2.upstream_truncated
    assert s3.status in ("refused", "skipped") and s3.envelope_digest is None
    if s2.ok:
        assert s3.status == "refused" and s3.error["details"]["reads"] == ["s2.rows"]


@pytest.mark.parametrize(
    "args",
    [
        {"fn": "union", "a": ref("s1.rows[*].uid"), "b": []},
        {"fn": "join", "a": ref("s1.rows"), "b": ref("s1.rows"), "on": "uid"},
    ],
    ids=["union", "join"],
)
def test_a_row_count_over_a_truncated_page_is_refused(ctx: OpContext, args: dict[str, Any]) -> None:
    p = plan(step("s1", "temporal_reachability", reach(PAGE)), step("s2", "compute", args, "s1"))
    complete = run(ctx, plan(step("s1", "temporal_reachability", reach()), step("s2", "compute", args, "s1")))
    assert complete.payload("s2")["value"] == N_REACHED  # type: ignore[index]  # value is the count
    trace = run(ctx, p)
    s2 = _rec(trace, "s2")
    # got: status "ok", value == 2 (the page's count) instead of 5
    assert s2.status == "refused", (s2.status, trace.payload("s2"))
    assert s2.error["details"]["reason"] == "truncated_input"


@pytest.mark.parametrize(
    "args",
    [
        {"fn": "filter", "input": ref("s1.rows"), "field": "earliest_arrival", "cmp": ">=", "value": 0},
        {"fn": "derive", "input": ref("s1.rows"), "expr": {"op": "mul", "left": "earliest_arrival",
                                                            "right": 2}, "as": "x"},
    ],
    ids=["filter", "derive"],
)  # fmt: skip
def test_a_per_row_fn_over_a_truncated_page_runs_and_stays_tainted(
    ctx: OpContext, args: dict[str, Any]
) -> None:
    """filter and derive look at one row at a time: over a cut page they give exactly the page's rows
    (declared through ``Traits.reduces``, which leaves them out), and the truncation is carried forward:
    the step is tainted, an answer from it is marked truncated, and a count over its rows is refused."""
    traits = get_operator("compute").traits
    assert not traits.reduces_list(args) and traits.reduces_list({**args, "fn": "topk"})
    whole = run(ctx, plan(step("s1", "temporal_reachability", reach()), step("s2", "compute", args, "s1")))
    trace = run(
        ctx,
        plan(
            step("s1", "temporal_reachability", reach(PAGE)),
            step("s2", "compute", args, "s1"),
            step("s3", "compute", {"fn": "count", "input": ref("s2.rows")}, "s2"),
            answer="s2.rows",
            kind="rows",
        ),
    )
    s2 = _rec(trace, "s2")
    assert s2.ok and s2.upstream_truncated and s2.tainted
    got = trace.payload("s2")["rows"]  # type: ignore[index]
    assert len(got) == PAGE < N_REACHED and got == whole.payload("s2")["rows"][:PAGE]  # type: ignore[index]
    assert _rec(trace, "s3").status == "refused"
    assert _rec(trace, "s3").error["details"]["reads"] == ["s2.rows"]
    assert trace.answer()["truncated"] is True  # type: ignore[index]


# -- the ablation switch -----------------------------------------------------------------------------------


def test_with_taint_off_nothing_is_upstream_truncated(ctx: OpContext) -> None:
    p = plan(
        step("s1", "temporal_reachability", reach(PAGE)),
        step("s2", "snapshot_subgraph", snapshot(ref("s1.rows[*].uid")), "s1"),
        step("s3", "compute", {"fn": "diff", "a": ref("s2.rows_total"), "b": 0}, "s2"),
        step("s4", "temporal_reachability", reach()),
        step("s5", "snapshot_subgraph", snapshot(ref("s4.rows[*].uid")), "s4"),
        step("s6", "compute", {"fn": "count", "input": ref("s5.nodes")}, "s5"),
    )
    on = run(ctx, p, max_ref_items=3)
    assert tainted(on) == {"s1": False, "s2": True, "s3": True, "s4": False, "s5": True, "s6": True}
    assert statuses(on)["s6"] == "refused"
    off = run(ctx, p, max_ref_items=3, taint=False)
    assert off.status == "ok"
    assert not any(r.upstream_truncated for r in off.steps)
    # the cut itself still happens and is still recorded
    assert _rec(off, "s5").ref_cuts == _rec(on, "s5").ref_cuts != []
    assert off.digest != on.digest
