"""Edge predicates (``where``) in the graph operators: motifs, temporal reachability and paths, longest
paths (issue 27). Hand-made stores on both backends where the predicate changes the answer, each call
also checked against the oracle (which filters its edge list with its own predicate evaluator); the
random comparisons sample ``where`` in test_motifs_fast, test_traversal_fast and test_longest_path_fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BACKENDS, require_backend
from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import counter_clock
from tgms.engine.errors import TGMSError
from tgms.engine.execute.executor import Executor
from tgms.engine.execute.results import MemoryResults
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.plan.model import build_plan
from tgms.engine.store import Store

W = {"t_a": 0, "t_b": 100}
LOW = [{"field": "prop.w", "op": "le", "value": 3}]  # the light edges
HEAVY = [{"field": "prop.w", "op": "ge", "value": 5}]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """a→b@1 (w 1), b→a@2 (w 5), a→b@3 (w 1), a→c@4 (w 5), c→b@5 (w 5), b→d@6 (w 1), d→a@7 (w 2)."""
    require_backend(request.param)
    s = Store.create(tmp_path / request.param, request.param, now=counter_clock())
    edges = [("a", "b", 1, 1), ("b", "a", 2, 5), ("a", "b", 3, 1), ("a", "c", 4, 5), ("c", "b", 5, 5),
             ("b", "d", 6, 1), ("d", "a", 7, 2)]  # fmt: skip
    ops: list[dict[str, Any]] = [{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abcd"]
    ops += [
        {"op": "assert_edge", "src": x, "dst": y, "rel_type": "msg", "disc": f"m{t}", "vt_s": t,
         "vt_e": t + 1, "props": {"w": w}}
        for x, y, t, w in edges
    ]  # fmt: skip
    s.write(ops)
    yield s
    s.close()


def run(store: Store, op: str, **args: Any) -> dict[str, Any]:
    ctx = OpContext(store)
    assert compare(ctx, OracleStore(*store.public_rows()), op, dict(args)) == "ok"
    return call(ctx, op, args, check_cost=False)["payload"]


def test_motifs_use_only_the_edges_that_pass(store: Store) -> None:
    pingpong = {"motif": "M_2node_pingpong", "delta": 10, "window": W}
    assert run(store, "count_temporal_motifs", **pingpong)["count"] == 1  # a→b@1, b→a@2, a→b@3
    light = run(store, "count_temporal_motifs", **pingpong, where=LOW)
    assert light == {"count": 0, "n_events_in_window": 4}  # b→a (w 5) fails the predicate
    tri = {"motif": "M_triangle_cyclic", "delta": 10, "window": W}
    # a→b@1 or @3, b→d@6, d→a@7; and b→a@2, a→c@4, c→b@5
    assert run(store, "count_temporal_motifs", **tri)["count"] == 3
    rows = run(store, "find_temporal_motif_instances", **tri, where=LOW)["rows"]
    assert [(r["nodes"], r["edges"][0]["t"]) for r in rows] == [(["a", "b", "d"], 1), (["a", "b", "d"], 3)]
    heavy = run(store, "find_temporal_motif_instances", **tri, where=HEAVY)["rows"]
    assert [r["nodes"] for r in heavy] == [["b", "a", "c"]]
    # a field comparison and a time predicate are edge predicates too
    late = [{"field": "t", "op": "ge", "value": 2}]
    assert run(store, "count_temporal_motifs", **pingpong, where=late)["count"] == 0


def test_reachability_and_paths_follow_only_passing_edges(store: Store) -> None:
    every = run(store, "temporal_reachability", src="a", window=W)["rows"]
    assert [(r["uid"], r["earliest_arrival"]) for r in every] == [("b", 1), ("c", 4), ("d", 6)]
    heavy = run(store, "temporal_reachability", src="a", window=W, where=HEAVY)["rows"]
    assert [(r["uid"], r["earliest_arrival"]) for r in heavy] == [("c", 4), ("b", 5)]
    back = run(store, "temporal_reachability", src="a", window=W, direction="in", where=HEAVY)["rows"]
    assert [(r["uid"], r["earliest_arrival"]) for r in back] == [("b", 2), ("c", 5)]  # b→a, c→b backwards
    paths = run(store, "temporal_paths", src="a", dst="b", window=W, where=HEAVY)["rows"]
    assert [(p["nodes"], p["arrival"]) for p in paths] == [(["a", "c", "b"], 5)]
    assert run(store, "temporal_paths", src="a", dst="d", window=W, where=HEAVY)["rows"] == []


def test_longest_path_uses_only_passing_edges(store: Store) -> None:
    full = run(store, "longest_temporal_path", window=W)
    assert full["hops"] == 6  # a→b@1, b→a@2, a→c@4, c→b@5, b→d@6, d→a@7
    light = run(store, "longest_temporal_path", window=W, where=LOW)
    assert (light["hops"], light["nodes"]) == (3, ["a", "b", "d", "a"])  # a→b@1 (or 3), b→d@6, d→a@7
    heavy = run(store, "longest_temporal_path", window=W, src="a", where=HEAVY)
    assert (heavy["hops"], heavy["nodes"]) == (2, ["a", "c", "b"])


@pytest.mark.parametrize(
    "where",
    [
        [{"field": "weight", "op": "eq", "value": 1}],  # not an event field
        [{"field": "prop.w", "op": "in", "value": 1}],  # in needs a list
        [{"field": "prop.w", "op": "eq"}],  # neither value nor other
    ],
)
def test_bad_predicates_are_refused_alike(store: Store, where: list[dict[str, Any]]) -> None:
    for op, args in [
        ("count_temporal_motifs", {"motif": "M_path_3", "delta": 5, "window": W}),
        ("temporal_reachability", {"src": "a", "window": W}),
        ("temporal_paths", {"src": "a", "dst": "b", "window": W}),
        ("longest_temporal_path", {"window": W}),
    ]:
        code = run_code(store, op, {**args, "where": where})
        assert code == "E_INVALID_ARG", (op, where, code)


def run_code(store: Store, op: str, args: dict[str, Any]) -> str:
    ctx = OpContext(store)
    code = compare(ctx, OracleStore(*store.public_rows()), op, dict(args))
    with pytest.raises(TGMSError):
        call(ctx, op, args, check_cost=False)
    return code


def test_a_plan_with_edge_predicates_runs(store: Store) -> None:
    raw = {
        "steps": [
            {
                "id": "s1",
                "op": "count_temporal_motifs",
                "depends_on": [],
                "args": {"motif": "M_2node_pingpong", "delta": 10, "window": W, "where": LOW},
            },
        ],
        "answer_spec": {"kind": "count", "from": "s1.count"},
    }
    results = MemoryResults()
    trace = Executor(OpContext(store), results).run(build_plan(raw))
    assert [r.status for r in trace.steps] == ["ok"]
    assert results.get(trace.record("s1").envelope_digest)["payload"]["count"] == 0
