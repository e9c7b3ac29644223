"""The oracle path of :mod:`pipeline.tasks.crosscheck` against the fast executor, plan by plan.

One small synthetic store (with its correction epoch) serves every test; each plan's oracle answer must
equal the typed value of the fast path's answer, and an error must carry the fast path's error code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.sampling import counter_clock
from tgms.engine.claims.reporter import typed_value
from tgms.engine.execute.executor import ExecConfig, execute
from tgms.engine.ingest.build import build_store
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.oracle import ORACLES, OracleStore
from tgms.engine.operators.registry import get_operator, operator, registered
from tgms.engine.plan.model import build_plan
from tgms.pipeline.tasks.crosscheck import agree, oracle_answer, oracle_store_for

T0 = 1_704_067_200_000_000  # the generator's start, 2024-01-01T00:00:00Z
DAY = 86_400_000_000
WEEK = {"t_a": T0, "t_b": T0 + 7 * DAY}
W3 = {"t_a": T0 + DAY, "t_b": T0 + 4 * DAY}
FULL = 10_000
BUSY, OTHER = "s20", "s57"  # the two busiest sources of this seed


def ref(text: str) -> dict[str, str]:
    return {"$ref": text}


def step(sid: str, op: str, args: dict[str, Any], *deps: str) -> dict[str, Any]:
    return {"id": sid, "op": op, "args": args, "depends_on": list(deps)}


def plan(kind: str, src: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"plan_id": "p", "question": "", "steps": list(steps), "answer_spec": {"kind": kind, "from": src}}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OpContext, OracleStore]]:
    root: Path = tmp_path_factory.mktemp("crosscheck") / "store"
    knobs = {"n_rings": 4, "n_pingpongs": 4, "days": 14}
    store = build_store("synthetic", root, events=2000, nodes=60, seed=1, knobs=knobs, now=counter_clock())
    try:
        yield OpContext(store), oracle_store_for(store)
    finally:
        store.close()


def fast(p: dict[str, Any], ctx: OpContext) -> dict[str, Any]:
    """The fast path's typed answer ``{kind, value}``, or ``{kind, error: {code}}`` of the failing step."""
    trace = execute(build_plan(p), ctx, config=ExecConfig(check_cost=False))
    got = trace.answer()
    assert got is not None
    if "error" in got:
        bad = next((r for r in trace.steps if not r.ok), None)
        code = bad.error["error"] if bad is not None and bad.error else "answer"
        return {"kind": got["kind"], "error": {"code": code}}
    return {"kind": got["kind"], "value": typed_value(got["kind"], got["value"])}


def same(p: dict[str, Any], ctx: OpContext, ostore: OracleStore) -> dict[str, Any]:
    want, got = fast(p, ctx), oracle_answer(p, ostore)
    if "error" in want:
        assert "error" in got and got["error"]["code"] == want["error"]["code"], (p, want, got)
    else:
        assert got == want, f"plan {p}\n  fast:   {want}\n  oracle: {got}"
    return got


