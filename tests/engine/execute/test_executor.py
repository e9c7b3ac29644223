"""The executor: deterministic traces (across runs, backends and replays), the content-addressed result
store, failure isolation between branches, budgets, trace serialization and the run order.

Taint and the refusal of reducing computes over incomplete input are in ``test_taint.py``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_backend
from tgms.engine.canonical import digest
from tgms.engine.errors import CorruptError, NotFoundError, TGMSError
from tgms.engine.execute import executor as executor_module
from tgms.engine.execute.executor import Executor, Trace, trace_from_dict
from tgms.engine.execute.results import MemoryResults, ResultStore
from tgms.engine.operators.context import OpContext
from tgms.engine.plan.model import Plan
from tgms.engine.store import Store, replay

from ._support import (
    N_REACHED,
    REACHED,
    error_code,
    history_store,
    plan,
    reach,
    ref,
    run,
    snapshot,
    statuses,
    step,
    step_digests,
)


def mixed_plan() -> Plan:
    """Every kind of step outcome: ok, cut page, tainted read, refused count, skipped, run-time error, and
    a count that reads past a cut page (s8)."""
    return plan(
        step("s1", "temporal_reachability", reach(limit=2)),
        step("s2", "snapshot_subgraph", snapshot(ref("s1.rows[*].uid")), "s1"),
        step("s3", "compute", {"fn": "count", "input": ref("s2.nodes")}, "s2"),
        step(
            "s4", "compute", {"fn": "ratio", "a": ref("s1.rows_total"), "b": ref("s2.rows_total")}, "s1", "s2"
        ),
        step("s5", "entity_history", {"uid": "nobody"}),
        step("s6", "compute", {"fn": "count", "input": ref("s5.rows")}, "s5"),
        step("s7", "snapshot_subgraph", snapshot(["a", "d"], hops=2)),
        step("s8", "compute", {"fn": "median", "input": ref("s1.rows"), "field": "earliest_arrival"}, "s1"),
        answer="s4.value",
    )


def _trace_of(store: Store, p: Plan, results: ResultStore | None = None) -> Trace:
    return Executor(OpContext(store), results).run(p, store_digest=store.digest())


# -- determinism ----------------------------------------------------------------------------------------


def test_mixed_plan_outcomes(tmp_path: Path) -> None:
    """Pins what the determinism tests below compare, so they do not compare two empty traces."""
    with history_store(tmp_path / "s", "duckdb") as store:
        trace = _trace_of(store, mixed_plan())
    assert statuses(trace) == {
        "s1": "ok", "s2": "ok", "s3": "refused", "s4": "ok",
        "s5": "error", "s6": "skipped", "s7": "ok", "s8": "ok",
    }  # fmt: skip
    assert trace.status == "partial"
    assert [r.upstream_truncated for r in trace.steps] == [
        False,
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    # s8 read all five arrivals past the page of two: their median
    assert trace.payload("s8")["value"] == 3  # type: ignore[index]
    assert trace.record("s8").reads[0]["full"]["items"] == N_REACHED  # type: ignore[union-attr]


def test_same_plan_twice_gives_identical_digests(tmp_path: Path, backend: str) -> None:
    with history_store(tmp_path / "s", backend) as store:
        one, two = _trace_of(store, mixed_plan()), _trace_of(store, mixed_plan())
        three = Executor(OpContext(store)).run(mixed_plan(), store_digest=store.digest())  # fresh caches
    assert one.digest == two.digest == three.digest
    assert step_digests(one) == step_digests(two) == step_digests(three)
    assert one.to_dict(timings=False) == two.to_dict(timings=False)
    for r in one.steps:
        if r.ok:
            assert one.envelope(r.id) == two.envelope(r.id)


def test_duckdb_and_kuzu_stores_from_the_same_writes_give_identical_digests(tmp_path: Path) -> None:
    require_backend("kuzu")
    with history_store(tmp_path / "d", "duckdb") as d, history_store(tmp_path / "k", "kuzu") as k:
        assert d.digest() == k.digest()
        td, tk = _trace_of(d, mixed_plan()), _trace_of(k, mixed_plan())
    assert step_digests(td) == step_digests(tk)
    assert td.digest == tk.digest
    assert td.answer() == tk.answer()


def test_replayed_store_gives_identical_digests(tmp_path: Path, backend: str) -> None:
    with history_store(tmp_path / "orig", "duckdb") as orig:
        want = _trace_of(orig, mixed_plan())
    with replay(tmp_path / "orig" / "eventlog.jsonl", tmp_path / "replayed", backend) as replayed:
        got = _trace_of(replayed, mixed_plan())
    assert got.store_digest == want.store_digest
    assert step_digests(got) == step_digests(want)
    assert got.digest == want.digest


def test_digest_ignores_timings_but_not_content(ctx: OpContext) -> None:
    trace = run(ctx, mixed_plan())
    d = trace.digest
    for r in trace.steps:
        r.wall_ms, r.estimate_s = 1e9, 1e9
    assert trace.digest == d
    trace.steps[0].rows = 99
    assert trace.digest != d
    other = run(ctx, mixed_plan(), plan_rows=10**6)  # the config is part of what the trace says
    assert other.digest != d


def test_a_later_write_changes_the_result_digest_but_a_pinned_read_does_not(tmp_path: Path) -> None:
    with history_store(tmp_path / "s", "duckdb") as store:
        pin = store.write([{"op": "assert_node", "uid": "pin", "vt_s": 0}]).tt
        args = reach()
        p_now = plan(step("s1", "temporal_reachability", args))
        p_pin = plan(step("s1", "temporal_reachability", {**args, "as_of_tt": pin}))
        before, pinned = _trace_of(store, p_now), _trace_of(store, p_pin)
        new = {"op": "assert_edge", "src": "f", "dst": "pin", "rel_type": "msg", "vt_s": 70, "vt_e": 71}
        store.write([new])
        after, pinned_after = _trace_of(store, p_now), _trace_of(store, p_pin)
    assert after.steps[0].rows_total == before.steps[0].rows_total + 1
    assert after.steps[0].result_digest != before.steps[0].result_digest
    assert pinned_after.steps[0].result_digest == pinned.steps[0].result_digest


# -- the content-addressed result store -----------------------------------------------------------------


def _canonical_sha(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_put_returns_the_sha256_of_the_canonical_json(tmp_path: Path) -> None:
    rs = ResultStore(tmp_path / "r")
    obj = {"b": [1, 2.0, "ü"], "a": {"y": None, "x": 0.1 + 0.2}}
    dg = rs.put(obj)
    assert dg == _canonical_sha({"a": {"x": 0.3, "y": None}, "b": [1, 2, "ü"]}) == digest(obj)
    path = tmp_path / "r" / dg[:2] / f"{dg}.json"
    assert path.read_bytes() == '{"a":{"x":0.3,"y":null},"b":[1,2,"ü"]}'.encode()
    assert rs.put({"a": {"y": None, "x": 0.3}, "b": [1, 2, "ü"]}) == dg  # key order, 2.0 == 2
    assert rs.has(dg) and rs.get(dg) == {"a": {"x": 0.3, "y": None}, "b": [1, 2, "ü"]}
    assert MemoryResults().put(obj) == dg


def test_writing_the_same_object_twice_writes_once(tmp_path: Path) -> None:
    rs = ResultStore(tmp_path / "r")
    dg = rs.put({"k": list(range(10))})
    path = tmp_path / "r" / dg[:2] / f"{dg}.json"
    before = path.stat()
    assert rs.put({"k": list(range(10))}) == dg
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert after.st_size == before.st_size
    assert sorted(p.name for p in (tmp_path / "r").rglob("*")) == sorted([dg[:2], f"{dg}.json"])  # no tmp


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t.replace("1", "2"),  # another value
        lambda t: t.replace(":", ": "),  # the same JSON value, not its canonical bytes
        lambda t: t[:-1],  # torn
    ],
)
def test_get_of_a_tampered_object_is_corrupt(tmp_path: Path, tamper: Any) -> None:
    rs = ResultStore(tmp_path / "r")
    dg = rs.put({"n": 1, "s": "x"})
    path = tmp_path / "r" / dg[:2] / f"{dg}.json"
    path.write_text(tamper(path.read_text()))
    with pytest.raises(CorruptError) as info:
        rs.get(dg)
    assert info.value.code == "E_CORRUPT"


@pytest.mark.parametrize("results", ["disk", "memory"])
def test_get_of_an_unknown_digest_is_not_found(tmp_path: Path, results: str) -> None:
    rs = ResultStore(tmp_path / "r") if results == "disk" else MemoryResults()
    rs.put({"x": 1})
    unknown = "0" * 64
    assert not rs.has(unknown)
    with pytest.raises(NotFoundError) as info:
        rs.get(unknown)
    assert info.value.code == "E_NOT_FOUND"


def test_executor_stores_envelopes_and_resolved_args_by_digest(tmp_path: Path, ctx: OpContext) -> None:
    rs = ResultStore(tmp_path / "r")
    trace = Executor(ctx, rs).run(mixed_plan())
    ok = [r for r in trace.steps if r.ok]
    assert {r.id for r in ok} == {"s1", "s2", "s4", "s7", "s8"}
    for r in ok:
        assert r.envelope_digest is not None and r.args_digest is not None
        assert (tmp_path / "r" / r.envelope_digest[:2] / f"{r.envelope_digest}.json").is_file()
        env = rs.get(r.envelope_digest)
        assert env == trace.envelope(r.id)
        assert env["op"] == r.op
        assert env["result_digest"] == r.result_digest == digest(env["payload"])
        assert digest(env) == r.envelope_digest
        assert trace.payload(r.id) == env["payload"]
    # the resolved args: refs replaced by the values they named on the producer's page
    page = [u for u, _ in REACHED[:2]]
    assert rs.get(trace.record("s2").args_digest) == snapshot(page)  # type: ignore[union-attr]
    assert trace.resolved_args("s4") == {"fn": "ratio", "a": N_REACHED, "b": trace.record("s2").rows_total}  # type: ignore[union-attr]
    # a refused step's resolved args are kept too (what it would have counted); a skipped one has none
    assert trace.resolved_args("s3") == {"fn": "count", "input": trace.payload("s2")["nodes"]}  # type: ignore[index]
    # a full read's resolved args hold the whole list it read
    whole = [{"uid": u, "earliest_arrival": t} for u, t in REACHED]
    assert trace.resolved_args("s8") == {"fn": "median", "input": whole, "field": "earliest_arrival"}
    assert trace.record("s6").args_digest is None and trace.resolved_args("s6") is None  # type: ignore[union-attr]
    assert trace.envelope("s3") is None and trace.envelope("s6") is None and trace.envelope("nope") is None


def test_a_trace_rebuilt_on_the_disk_store_loads_and_authenticates_envelopes(
    tmp_path: Path, ctx: OpContext
) -> None:
    rs = ResultStore(tmp_path / "r")
    trace = Executor(ctx, rs).run(mixed_plan())
    again = trace_from_dict(json.loads(json.dumps(trace.to_dict())), ResultStore(tmp_path / "r"))
    assert again.digest == trace.digest
    assert again.envelope("s2") == trace.envelope("s2")
    dg = trace.record("s7").envelope_digest  # type: ignore[union-attr]
    path = tmp_path / "r" / dg[:2] / f"{dg}.json"
    path.write_text(path.read_text().replace('"hop":1', '"hop":2'))
    with pytest.raises(CorruptError):
        again.envelope("s7")


# -- failure isolation ------------------------------------------------------------------------------------


def test_a_failing_branch_does_not_stop_an_independent_one(ctx: OpContext) -> None:
    trace = run(
        ctx,
        plan(
            step("s1", "temporal_reachability", reach(src="nobody")),
            step("s2", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1"),
            step("s3", "temporal_reachability", reach()),
            step("s4", "compute", {"fn": "diff", "a": ref("s2.value"), "b": 1}, "s2"),
        ),
    )
    assert statuses(trace) == {"s1": "error", "s2": "skipped", "s3": "ok", "s4": "skipped"}
    assert error_code(trace, "s1") == "E_NOT_FOUND"
    s2, s4 = trace.record("s2"), trace.record("s4")
    assert s2 is not None and s4 is not None
    assert s2.error is not None and s2.error["error"] == "E_UPSTREAM"
    assert s2.error["details"]["failed"] == ["s1"]
    assert "s1" in s2.error["message"]
    assert s4.error is not None and s4.error["details"]["failed"] == ["s2"]
    assert s2.args_digest is None and s2.envelope_digest is None
    assert trace.record("s3").rows_total == N_REACHED  # type: ignore[union-attr]
    assert trace.status == "partial"


def test_a_ref_the_result_does_not_have_is_an_upstream_error(ctx: OpContext) -> None:
    trace = run(
        ctx,
        plan(
            step("s1", "temporal_reachability", reach()),
            step("s2", "compute", {"fn": "count", "input": ref("s1.count")}, "s1"),
            step("s3", "compute", {"fn": "count", "input": ref("s1.rows[*].hop")}, "s1"),
        ),
    )
    assert statuses(trace) == {"s1": "ok", "s2": "error", "s3": "error"}
    assert error_code(trace, "s2") == error_code(trace, "s3") == "E_UPSTREAM"
    assert "rows_total" in trace.record("s2").error["details"]["legal"]  # type: ignore[index,union-attr]


def test_all_steps_failing_is_failed(ctx: OpContext) -> None:
    trace = run(ctx, plan(step("s1", "entity_history", {"uid": "nobody"}), step("s2", "no_such_op", {})))
    assert statuses(trace) == {"s1": "error", "s2": "error"}
    assert error_code(trace, "s2") == "E_NOT_FOUND"
    assert trace.status == "failed"
    assert run(ctx, plan(step("s1", "temporal_reachability", reach()))).status == "ok"


# -- budgets ------------------------------------------------------------------------------------------------


def _budget_plan() -> Plan:
    return plan(
        step("s1", "temporal_reachability", reach(limit=2)),  # 2 rows
        step("s2", "temporal_reachability", reach()),  # 5 rows
        step("s3", "compute", {"fn": "count", "input": ref("s2.rows")}, "s2"),
        step("s4", "compute", {"fn": "diff", "a": 3, "b": 1}),  # 0 list elements
    )


def test_the_plan_row_budget(ctx: OpContext) -> None:
    trace = run(ctx, _budget_plan(), plan_rows=4)
    assert statuses(trace) == {"s1": "ok", "s2": "error", "s3": "skipped", "s4": "ok"}
    err = trace.record("s2").error  # type: ignore[union-attr]
    assert err is not None and err["error"] == "E_LIMIT"
    assert err["details"]["budget"] == 4 and err["details"]["used"] == 2
    assert trace.record("s2").envelope_digest is None  # type: ignore[union-attr]
    # exactly the budget is allowed
    assert run(ctx, _budget_plan(), plan_rows=2 + N_REACHED).status == "ok"
    assert statuses(run(ctx, _budget_plan(), plan_rows=1))["s1"] == "error"


def test_a_tiny_call_budget_refuses_with_e_cost(ctx: OpContext) -> None:
    trace = run(ctx, _budget_plan(), budget_s=1e-12)
    assert statuses(trace) == {"s1": "refused", "s2": "refused", "s3": "skipped", "s4": "refused"}
    assert error_code(trace, "s1") == error_code(trace, "s2") == error_code(trace, "s4") == "E_COST"
    assert error_code(trace, "s3") == "E_UPSTREAM"
    assert trace.status == "failed"
    # the guard compares the per-call budget with the recorded estimate
    estimates = [r.estimate_s for r in run(ctx, _budget_plan()).steps]
    assert all(e is not None and e > 0 for e in estimates)
    top = max(e for e in estimates if e is not None)
    assert run(ctx, _budget_plan(), budget_s=2 * top).status == "ok"
    assert statuses(run(ctx, _budget_plan(), budget_s=top / 2)) == statuses(trace)
    # the cost check can be switched off
    assert run(ctx, _budget_plan(), budget_s=1e-12, check_cost=False).status == "ok"


@pytest.mark.parametrize("wall", [0.0, -1.0, 1e-12])
def test_a_spent_plan_wall_budget_is_e_limit(ctx: OpContext, wall: float) -> None:
    trace = run(ctx, _budget_plan(), plan_wall_s=wall)
    assert statuses(trace) == {"s1": "error", "s2": "error", "s3": "skipped", "s4": "error"}
    for sid in ("s1", "s2", "s4"):
        err = trace.record(sid).error  # type: ignore[union-attr]
        assert err is not None and err["error"] == "E_LIMIT" and err["details"]["budget_s"] == wall
    assert trace.status == "failed"


def _wall_bound_plan(ctx: OpContext) -> tuple[Plan, float]:
    """A one-step plan and a plan wall budget below the step's (deterministic) cost estimate."""
    p = plan(step("s1", "temporal_reachability", reach()))
    estimate = run(ctx, p).record("s1").estimate_s  # type: ignore[union-attr]
    assert estimate is not None and estimate > 0
    return p, estimate / 2


