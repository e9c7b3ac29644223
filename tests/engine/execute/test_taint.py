"""Truncation taint: which reads of a cut page mark a step ``upstream_truncated``, how taint travels down a
chain, ref lists cut at an argument's ``maxItems`` / ``max_ref_items``, compute's full reads past a cut
page (``Traits.full_input``), the refusal of a reducing compute over incomplete input (a tainted
producer), and the ``taint=False`` ablation (which gets the wrong number on purpose).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tgms.engine.canonical import digest
from tgms.engine.execute.executor import Trace
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.registry import get_operator
from tgms.engine.plan.model import Plan

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


def test_a_compute_reads_the_whole_cut_list(ctx: OpContext) -> None:
    """compute reads whole lists: a ref to a cut page resolves against the producer's full result, and
    the read is recorded with the length and digest of what it read."""
    select = {"fn": "filter", "input": ref("s1.rows"), "field": "earliest_arrival", "cmp": ">=", "value": 0}
    whole = run(ctx, plan(step("s1", "temporal_reachability", reach()), step("s2", "compute", select, "s1")))
    trace = run(
        ctx, plan(step("s1", "temporal_reachability", reach(PAGE)), step("s2", "compute", select, "s1"))
    )
    s2 = _rec(trace, "s2")
    assert _rec(trace, "s1").truncated and s2.ok and not s2.upstream_truncated
    rows = whole.payload("s1")["rows"]  # type: ignore[index]
    assert len(rows) == N_REACHED
    full = {"items": N_REACHED, "digest": digest(rows)}
    assert s2.reads == [{"ref": "s1.rows", "at": "args.input", "truncated": False, "full": full}]
    assert trace.payload("s2") == whole.payload("s2")
    assert trace.resolved_args("s2") == whole.resolved_args("s2")


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


def test_a_compute_list_is_bounded_by_max_full_items_not_max_ref_items(ctx: OpContext) -> None:
    """A compute step's lists are never cut (a cut list would give a page's count): ``max_ref_items``
    does not apply to them, and past ``max_full_items`` the step is refused with ``E_COST``."""
    p = plan(
        step("s1", "temporal_reachability", reach(PAGE)),
        step("s2", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1"),
    )
    ok = run(ctx, p, max_ref_items=3)
    assert statuses(ok) == {"s1": "ok", "s2": "ok"} and ok.payload("s2")["value"] == N_REACHED  # type: ignore[index]
    assert _rec(ok, "s2").ref_cuts == []
    trace = run(ctx, p, max_full_items=3)
    assert statuses(trace) == {"s1": "ok", "s2": "refused"}
    err = _rec(trace, "s2").error
    assert err["error"] == "E_COST" and err["details"]["stage"] == "input"
    assert (err["details"]["items"], err["details"]["max_items"]) == (N_REACHED, 3)
    assert run(ctx, p, max_full_items=N_REACHED).record("s2").ok  # type: ignore[union-attr]


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


def test_a_count_over_a_truncated_page_counts_the_whole_list(ctx: OpContext) -> None:
    trace = run(ctx, _count_plan(PAGE))
    assert statuses(trace) == {"s1": "ok", "s2": "ok", "s3": "ok", "s4": "ok"}
    assert _rec(trace, "s1").truncated and not any(r.upstream_truncated for r in trace.steps)
    assert trace.payload("s2")["value"] == N_REACHED  # type: ignore[index]
    assert trace.answer() == {"kind": "count", "from": "s2.value", "value": N_REACHED, "truncated": False}
    # the same answer, and the same result digests, as over a complete page
    whole = run(ctx, _count_plan(100))
    assert [r.result_digest for r in trace.steps][1:] == [r.result_digest for r in whole.steps][1:]


def _tainted_count_plan(fn: str, field: str | None) -> Plan:
    """A reducer over a producer that itself rests on a cut page (snapshot seeds projected from one): its
    whole result is incomplete too, so no full read can help."""
    args: dict[str, Any] = {"fn": fn, "input": ref("s2.nodes")}
    if field is not None:
        args["field"] = field
    if fn == "quantile":
        args["q"] = 0.9
    if fn == "group":
        args.pop("field")
        args.update(by=field, aggregates=[{"fn": "count"}])
    return plan(
        step("s1", "temporal_reachability", reach(PAGE)),
        step("s2", "snapshot_subgraph", {**snapshot(ref("s1.rows[*].uid"), hops=2), "limit": 1}, "s1"),
        step("s3", "compute", args, "s2"),
    )


def test_a_count_over_a_tainted_producer_is_refused(ctx: OpContext) -> None:
    trace = run(ctx, _tainted_count_plan("count", None))
    assert statuses(trace) == {"s1": "ok", "s2": "ok", "s3": "refused"}
    assert _rec(trace, "s2").upstream_truncated and _rec(trace, "s2").truncated
    err = _rec(trace, "s3").error
    assert err["error"] == "E_UPSTREAM"
    assert err["details"]["reason"] == "truncated_input" and err["details"]["reads"] == ["s2.nodes"]
    assert _rec(trace, "s3").envelope_digest is None and _rec(trace, "s3").result_digest is None


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
def test_every_reducer_over_a_truncated_page_reads_the_whole_list(
    ctx: OpContext, fn: str, field: str
) -> None:
    assert get_operator("compute").traits.reduces_list({"fn": fn})
    trace, whole = run(ctx, _count_plan(PAGE, fn, field)), run(ctx, _count_plan(100, fn, field))
    assert _rec(trace, "s2").ok and not _rec(trace, "s2").upstream_truncated
    assert _rec(trace, "s2").reads[0]["full"]["items"] == N_REACHED
    assert trace.payload("s2") == whole.payload("s2")
    # over a tainted producer the same reducer is refused
    tainted_trace = run(ctx, _tainted_count_plan(fn, "hop"))
    assert _rec(tainted_trace, "s3").status == "refused"
    assert _rec(tainted_trace, "s3").error["details"]["reason"] == "truncated_input"


def test_a_count_of_a_filter_of_a_cut_page_counts_the_whole_selection(ctx: OpContext) -> None:
    """A filter over a cut page selects from the whole list; its own page is cut (limit 1) and a count
    over it reads its whole selection in turn."""

    def p(limit: int) -> Plan:
        return plan(
            step("s1", "temporal_reachability", reach(limit)),
            step("s2", "compute", {"fn": "filter", "input": ref("s1.rows"), "field": "earliest_arrival",
                                   "cmp": ">", "value": 0, "limit": 1}, "s1"),
            step("s3", "compute", {"fn": "count", "input": ref("s2.rows")}, "s2"),
        )  # fmt: skip

    trace = run(ctx, p(PAGE))
    s2, s3 = _rec(trace, "s2"), _rec(trace, "s3")
    assert s2.ok and s2.truncated and not s2.upstream_truncated
    assert s3.ok and not s3.upstream_truncated and s3.reads[0]["full"]["items"] == N_REACHED - 1
    assert trace.payload("s3")["value"] == N_REACHED - 1  # type: ignore[index]  # every arrival but c's
    assert trace.payload("s3") == run(ctx, p(100)).payload("s3")


@pytest.mark.parametrize(
    "args",
    [
        {"fn": "union", "a": ref("s1.rows[*].uid"), "b": []},
        {"fn": "join", "a": ref("s1.rows"), "b": ref("s1.rows"), "on": "uid"},
    ],
    ids=["union", "join"],
)
def test_a_row_count_over_a_truncated_page_is_the_whole_count(ctx: OpContext, args: dict[str, Any]) -> None:
    p = plan(step("s1", "temporal_reachability", reach(PAGE)), step("s2", "compute", args, "s1"))
    complete = run(ctx, plan(step("s1", "temporal_reachability", reach()), step("s2", "compute", args, "s1")))
    assert complete.payload("s2")["value"] == N_REACHED  # type: ignore[index]  # value is the count
    trace = run(ctx, p)
    s2 = _rec(trace, "s2")
    # before full reads: refused (a page's count, 2, instead of 5)
    assert s2.ok and not s2.upstream_truncated, (s2.status, s2.error)
    assert trace.payload("s2") == complete.payload("s2")


@pytest.mark.parametrize(
    "args",
    [
        {"fn": "filter", "input": ref("s1.rows"), "field": "earliest_arrival", "cmp": ">=", "value": 0},
        {"fn": "derive", "input": ref("s1.rows"), "expr": {"op": "mul", "left": "earliest_arrival",
                                                            "right": 2}, "as": "x"},
    ],
    ids=["filter", "derive"],
)  # fmt: skip
def test_a_per_row_fn_over_a_truncated_page_gives_the_whole_lists_rows(
    ctx: OpContext, args: dict[str, Any]
) -> None:
    """filter and derive over a cut page run over the producer's whole list: their rows are those of
    the complete page, untainted; over a tainted producer they still run, tainted, and a count over
    their rows is refused."""
    traits = get_operator("compute").traits
    assert not traits.reduces_list(args) and traits.reduces_list({**args, "fn": "topk"})
    whole = run(ctx, plan(step("s1", "temporal_reachability", reach()), step("s2", "compute", args, "s1")))
    trace = run(
        ctx,
        plan(
            step("s1", "temporal_reachability", reach(PAGE)),
            step("s2", "compute", args, "s1"),
            answer="s2.rows",
            kind="rows",
        ),
    )
    s2 = _rec(trace, "s2")
    assert s2.ok and not s2.tainted
    assert trace.payload("s2") == whole.payload("s2")
    assert trace.answer()["truncated"] is False  # type: ignore[index]
    # snapshot nodes hold hop where reachability rows hold earliest_arrival
    on_tainted = json.loads(json.dumps(args).replace("earliest_arrival", "hop"))
    trace = run(
        ctx,
        plan(
            step("s1", "temporal_reachability", reach(PAGE)),
            step("s2", "snapshot_subgraph", {**snapshot(ref("s1.rows[*].uid")), "limit": 1}, "s1"),
            step("s3", "compute", {**on_tainted, "input": ref("s2.nodes")}, "s2"),
            step("s4", "compute", {"fn": "count", "input": ref("s3.rows")}, "s3"),
            answer="s3.rows",
            kind="rows",
        ),
    )
    assert statuses(trace) == {"s1": "ok", "s2": "ok", "s3": "ok", "s4": "refused"}
    assert _rec(trace, "s2").upstream_truncated and _rec(trace, "s3").upstream_truncated
    assert _rec(trace, "s3").reads[0]["truncated"] is True
    assert _rec(trace, "s4").error["details"]["reads"] == ["s3.rows"]
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