MOTIF = {"motif": "M_2node_pingpong", "delta": 3_600_000_000, "window": WEEK}
SINGLE = {
    "entity_history": plan(
        "count", "s1.edges_total", step("s1", "entity_history", {"uid": BUSY, "include_edges": True})
    ),
    "reachability": plan(
        "count", "s1.rows_total", step("s1", "temporal_reachability", {"src": BUSY, "window": W3})
    ),
    "motif_count": plan("count", "s1.count", step("s1", "count_temporal_motifs", MOTIF)),
    "metric": plan(
        "value",
        "s1.rows[0].value",
        step("s1", "graph_metric_timeseries", {"metric": "mean_out_degree", "window": WEEK, "stride": DAY}),
    ),
    "reciprocity": plan(
        "value",
        "s1.rows[0].value",
        step("s1", "graph_metric_timeseries", {"metric": "reciprocity", "window": W3, "stride": 3 * DAY}),
    ),
    "neighborhood": plan(
        "count",
        "s1.neighbors_gained_total",
        step("s1", "neighborhood_evolution", {"uid": BUSY, "t1": T0 + DAY, "t2": T0 + 8 * DAY}),
    ),
    "diff": plan(
        "count", "s1.nodes_added_total", step("s1", "diff_snapshots", {"t1": T0, "t2": T0 + 7 * DAY})
    ),
    "snapshot": plan(
        "entity_set",
        "s1.nodes[*].uid",
        step("s1", "snapshot_subgraph", {"seeds": [BUSY], "t_valid": T0 + 3 * DAY, "hops": 2}),
    ),
    "co_active": plan(
        "count",
        "s1.rows_total",
        step(
            "s1",
            "co_active",
            {
                "a_spec": {"rel_types": ["follows"]},
                "b_spec": {"rel_types": ["follows"]},
                "allen_relation": "overlaps",
            },
        ),
    ),
    "motif_instances": plan(
        "count", "s1.rows_total", step("s1", "find_temporal_motif_instances", {**MOTIF, "limit": 5})
    ),
}
MULTI = {
    "reach_difference": plan(
        "value",
        "s3.value",
        step("s1", "temporal_reachability", {"src": BUSY, "window": W3}),
        step("s2", "temporal_reachability", {"src": OTHER, "window": W3}),
        step(
            "s3", "compute", {"fn": "diff", "a": ref("s1.rows_total"), "b": ref("s2.rows_total")}, "s1", "s2"
        ),
    ),
    "common_reach": plan(
        "count",
        "s3.rows_total",
        step("s1", "temporal_reachability", {"src": BUSY, "window": WEEK, "limit": FULL}),
        step("s2", "temporal_reachability", {"src": OTHER, "window": WEEK, "limit": FULL}),
        step(
            "s3",
            "compute",
            {"fn": "intersection", "a": ref("s1.rows[*].uid"), "b": ref("s2.rows[*].uid"), "limit": FULL},
            "s1",
            "s2",
        ),
    ),
    "busiest_day": plan(
        "interval",
        "s2.rows[0]",
        step(
            "s1",
            "graph_metric_timeseries",
            {"metric": "edge_event_count", "window": WEEK, "stride": DAY, "limit": FULL},
        ),
        step("s2", "compute", {"fn": "topk", "input": ref("s1.rows"), "field": "value", "k": 1}, "s1"),
    ),
    "first_new_contacts": plan(
        "entity_set",
        "s3.rows[*].uid",
        step(
            "s1", "neighborhood_evolution", {"uid": BUSY, "t1": T0 + DAY, "t2": T0 + 8 * DAY, "limit": FULL}
        ),
        step(
            "s2", "compute", {"fn": "min", "input": ref("s1.neighbors_gained"), "field": "first_seen"}, "s1"
        ),
        step(
            "s3",
            "compute",
            {
                "fn": "filter",
                "input": ref("s1.neighbors_gained"),
                "field": "first_seen",
                "cmp": "==",
                "value": ref("s2.value"),
                "limit": FULL,
            },
            "s1",
            "s2",
        ),
    ),
}


@pytest.mark.parametrize("name", [*SINGLE, *MULTI])
def test_oracle_answer_equals_fast_path(name: str, stores: tuple[OpContext, OracleStore]) -> None:
    got = same({**SINGLE, **MULTI}[name], *stores)
    assert "value" in got and got["value"] not in (None, 0, [])  # a real answer, not a vacuous one


def test_unknown_uid_is_not_found(stores: tuple[OpContext, OracleStore]) -> None:
    p = plan("count", "s1.rows_total", step("s1", "temporal_reachability", {"src": "nobody", "window": W3}))
    got = same(p, *stores)
    assert got["kind"] == "count" and got["error"]["code"] == "E_NOT_FOUND" and got["error"]["message"]


REACH5 = step("s1", "temporal_reachability", {"src": BUSY, "window": WEEK, "limit": 5})


def test_cut_page_reads_match_the_fast_path(stores: tuple[OpContext, OracleStore]) -> None:
    # the projection of a cut page is the page's uids (tainted, but the same on both paths)
    page_uids = same(plan("entity_set", "s1.rows[*].uid", REACH5), *stores)["value"]
    assert len(page_uids) == 5
    # a cut page fed into a non-reducing operator, and an exact indexed read of it
    seeds = step("s2", "snapshot_subgraph", {"seeds": ref("s1.rows[*].uid"), "t_valid": T0 + 3 * DAY}, "s1")
    assert same(plan("count", "s2.nodes_total", REACH5, seeds), *stores)["value"] >= 5
    hist = step("s2", "entity_history", {"uid": ref("s1.rows[4].uid")}, "s1")
    assert same(plan("count", "s2.rows_total", REACH5, hist), *stores)["value"] >= 1
    # totals of a cut page are exact
    assert same(plan("count", "s1.rows_total", REACH5), *stores)["value"] > 5


