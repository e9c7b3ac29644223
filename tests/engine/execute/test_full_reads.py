"""Aggregation over a result bigger than one page (issue 27, item 2): compute reads a producer's whole list
past its cut page, on both backends, checked against the brute-force oracles.

The store holds 26,016 edge versions; ``list_events`` returns them all in a page of 10. Every compute step
below reads ``s1``'s (or ``s6``'s) *whole* result: its value is what the reference oracles
(``engine.operators.oracle``: plain Python over every version, then the reference pager) give for the
whole list, its read is recorded with the whole list's length and digest, and its own result is paged as
usual. A non-compute consumer of the same cut page (snapshot seeds) stays tainted, and a reducer over it
is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import BACKENDS, require_backend
from tests.engine.operators.sampling import counter_clock
from tgms.engine.canonical import canonicalize, digest
from tgms.engine.execute.executor import ExecConfig, Executor, Trace
from tgms.engine.execute.trace_check import trace_object
from tgms.engine.ingest.build import build_store
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import run_call
from tgms.engine.operators.history import EdgeVersionRows
from tgms.engine.operators.oracle import ORACLES, OracleStore
from tgms.engine.operators.oracle import page as oracle_page
from tgms.engine.plan.model import Plan, build_plan
from tgms.engine.plan.refs import resolve as resolve_ref
from tgms.engine.plan.refs import set_at
from tgms.engine.plan.verifier import verify
from tgms.engine.store import Store

from ._support import ref, step

EVENTS = 26_000  # 26,016 edge versions with the corrections: more than two full pages of 10,000
DAY = 86_400_000_000
PAGE = 10


def _plan() -> Plan:
    by_src = {
        "fn": "group",
        "input": ref("s1.rows"),
        "by": "src",
        "aggregates": [
            {"fn": "count"},
            {"fn": "median", "field": "vt_s"},
            {"fn": "count_distinct", "field": "dst"},
        ],
        "order_by": [{"field": "count", "desc": True}],
        "limit": 50,
    }
    day = {"op": "floor", "arg": {"op": "div", "left": "vt_s", "right": DAY}}
    steps = [
        step("s1", "list_events", {"limit": PAGE}),
        step("s2", "compute", {"fn": "median", "input": ref("s1.rows[*].vt_s")}, "s1"),
        step("s3", "compute", {"fn": "quantile", "input": ref("s1.rows[*].vt_s"), "q": 0.9}, "s1"),
        step("s4", "compute", {"fn": "distinct", "input": ref("s1.rows[*].dst"), "limit": 20}, "s1"),
        step("s5", "compute", by_src, "s1"),
        # a per-row fn over the whole list, its own page cut, and a group over its whole result
        step("s6", "compute", {"fn": "derive", "input": ref("s1.rows"), "expr": day, "as": "day"}, "s1"),
        step("s7", "compute", {"fn": "group", "input": ref("s6.rows"), "by": "day"}, "s6"),
        step("s8", "compute", {"fn": "count", "input": ref("s1.rows[*].eid")}, "s1"),
        # a uid list argument is not a full read: the snapshot is seeded by the page only (tainted) ...
        step(
            "s9",
            "snapshot_subgraph",
            {"seeds": ref("s1.rows[*].src"), "t_valid": ref("s1.rows[0].vt_s")},
            "s1",
        ),
        # ... so a count over its nodes is refused, full reads or not
        step("s10", "compute", {"fn": "count", "input": ref("s9.nodes")}, "s9"),
    ]
    raw = {"plan_id": "big", "question": "aggregates over every event", "steps": steps}
    return build_plan({**raw, "answer_spec": {"kind": "value", "from": "s2.value"}})


COMPUTES = ("s2", "s3", "s4", "s5", "s6", "s7", "s8")


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Store]]:
    root = tmp_path_factory.mktemp("full_reads")
    out: dict[str, Store] = {}
    for b in BACKENDS:
        try:
            require_backend(b)
        except pytest.skip.Exception:
            continue  # its tests skip with the reason
        out[b] = build_store("synthetic", root / b, b, events=EVENTS, nodes=300, seed=3, now=counter_clock())
    yield out
    for s in out.values():
        s.close()


@pytest.fixture(scope="module")
def traces(stores: dict[str, Store]) -> dict[str, Trace]:
    return {b: Executor(OpContext(s)).run(_plan(), store_digest=s.digest()) for b, s in stores.items()}


def _oracle_payloads(store: Store, plan: Plan) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Each step's (page, whole result) on the reference oracles, every compute read from whole results:
    the semantics written out apart from the executor (no taint bookkeeping: the steps here read untainted
    producers, or are not compute)."""
    ostore = OracleStore(*store.public_rows())
    out: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for s in plan.order():
        if s.op == "snapshot_subgraph" or any(d not in out for d in s.depends_on):
            continue  # the tainted branch: not what this oracle is about
        args: Any = copy.deepcopy(s.args)
        for r in s.refs:
            page, whole = out[r.ref.step]
            set_at(args, r.loc, resolve_ref(r.ref, whole if s.op == "compute" else page).value)
        whole = canonicalize(ORACLES[s.op](ostore, args))
        out[s.id] = (canonicalize(oracle_page(whole, args.get("limit") or 100, 0)), whole)
    return out