def test_a_call_budget_capped_by_the_plan_wall_budget_refuses(ctx: OpContext) -> None:
    p, wall = _wall_bound_plan(ctx)
    trace = run(ctx, p, plan_wall_s=wall)
    # the remaining wall time was the limit: E_LIMIT naming the plan budget (not the remaining time)
    assert statuses(trace) == {"s1": "refused"} and error_code(trace, "s1") == "E_LIMIT"
    assert trace.record("s1").error["details"]["plan_wall_s"] == wall  # type: ignore[index,union-attr]


def test_a_refusal_under_the_plan_wall_budget_is_deterministic(ctx: OpContext) -> None:
    p, wall = _wall_bound_plan(ctx)
    traces = [run(ctx, p, plan_wall_s=wall) for _ in range(3)]
    assert [statuses(t) for t in traces] == [{"s1": "refused"}] * 3
    assert len({t.digest for t in traces}) == 1, [t.record("s1").error for t in traces]  # type: ignore[union-attr]


# -- serialization and the answer -------------------------------------------------------------------------


def test_to_dict_is_json_and_round_trips(ctx: OpContext) -> None:
    trace = run(ctx, mixed_plan())
    plain = trace.to_dict()
    assert json.loads(json.dumps(plain)) == plain
    assert plain["trace_digest"] == trace.digest and plain["status"] == "partial"
    assert [s["id"] for s in plain["steps"]] == [r.id for r in trace.steps]
    assert "wall_ms" not in trace.to_dict(timings=False)["steps"][0]

    full = json.loads(json.dumps(trace.to_dict(envelopes=True)))
    assert set(full["envelopes"]) == {r.envelope_digest for r in trace.steps if r.ok}
    again = trace_from_dict(full)
    assert again.digest == trace.digest == full["trace_digest"]
    assert step_digests(again) == step_digests(trace)
    assert again.status == trace.status
    for r in trace.steps:
        assert again.envelope(r.id) == trace.envelope(r.id)
        assert again.resolved_args(r.id) == trace.resolved_args(r.id)
    assert again.answer() == trace.answer()
    # without envelopes the records are there but the evidence is not
    bare = trace_from_dict(json.loads(json.dumps(plain)))
    assert bare.digest == trace.digest
    with pytest.raises(NotFoundError):
        bare.envelope("s1")