def test_cut_page_errors_match_the_fast_path(stores: tuple[OpContext, OracleStore]) -> None:
    # a count over a cut page reads the whole list on both paths (compute's full_input)
    count = step("s2", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1")
    total = same(plan("count", "s1.rows_total", REACH5), *stores)["value"]
    assert same(plan("count", "s2.value", REACH5, count), *stores)["value"] == total > 5
    # over a producer that rests on a cut page itself it is refused on both
    seeds = step("s2", "snapshot_subgraph", {"seeds": ref("s1.rows[*].uid"), "t_valid": T0 + 3 * DAY}, "s1")
    count = step("s3", "compute", {"fn": "count", "input": ref("s2.nodes")}, "s2")
    assert same(plan("value", "s3.value", REACH5, seeds, count), *stores)["error"]["code"] == "E_UPSTREAM"
    past = step("s2", "entity_history", {"uid": ref("s1.rows[5].uid")}, "s1")
    assert same(plan("count", "s2.rows_total", REACH5, past), *stores)["error"]["code"] == "E_LIMIT"


def test_a_declared_list_reducer_is_refused_over_a_cut_page(
    stores: tuple[OpContext, OracleStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The oracle path reads the operator's declared ``Traits.reduces`` and ``full_input``, not its name:
    compute declared again under another name without full reads is refused over a cut page on both
    paths, and runs over a whole one."""
    spec = get_operator("compute")
    monkeypatch.setitem(ORACLES, "toy_compute", ORACLES["compute"])
    with registered():
        operator(
            name="toy_compute",
            family="toy",
            args=spec.args,
            output=spec.output,
            cost=spec.cost,
            manual=spec.manual,
            example=spec.example,
            edge_arrays=False,
            traits=dataclasses.replace(spec.traits, full_input=False),
        )(spec.impl)
        count = step("s2", "toy_compute", {"fn": "count", "input": ref("s1.rows")}, "s1")
        got = same(plan("count", "s2.value", REACH5, count), *stores)
        assert got["error"]["code"] == "E_UPSTREAM"
        assert "toy_compute count over incomplete input" in got["error"]["message"]
        whole = step("s1", "temporal_reachability", {"src": BUSY, "window": WEEK, "limit": FULL})
        assert same(plan("count", "s2.value", whole, count), *stores)["value"] > 5


def test_answer_shape_and_plan_errors(stores: tuple[OpContext, OracleStore]) -> None:
    _, ostore = stores
    bad_kind = oracle_answer(plan("boolean", "s1.rows_total", REACH5), ostore)
    assert bad_kind["kind"] == "boolean" and bad_kind["error"]["code"] == "E_ANSWER_KIND"
    malformed = oracle_answer(
        {"plan_id": "p", "steps": [], "answer_spec": {"kind": "count", "from": "s1.x"}}, ostore
    )
    assert malformed["error"]["code"] == "E_SCHEMA"


def test_agree() -> None:
    assert agree("count", 7, {"kind": "count", "value": 7})
    assert not agree("count", 7, {"kind": "count", "value": 8})
    assert agree("value", 0.5, {"kind": "value", "value": 0.5000000000001})
    assert agree("entity_set", ["a", "b"], {"kind": "entity_set", "value": ["b", "a", "a"]})
    assert agree("interval", [0, 10], {"kind": "interval", "value": [0, 8]})  # IoU 0.8
    assert not agree("interval", [0, 10], {"kind": "interval", "value": [0, 4]})
    assert not agree("count", 7, {"kind": "count", "error": {"code": "E_NOT_FOUND", "message": "x"}})
    with pytest.raises(ValueError):  # a gold without its kind's shape is a suite bug
        agree("count", "seven", {"kind": "count", "value": 7})