@pytest.fixture(scope="module")
def oracle(stores: dict[str, Store]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    return _oracle_payloads(stores[BACKENDS[0]], _plan())


def _no_cursor(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload without its cursor (the fast path's is an opaque token), and whether there is one."""
    return {**{k: v for k, v in payload.items() if k != "cursor"}, "more": payload.get("cursor") is not None}


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_compute_over_the_cut_page_equals_the_oracle_over_the_whole_list(
    traces: dict[str, Trace], oracle: dict[str, tuple[dict[str, Any], dict[str, Any]]], backend: str
) -> None:
    require_backend(backend)
    trace = traces[backend]
    s1 = trace.record("s1")
    assert s1 is not None and s1.truncated and s1.rows == PAGE
    assert s1.rows_total is not None and s1.rows_total > 2 * 10_000  # more than two pages of the maximum
    for sid in COMPUTES:
        rec = trace.record(sid)
        assert rec is not None and rec.ok and not rec.upstream_truncated, (sid, rec and rec.error)
        got = trace.payload(sid)
        assert got is not None
        assert _no_cursor(got) == _no_cursor(oracle[sid][0]), sid
    # the answers are about every event, not about the page
    s8 = trace.payload("s8")
    assert s8 is not None and s8["value"] == s1.rows_total
    s5 = trace.payload("s5")
    assert s5 is not None and sum(r["count"] for r in oracle["s5"][1]["rows"]) == s1.rows_total
    assert s5["rows_total"] == len(oracle["s5"][1]["rows"]) > 50 and len(s5["rows"]) == 50  # paged
    s6 = trace.record("s6")
    assert s6 is not None and s6.truncated and s6.rows_total == s1.rows_total  # its own page is cut


@pytest.mark.parametrize("backend", BACKENDS)
def test_full_reads_are_recorded_with_the_whole_inputs_length_and_digest(
    traces: dict[str, Trace], oracle: dict[str, tuple[dict[str, Any], dict[str, Any]]], backend: str
) -> None:
    require_backend(backend)
    trace = traces[backend]
    whole_rows = oracle["s1"][1]["rows"]
    want = {
        "s1.rows": {"items": len(whole_rows), "digest": digest(whole_rows)},
        "s1.rows[*].vt_s": {"items": len(whole_rows), "digest": digest([r["vt_s"] for r in whole_rows])},
        "s1.rows[*].dst": {"items": len(whole_rows), "digest": digest([r["dst"] for r in whole_rows])},
        "s1.rows[*].eid": {"items": len(whole_rows), "digest": digest([r["eid"] for r in whole_rows])},
        "s6.rows": {"items": len(whole_rows), "digest": digest(oracle["s6"][1]["rows"])},
    }
    for sid in COMPUTES:
        rec = trace.record(sid)
        assert rec is not None
        (read,) = rec.reads
        assert read["truncated"] is False and read["full"] == want[read["ref"]], sid
        # the resolved arguments, content-addressed in the result store, hold the whole list
        args = trace.resolved_args(sid)
        assert args is not None
        assert digest(args["input"]) == read["full"]["digest"], sid


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_whole_read_is_dumped_once_and_every_digest_is_the_plain_dumps(
    stores: dict[str, Store], backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read's text is spliced into the step's stored arguments and envelope (engine/canonical.py: Dumped)
    instead of dumped again: the digests are those of the plain dumps, and the whole list's canonical
    dump ran once per full read."""
    require_backend(backend)
    import tgms.engine.canonical as dumped_mod

    whole_dumps: list[int] = []
    plain = dumped_mod.dumps_canonical

    def counting(value: Any) -> str:
        text = plain(value)
        if len(text) > 100_000:  # a whole list (26,016 rows or times), or an object holding one
            whole_dumps.append(len(text))
        return text

    written = dumped_mod.ints_text
    by_numpy: list[int] = []

    def counting_ints(column: Any) -> memoryview | None:
        text = written(column)
        if text is not None:
            by_numpy.append(len(text))
        return text

    monkeypatch.setattr(dumped_mod, "dumps_canonical", counting)
    monkeypatch.setattr(dumped_mod, "ints_text", counting_ints)
    trace = Executor(OpContext(stores[backend])).run(_plan(), store_digest=stores[backend].digest())
    for sid in COMPUTES:
        rec = trace.record(sid)
        assert rec is not None and rec.ok and rec.args_digest and rec.envelope_digest
        args, env = trace.resolved_args(sid), trace.envelope(sid)
        assert digest(args) == rec.args_digest, sid
        assert digest(env) == rec.envelope_digest, sid
    # one canonical dump of a whole list per full read (the read's digest), none for the stored objects;
    # the two reads of vt_s (s2, s3: one width throughout) written from their int64 column by numpy
    assert len(by_numpy) >= 2
    assert len(whole_dumps) + len(by_numpy) == len(COMPUTES)


@pytest.mark.parametrize("backend", BACKENDS)
def test_digests_taken_on_worker_threads_are_the_ones_taken_in_place(
    stores: dict[str, Store], traces: dict[str, Trace], backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every read's and argument's digest handed to a worker thread (engine/execute/background.py, its size
    threshold 0): the trace is the same, each digest in it a string, none left pending."""
    require_backend(backend)
    from tgms.engine.execute import background

    monkeypatch.setattr(background, "LARGE", 0)
    trace = Executor(OpContext(stores[backend])).run(_plan(), store_digest=stores[backend].digest())
    assert trace.digest == traces[backend].digest
    for sid in COMPUTES:
        rec = trace.record(sid)
        assert rec is not None and isinstance(rec.args_digest, str)
        assert all(isinstance(r["full"]["digest"], str) for r in rec.reads if "full" in r)
        assert digest(trace.resolved_args(sid)) == rec.args_digest


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_non_compute_consumer_of_the_cut_page_stays_tainted(traces: dict[str, Trace], backend: str) -> None:
    require_backend(backend)
    trace = traces[backend]
    s9, s10 = trace.record("s9"), trace.record("s10")
    assert s9 is not None and s9.ok and s9.upstream_truncated
    assert [(r["ref"], r["truncated"], "full" in r) for r in s9.reads] == [
        ("s1.rows[*].src", True, False),
        ("s1.rows[0].vt_s", False, False),
    ]
    assert s10 is not None and s10.status == "refused"
    assert s10.error is not None and s10.error["details"]["reason"] == "truncated_input"


def test_traces_are_identical_on_both_backends(traces: dict[str, Trace]) -> None:
    for b in BACKENDS:
        require_backend(b)
    one, two = (traces[b] for b in BACKENDS)
    assert one.store_digest == two.store_digest
    assert one.digest == two.digest
    assert [r.to_dict() | {"wall_ms": 0, "estimate_s": 0} for r in one.steps] == [
        r.to_dict() | {"wall_ms": 0, "estimate_s": 0} for r in two.steps
    ]


def test_a_trace_with_full_reads_rebuilds_and_reverifies(
    traces: dict[str, Trace], stores: dict[str, Store]
) -> None:
    """The trace's JSON (full reads included) passes the trace checker, the plan passes the verifier, and
    a second run gives the same digest."""
    b = BACKENDS[0]
    trace = traces[b]
    raw = trace_object(trace.to_dict(envelopes=True))
    assert any("full" in r for s in raw["steps"] for r in s["reads"])
    bad = copy.deepcopy(raw)
    next(r for s in bad["steps"] for r in s["reads"] if "full" in r)["full"] = {"items": "many"}
    with pytest.raises(Exception) as info:
        trace_object(bad)
    assert getattr(info.value, "code", None) == "E_SCHEMA"
    report = verify(_plan().raw, OpContext(stores[b]))
    assert report.valid, report.to_dict()["violations"]
    again = Executor(OpContext(stores[b])).run(_plan(), store_digest=stores[b].digest())
    assert again.digest == trace.digest


def test_the_taint_ablation_reads_the_page(stores: dict[str, Store], traces: dict[str, Trace]) -> None:
    """With taint off (the ablation) nothing reads past a page: the count is the page's (the failure the
    full reads and the taint each prevent)."""
    store = stores[BACKENDS[0]]
    off = Executor(OpContext(store), config=ExecConfig(taint=False)).run(_plan())
    s8 = off.payload("s8")
    assert s8 is not None and s8["value"] == PAGE
    assert all("full" not in r for s in off.steps for r in s.reads)
    on = traces[BACKENDS[0]].payload("s8")
    assert on is not None and on["value"] > PAGE


def test_max_full_items_refuses_with_e_cost(stores: dict[str, Store], rows_built: list[int]) -> None:
    """A list longer than a full read may take is refused whole, before it is built."""
    store = stores[BACKENDS[0]]
    trace = Executor(OpContext(store), config=ExecConfig(max_full_items=20_000)).run(_plan())
    s2 = trace.record("s2")
    assert s2 is not None and s2.status == "refused" and s2.error is not None
    assert s2.error["error"] == "E_COST" and s2.error["details"]["stage"] == "input"
    assert s2.error["details"]["max_items"] == 20_000 and s2.error["details"]["items"] > 20_000
    assert sum(rows_built) < 100  # pages and the first rows the reads were priced by, never the list


def _two_steps(consumer: dict[str, Any]) -> Plan:
    steps = [step("s1", "list_events", {"limit": PAGE}), step("s2", "compute", consumer, "s1")]
    raw = {"plan_id": "two", "question": "one aggregate over every event", "steps": steps}
    return build_plan({**raw, "answer_spec": {"kind": "value", "from": "s2.value"}})


@pytest.fixture
def rows_built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many edge-version rows each build of a lazily held list_events result built."""
    built: list[int] = []
    build = EdgeVersionRows._build

    def counting(self: EdgeVersionRows, pos: Any) -> list[dict[str, Any]]:
        built.append(len(pos))
        return build(self, pos)

    monkeypatch.setattr(EdgeVersionRows, "_build", counting)
    return built


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_field_of_every_row_reads_as_a_column_equal_to_the_built_rows(
    stores: dict[str, Store], backend: str
) -> None:
    """A list_events result held lazily gives each field but props as a column: exactly that field of
    the built rows (what a ``rows[*].field`` read would take of them), in order."""
    require_backend(backend)
    rows = run_call(OpContext(stores[backend]), "list_events", {"limit": PAGE}, check_cost=False).full
    assert rows is not None and isinstance(rows["rows"], EdgeVersionRows)
    lazy = rows["rows"]
    built = canonicalize(list(lazy[0 : len(lazy)]))
    assert len(built) > 2 * 10_000 and set(built[0]) - {"props"}
    assert not lazy.has_column("props") and not lazy.has_column("no_such_field")
    for name in sorted(set(built[0]) - {"props"}):
        assert lazy.has_column(name), name
        assert canonicalize(lazy.column(name)) == [r[name] for r in built], name


def test_a_projection_of_a_whole_result_builds_no_rows(
    stores: dict[str, Store], traces: dict[str, Trace], rows_built: list[int]
) -> None:
    """The median of every event's vt_s reads the column: no row past the page (and the one the read
    was priced by) is built, and the value is the one the oracle test checks (the big plan's s2)."""
    store = stores[BACKENDS[0]]
    trace = Executor(OpContext(store)).run(_two_steps({"fn": "median", "input": ref("s1.rows[*].vt_s")}))
    s2 = trace.record("s2")
    assert s2 is not None and s2.ok and s2.reads[0]["full"]["items"] > 2 * 10_000
    assert sum(rows_built) <= PAGE + 1
    assert trace.payload("s2") == traces[BACKENDS[0]].payload("s2")
    assert s2.reads == traces[BACKENDS[0]].record("s2").reads  # type: ignore[union-attr]


def test_a_full_read_over_the_budget_is_refused_before_it_is_built(
    stores: dict[str, Store], rows_built: list[int]
) -> None:
    """Reading every whole row is priced before one is built (per JSON value, as the call prices it): over
    the step's budget it is E_COST at stage input, naming the read, its size and what to do instead;
    unguarded, it runs."""
    store = stores[BACKENDS[0]]
    group = _two_steps({"fn": "group", "input": ref("s1.rows"), "by": "src"})
    trace = Executor(OpContext(store), config=ExecConfig(budget_s=0.2)).run(group)
    s1, s2 = trace.record("s1"), trace.record("s2")
    assert s1 is not None and s1.ok and s2 is not None and s2.status == "refused" and s2.error is not None
    details = s2.error["details"]
    assert s2.error["error"] == "E_COST" and details["stage"] == "input" and details["ref"] == "s1.rows"
    assert details["items"] == s1.rows_total and details["estimate"]["seconds"] > details["budget_s"] == 0.2
    # what to do instead: narrow the producer, read one field as a column, or group events in the engine
    assert details["suggestions"] == [
        "narrow step s1 (a window, a filter) or group it there",
        "read only the field a reducer needs: s1.rows[*].<field>",
        "group, count or take medians of events in the engine with aggregate_events",
    ]
    assert sum(rows_built) <= PAGE + 1  # the page and the first row the read was priced by
    rows_built.clear()
    unguarded = Executor(OpContext(store), config=ExecConfig(check_cost=False)).run(group)
    assert unguarded.status == "ok" and sum(rows_built) >= 2 * 10_000
