"""The mechanical reporter: for a plan of every answer kind, its answer verifies (supported, or weakly
supported over a cut page) and the gate emits it; the same holds, with identical trace digests and
verdicts, on a store replayed from the event log and on the other backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tgms.engine.claims.answer import parse_answer
from tgms.engine.claims.gate import coverage, gate
from tgms.engine.claims.reporter import mechanical_answer
from tgms.engine.execute.executor import Trace, trace_from_dict
from tgms.engine.operators.context import OpContext
from tgms.engine.plan.model import Plan
from tgms.engine.store import Store, replay

from ._support import (
    FOLLOWS,
    MOTIF,
    N_REACHED,
    REACHED,
    S,
    build_store,
    history,
    plan,
    reach,
    ref,
    run,
    step,
    verdicts,
)

REL = "interval_relation"


def _reach(answer: str, kind: str, limit: int = 100) -> Plan:
    return plan(step("s1", "temporal_reachability", reach(limit=limit)), answer=answer, kind=kind)


def _hist(answer: str, kind: str) -> Plan:
    return plan(step("s1", "entity_history", history()), answer=answer, kind=kind)


def _relation(args: dict[str, Any]) -> Plan:
    return plan(
        step("s1", "entity_history", history()),
        step("s2", "compute", {"fn": REL, **args}, "s1"),
        answer="s2.value",
        kind="relation",
    )


#: name -> (plan, typed value, verdicts, claim types)
CASES: dict[str, tuple[Plan, Any, list[str], list[str]]] = {
    "count": (_reach("s1.rows_total", "count"), N_REACHED, ["supported"], ["count"]),
    "count_of_list": (_reach("s1.rows", "count"), N_REACHED, ["supported"], ["count"]),
    "count_of_cut_list": (_reach("s1.rows", "count", limit=2), 2, ["weakly_supported"], ["count"]),
    "count_total_of_cut_page": (_reach("s1.rows_total", "count", limit=2), N_REACHED, ["supported"],
                                ["count"]),
    "count_motifs": (
        plan(step("s1", "count_temporal_motifs", dict(MOTIF)), answer="s1.count", kind="count"),
        1,
        ["supported", "supported"],
        ["count", "temporal_pattern"],
    ),
    "value": (
        plan(
            step("s1", "temporal_reachability", reach()),
            step("s2", "compute", {"fn": "diff", "a": ref("s1.rows[5].earliest_arrival"),
                                   "b": ref("s1.rows[0].earliest_arrival")}, "s1"),
            answer="s2.value",
        ),
        5 * S, ["supported"], ["value"],
    ),
    "value_uid": (_reach("s1.rows[2].uid", "value"), "n3", ["supported"], ["value"]),
    "boolean": (_reach("s1.truncated", "boolean", limit=2), True, ["supported"], ["value"]),
    "rows": (_reach("s1.rows", "rows"), [{"earliest_arrival": t, "uid": u} for u, t in REACHED],
             ["supported"], ["value"]),
    "interval": (_hist("s1.edges[0]", "interval"), list(FOLLOWS), ["supported"], ["value"]),
    "interval_of_a_version": (_hist("s1.rows[0]", "interval"), [0, 5 * S], ["supported"], ["value"]),
    "entity": (_reach("s1.rows[0].uid", "entity"), "n2", ["supported"], ["entity"]),
    "entity_of_a_row": (_reach("s1.rows[1]", "entity"), "n7", ["supported"], ["entity"]),
    "entity_set": (_reach("s1.rows[*].uid", "entity_set"), sorted(u for u, _ in REACHED), ["supported"],
                   ["entity"]),
    "entity_set_of_rows": (_reach("s1.rows", "entity_set"), sorted(u for u, _ in REACHED), ["supported"],
                           ["entity"]),
    "entity_set_of_cut_page": (_reach("s1.rows[*].uid", "entity_set", limit=2), ["n2", "n7"],
                               ["weakly_supported"], ["entity"]),
    "relation_refs": (_relation({"a": ref("s1.edges[1]"), "b": ref("s1.edges[0]")}), "during", ["supported"],
                      ["ordering"]),
    "relation_ref_and_literal": (_relation({"a": ref("s1.edges[2]"), "b": [0, S]}), "after", ["supported"],
                                 ["ordering"]),
    "relation_input_refs": (_relation({"input": [ref("s1.edges[0]"), ref("s1.edges[2]")]}), "contains",
                            ["supported"], ["ordering"]),
    "relation_literals": (
        plan(step("s1", "compute", {"fn": REL, "a": [0, 5], "b": [5, 9]}), answer="s1.value",
             kind="relation"),
        "meets", ["supported"], ["ordering"],
    ),
    "relation_as_value": (_hist("s1.rows[0].label", "relation"), "user", ["supported"], ["value"]),
}  # fmt: skip


@pytest.fixture(scope="module")
def reference(store: Store) -> dict[str, tuple[Trace, dict[str, Any]]]:
    """Each case's trace on the module's DuckDB store and its mechanical answer."""
    ctx = OpContext(store)
    out = {}
    for name, (p, *_rest) in CASES.items():
        trace = run(ctx, p)
        out[name] = (trace, mechanical_answer(trace))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_mechanical_answer_verifies_and_is_emitted(
    reference: dict[str, tuple[Trace, dict[str, Any]]], ctx: OpContext, name: str
) -> None:
    _, value, expected, types = CASES[name]
    trace, ans = reference[name]
    assert trace.status == "ok"
    assert ans["answer"]["value"] == value
    assert [c["type"] for c in ans["claims"]] == types
    vs = verdicts(ans, trace, ctx)
    assert [v.verdict for v in vs] == expected, [v.reason for v in vs]
    out = gate(parse_answer(ans), vs)
    assert out["emitted"], out["reason"]
    assert out["dropped"] == []
    assert out["text"] == ans["text"]
    assert out["answer"] == ans["answer"]


@pytest.mark.parametrize("name", [n for n in CASES if n != "rows"])
def test_mechanical_text_is_covered_by_its_claims(
    reference: dict[str, tuple[Trace, dict[str, Any]]], ctx: OpContext, name: str
) -> None:
    _, ans = reference[name]
    assert coverage(parse_answer(ans), ctx.nid_index())["uncovered"] == []


def test_mechanical_rows_text_is_covered(
    reference: dict[str, tuple[Trace, dict[str, Any]]], ctx: OpContext
) -> None:
    _, ans = reference["rows"]
    assert coverage(parse_answer(ans), ctx.nid_index())["uncovered"] == []


def test_claims_cite_the_steps_they_read(reference: dict[str, tuple[Trace, dict[str, Any]]]) -> None:
    _, ans = reference["relation_refs"]
    (c,) = ans["claims"]
    assert (c["a"], c["b"], c["from"]) == ("s1.edges[1]", "s1.edges[0]", "s2.value")
    assert c["evidence"] == ["s2", "s1"]
    _, ans = reference["count_motifs"]
    pattern = ans["claims"][1]["assertion"]
    assert pattern["op"] == "count_temporal_motifs" and pattern["value"] == 1
    assert {k: pattern["args"][k] for k in MOTIF} == MOTIF


def test_verdicts_survive_the_trace_json(
    reference: dict[str, tuple[Trace, dict[str, Any]]], ctx: OpContext
) -> None:
    """A trace written with its envelopes and read back gives the same verdicts."""
    for name, (trace, ans) in reference.items():
        again = trace_from_dict(trace.to_dict(envelopes=True))
        assert again.digest == trace.digest, name
        assert [v.to_dict() for v in verdicts(ans, again, ctx)] == [
            v.to_dict() for v in verdicts(ans, trace, ctx)
        ], name


def test_relation_over_an_input_ref(ctx: OpContext) -> None:
    p = plan(
        step("s1", "snapshot_subgraph", {"seeds": ["n2"], "t_valid": S, "hops": 1}),
        step("s2", "compute", {"fn": REL, "input": ref("s1.rows")}, "s1"),
        answer="s2.value",
        kind="relation",
    )
    trace = run(ctx, p)
    assert trace.status == "ok" and len(trace.payload("s1")["rows"]) == 2  # n1->n2 and n2->n7
    ans = mechanical_answer(trace)
    vs = verdicts(ans, trace, ctx)
    assert [v.verdict for v in vs] == ["supported"], [v.reason for v in vs]
    assert gate(parse_answer(ans), vs)["emitted"]


def test_an_empty_entity_set_is_emitted(ctx: OpContext) -> None:
    trace = run(ctx, plan(step("s1", "temporal_reachability", reach(src="n6")),
                          answer="s1.rows[*].uid", kind="entity_set"))  # fmt: skip
    ans = mechanical_answer(trace)
    assert ans["answer"] == {"kind": "entity_set", "value": []}
    # nothing to name: the claim is the count of the named list, 0
    assert [(c["type"], c["value"], c["from"]) for c in ans["claims"]] == [("count", 0, "s1.rows[*].uid")]
    vs = verdicts(ans, trace, ctx)
    assert [v.verdict for v in vs] == ["supported"]
    assert gate(parse_answer(ans), vs)["emitted"]


def test_a_failed_answer_step_gives_no_claims(ctx: OpContext) -> None:
    trace = run(ctx, plan(step("s1", "entity_history", {"uid": "nobody"}), answer="s1.rows", kind="rows"))
    ans = mechanical_answer(trace)
    assert ans["claims"] == [] and "answer" not in ans and ans["text"].startswith("no answer")
    assert gate(parse_answer(ans), [])["abstained"]


# -- replay and the other backend -------------------------------------------------------------------------


def _check_same(store: Store, reference: dict[str, tuple[Trace, dict[str, Any]]], ref_digest: str) -> None:
    assert store.digest() == ref_digest
    ctx = OpContext(store)
    for name, (ref_trace, ref_ans) in reference.items():
        trace = run(ctx, CASES[name][0])
        assert trace.digest == ref_trace.digest, name
        ans = mechanical_answer(trace)
        assert ans == ref_ans, name
        assert [v.to_dict() for v in verdicts(ans, trace, ctx)] == [
            v.to_dict() for v in verdicts(ref_ans, ref_trace, OpContext(store))
        ], name


def test_replayed_store_gives_identical_traces_and_verdicts(
    store: Store, reference: dict[str, tuple[Trace, dict[str, Any]]], tmp_path: Path, backend: str
) -> None:
    with replay(store.log_path, tmp_path / "replayed", backend) as again:
        _check_same(again, reference, store.digest())


def test_the_same_writes_on_either_backend_give_identical_traces(
    store: Store, reference: dict[str, tuple[Trace, dict[str, Any]]], tmp_path: Path, backend: str
) -> None:
    with build_store(tmp_path / "fresh", backend) as fresh:
        _check_same(fresh, reference, store.digest())