def test_an_embedded_envelope_that_was_edited_does_not_load(ctx: OpContext) -> None:
    full = json.loads(json.dumps(run(ctx, mixed_plan()).to_dict(envelopes=True)))
    dg = next(s["envelope_digest"] for s in full["steps"] if s["id"] == "s1")
    full["envelopes"][dg]["payload"]["rows_total"] = 1
    again = trace_from_dict(full)
    with pytest.raises(TGMSError) as info:
        again.envelope("s1")
    assert info.value.code in ("E_NOT_FOUND", "E_CORRUPT")


def test_answer(ctx: OpContext) -> None:
    steps = (
        step("s1", "temporal_reachability", reach(limit=2)),
        step("s2", "compute", {"fn": "diff", "a": ref("s1.rows_total"), "b": 1}, "s1"),
        step("s3", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1"),  # reads past the page
        step("s4", "snapshot_subgraph", snapshot(ref("s1.rows[*].uid")), "s1"),  # tainted
        step("s5", "compute", {"fn": "count", "input": ref("s4.nodes")}, "s4"),  # refused
    )
    assert run(ctx, plan(*steps)).answer() is None
    whole = run(ctx, plan(*steps, answer="s3.value", kind="count")).answer()
    assert whole == {"kind": "count", "from": "s3.value", "value": N_REACHED, "truncated": False}
    total = run(ctx, plan(*steps, answer="s1.rows_total", kind="count")).answer()
    assert total == {"kind": "count", "from": "s1.rows_total", "value": N_REACHED, "truncated": False}
    assert run(ctx, plan(*steps, answer="s2.value")).answer()["value"] == N_REACHED - 1  # type: ignore[index]
    page = run(ctx, plan(*steps, answer="s1.rows[*].uid", kind="entity_set")).answer()
    assert page == {"kind": "entity_set", "from": "s1.rows[*].uid", "value": ["c", "b"], "truncated": True}
    first = run(ctx, plan(*steps, answer="s1.rows[0].uid", kind="entity")).answer()
    assert first is not None and first["value"] == "c" and first["truncated"] is False
    refused = run(ctx, plan(*steps, answer="s5.value", kind="count")).answer()
    assert refused is not None and "error" in refused and "value" not in refused
    beyond = run(ctx, plan(*steps, answer="s1.rows[4].uid", kind="entity")).answer()
    assert beyond is not None and "error" in beyond


# -- run order ---------------------------------------------------------------------------------------------


def test_steps_run_and_are_listed_in_deterministic_topological_order(
    ctx: OpContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[int] = []
    real = executor_module.run_call

    def spy(c: OpContext, op: str, args: dict[str, Any], **kw: Any) -> Any:
        ran.append(args["a"])
        return real(c, op, args, **kw)

    monkeypatch.setattr(executor_module, "run_call", spy)

    def tag(n: int) -> dict[str, Any]:
        return {"fn": "diff", "a": n, "b": 0}

    p = plan(
        step("s3", "compute", tag(3), "s2"),
        step("s1", "compute", tag(1)),
        step("s2", "compute", tag(2), "s1"),
        step("s4", "compute", tag(4)),
        step("s0", "compute", tag(0), "s4"),
        step("s5", "compute", tag(5), "s3", "s0"),
    )
    want = ["s1", "s2", "s3", "s4", "s0", "s5"]  # ready steps are taken lowest plan index first
    assert [s.id for s in p.order()] == want
    trace = run(ctx, p)
    assert [r.id for r in trace.steps] == want
    assert ran == [int(s[1]) for s in want]
    assert trace.status == "ok"
    assert [r.id for r in run(ctx, p).steps] == want
