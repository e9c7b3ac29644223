"""Hand-computed cases for the oracles of graph_metric_timeseries, burst_detection, neighborhood_evolution,
co_active, resolve_entities and compute, plus cross-checks against second, naive formulations. The other
operators' oracles: test_oracles.py.

Every expected value is worked out by hand in the comment next to it (see docs/operators.md for the rules).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.engine.operators.oracle_rows import OE, edge, events, node, run, store_of
from tgms.engine.errors import InvalidArgError, NotFoundError, SchemaError
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.operators.oracle.evolution import ALLEN_RELATIONS, allen

# ----------------------------------------------------------------------------- graph_metric_timeseries


def metric_store() -> OracleStore:
    return OracleStore(
        [node("a"), node("b"), node("c", 15, OE), node("d", 25, 35)],
        [edge("a", "b", 0, OE, eid=1, vid=1),
         *events(("a", "b", 3), ("b", "a", 4), ("a", "c", 16), ("c", "a", 17), ("b", "c", 18), ("d", "a", 26),
                 ("a", "a", 27), start_eid=10)],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "values"),
    [
        ("node_count", [2, 2, 3]),  # valid at 0, 10, 20 (c from 15)
        ("active_edge_count", [1, 1, 1]),  # only the interval edge is valid at a bucket start
        # pairs overlapping the bucket / their endpoints: {ab,ba}/{a,b}; {ab,ac,ca,bc}/{a,b,c};
        # {ab,da}/{a,b,d} (the interval edge a->b overlaps every bucket; the loop a->a is not a pair)
        ("mean_out_degree", [1, 1.333333333, 0.666666667]),
        ("edge_event_count", [3, 3, 2]),  # vt_s in bucket: {0,3,4}, {16,17,18}, {26,27}
        ("new_node_rate", [2, 1, 1]),  # first seen a 0, b 0, c 15, d 25
        ("reciprocity", [1, 0.666666667, 0]),  # {ab,ba}: 2/2; {ac,ca,bc}: 2/3; {da} (aa is a loop): 0/1
    ],
)
def test_graph_metric_timeseries(metric: str, values: list[float]) -> None:
    out = run(
        "graph_metric_timeseries", metric_store(), metric=metric, window={"t_a": 0, "t_b": 30}, stride=10
    )
    assert [r["value"] for r in out["rows"]] == values
    assert [(r["t_a"], r["t_b"]) for r in out["rows"]] == [(0, 10), (10, 20), (20, 30)] and out[
        "n_buckets"
    ] == 3


def test_metric_partial_bucket_empty_window_and_limit() -> None:
    s = metric_store()
    out = run(
        "graph_metric_timeseries", s, metric="edge_event_count", window={"t_a": 0, "t_b": 25}, stride=10
    )
    assert [(r["t_a"], r["t_b"], r["value"]) for r in out["rows"]] == [(0, 10, 3), (10, 20, 3), (20, 25, 0)]
    empty = run("graph_metric_timeseries", s, metric="reciprocity", window={"t_a": 40, "t_b": 60}, stride=10)
    assert [r["value"] for r in empty["rows"]] == [0, 0]  # no pairs: 0 by convention
    with pytest.raises(InvalidArgError) as exc:
        run("graph_metric_timeseries", s, metric="node_count", window={"t_a": 0, "t_b": 2001}, stride=1)
    assert exc.value.details["min_stride"] == 2  # ceil(2001 / 2000)


# ------------------------------------------------------------------------------------- burst_detection


def series_store(counts: list[int], stride: int = 10) -> OracleStore:
    trip = [("p", "q", i * stride + j) for i, c in enumerate(counts) for j in range(c)]
    return store_of([*events(*trip), edge("r", "p", 1, eid=99, vid=1)])


def bursts(s: OracleStore, n: int, **kw: Any) -> dict[str, Any]:
    return run("burst_detection", s, target=kw.pop("target", "global"), window={"t_a": 0, "t_b": 10 * n},
               stride=10, **kw)  # fmt: skip


def test_burst_zero_variance_history_never_flags() -> None:
    # global counts [2,2,2,2,9,2] plus r->p@1 in bucket 0 -> [3,2,2,2,9,2]; use target q to get [2,2,2,2,9,2].
    s = series_store([2, 2, 2, 2, 9, 2])
    z = bursts(s, 6, target="q")
    # buckets 0-2: < 3 trailing; bucket 3 [2,2,2] and bucket 4 [2,2,2,2] have zero variance: unscored;
    # bucket 5: history [2,2,2,2,9], mu 3.4, sigma 2.8, z(2) = -0.5 -> scored, not flagged.
    assert z["rows"] == [] and z["n_scored"] == 1 and z["n_buckets"] == 6
    # ratio to the trailing median: b3 2/2 = 1, b4 9/2 = 4.5 >= 3 (flagged), b5 2/2 = 1
    r = bursts(s, 6, target="q", method="ratio")
    assert (
        r["rows"] == [{"t_a": 40, "t_b": 50, "value": 9, "score": 4.5, "baseline": 2}] and r["n_scored"] == 3
    )
    with pytest.raises(InvalidArgError):  # a one-bucket history may not be scored
        bursts(s, 6, params={"min_history": 1})
    with pytest.raises(InvalidArgError):
        bursts(s, 6, params={"w": 2, "min_history": 3})
    with pytest.raises(NotFoundError):
        bursts(s, 6, target="nobody")


def test_burst_zscore_rounding_and_target() -> None:
    s = series_store([1, 3, 1, 3, 10])
    # target q: b3 history [1,3,1]: mu 5/3, var 8/9, z = (4/3)/sqrt(8/9) = sqrt(2) = 1.414213562;
    # b4 history [1,3,1,3]: mu 2, var 1, z = 8 -> flagged at the default threshold 3.
    out = bursts(s, 5, target="q")
    assert (
        out["rows"] == [{"t_a": 40, "t_b": 50, "value": 10, "score": 8, "baseline": 2}]
        and out["n_scored"] == 2
    )
    low = bursts(s, 5, target="q", params={"threshold": 1.4142135})
    assert [r["score"] for r in low["rows"]] == [1.414213562, 8]
    # the score is rounded to 9 decimals, then compared with the rounded threshold (>=)
    assert len(bursts(s, 5, target="q", params={"threshold": 8.0000000004})["rows"]) == 1  # rounds to 8
    assert bursts(s, 5, target="q", params={"threshold": 8.000000001})["rows"] == []
    # w=2: min_history defaults to 2; b2 [1,3] z=-1, b3 [3,1] z=1, b4 [1,3] z=8
    assert bursts(s, 5, target="q", params={"w": 2})["n_scored"] == 3
    # global adds r->p@1 to bucket 0: [2,3,1,3,10]; b3 history [2,3,1]: mu 2, var 2/3, z = 1/sqrt(2/3)
    # = 1.224744871; b4 history [2,3,1,3]: mu 9/4, var 11/16, z = (31/4)/sqrt(11/16) = 31/sqrt(11)
    assert [r["score"] for r in bursts(s, 5, params={"threshold": 1})["rows"]] == [1.224744871, 9.346851682]


# ------------------------------------------------------------------------------ neighborhood_evolution


def test_neighborhood_evolution() -> None:
    s = store_of(
        [*events(("u", "a", 5), ("b", "u", 15), ("u", "c", 12), ("u", "c", 2), ("u", "u", 14), ("e", "u", 25),
                 ("f", "u", 50)), edge("u", "d", 8, 30, eid=77, vid=77)],
        [node("z")],
    )  # fmt: skip
    out = run("neighborhood_evolution", s, uid="u", t1=10, t2=30, stride=10)
    # before [0,10): {a, c, d}; window [10,30): {b, c, d, e} (loop and f@50 ignored)
    assert out["neighbors_gained"] == [{"uid": "b", "first_seen": 15}, {"uid": "e", "first_seen": 25}]
    assert out["neighbors_lost"] == [{"uid": "a", "last_seen": 5}]
    assert [r["degree"] for r in out["degree_series"]] == [3, 2]  # {b,c,d}, {d,e}
    one = run("neighborhood_evolution", s, uid="u", t1=10, t2=30)  # default stride: one bucket
    assert one["degree_series"] == [{"t_a": 10, "t_b": 30, "degree": 4}] and one["degree_series_total"] == 1
    iso = run("neighborhood_evolution", s, uid="z", t1=10, t2=30, stride=10)
    assert iso["neighbors_gained"] == [] and [r["degree"] for r in iso["degree_series"]] == [0, 0]
    with pytest.raises(InvalidArgError):
        run("neighborhood_evolution", s, uid="u", t1=30, t2=10)


# ----------------------------------------------------------------------------------------- co_active


def test_co_active() -> None:
    s = store_of([edge("x", "y", 0, 10, eid=1, vid=1), edge("y", "z", 10, 20, eid=2, vid=2),
                  edge("x", "z", 5, 15, eid=3, vid=3), edge("z", "x", 0, 10, eid=4, vid=4)])  # fmt: skip

    def pairs(rel: str, b_spec: dict | None = None) -> list[tuple[int, int]]:
        rows = run("co_active", s, a_spec={"src": "x"}, b_spec=b_spec or {}, allen_relation=rel)["rows"]
        return [(r["a"]["vid"], r["b"]["vid"]) for r in rows]

    assert pairs("meets") == [(1, 2)]  # [0,10) meets [10,20)
    assert pairs("equals") == [(1, 4)]  # (1,1) is a version with itself: excluded
    assert pairs("overlaps") == [(1, 3), (3, 2)]  # 0<5<10<15 and 5<10<15<20; ordered by a, then b
    assert pairs("overlapped_by") == [(3, 1), (3, 4)]
    # b restricted to edges overlapping [16,17): only vid 2; so only (3,2) overlaps
    assert pairs("overlaps", {"window": {"t_a": 16, "t_b": 17}, "rel_types": ["msg"]}) == [(3, 2)]
    assert pairs("overlaps", {"rel_types": ["other"]}) == []
    assert pairs("meets", {"dst": ["x"]}) == []  # only z->x [0,10): equals, not meets
    row = run("co_active", s, a_spec={"uid": "y"}, b_spec={"src": "z"}, allen_relation="equals")["rows"]
    assert row == [
        {
            "a": {"vid": 1, "eid": 1, "src": "x", "dst": "y", "rel_type": "msg", "vt_s": 0, "vt_e": 10},
            "b": {"vid": 4, "eid": 4, "src": "z", "dst": "x", "rel_type": "msg", "vt_s": 0, "vt_e": 10},
        }
    ]
    with pytest.raises(InvalidArgError):
        pairs("near")
    with pytest.raises(SchemaError):
        run("co_active", s, a_spec={"who": "x"}, b_spec={}, allen_relation="meets")


def test_allen_exactly_one_relation() -> None:
    defs = {  # the 13 relations by their endpoint definitions, independently of allen()
        "before": lambda a, b: a[1] < b[0], "after": lambda a, b: b[1] < a[0],
        "meets": lambda a, b: a[1] == b[0], "met_by": lambda a, b: b[1] == a[0],
        "overlaps": lambda a, b: a[0] < b[0] < a[1] < b[1],
        "overlapped_by": lambda a, b: b[0] < a[0] < b[1] < a[1],
        "starts": lambda a, b: a[0] == b[0] and a[1] < b[1],
        "started_by": lambda a, b: a[0] == b[0] and b[1] < a[1],
        "during": lambda a, b: b[0] < a[0] and a[1] < b[1],
        "contains": lambda a, b: a[0] < b[0] and b[1] < a[1],
        "finishes": lambda a, b: a[1] == b[1] and b[0] < a[0],
        "finished_by": lambda a, b: a[1] == b[1] and a[0] < b[0],
        "equals": lambda a, b: a == b,
    }  # fmt: skip
    assert set(defs) == set(ALLEN_RELATIONS)
    ivs = [(s, e) for s in range(5) for e in range(s + 1, 6)]
    for a, b in itertools.product(ivs, ivs):
        holds = [r for r, f in defs.items() if f(a, b)]
        assert holds == [allen(a[0], a[1], b[0], b[1])]


# ----------------------------------------------------------------------------------- resolve_entities


def test_resolve_entities_tiers() -> None:
    s = OracleStore(
        [node("n1", label="person", props={"name": "Alice Smith"}),
         node("n2", label="bot", props={"name": "alice smith"}),
         node("n3", props={"name": "Alicia"}), node("n42"), node("n5", 0, 10, props={"name": "Bob"}),
         node("n5", 10, OE, props={"name": "Robert"})],
        [edge("n1", "x9", 1, eid=1, vid=1)],
    )  # fmt: skip

    def res(q: str, **kw: Any) -> list[tuple[str, str]]:
        return [(r["uid"], r["match"]) for r in run("resolve_entities", s, query=q, **kw)["rows"]]

    assert res("n42") == [("n42", "uid")]
    assert res("42") == [("n42", "uid")]  # decimal digits d resolve to the SNAP uid n<d>
    assert res("x9") == [("x9", "uid")]  # an endpoint-only uid resolves by uid
    assert res("  ALICE   smith ") == [("n1", "name"), ("n2", "name")]  # casefold + whitespace collapse
    assert res("alice smith", label="person") == [("n1", "name")]
    assert res("ali") == [("n1", "prefix"), ("n2", "prefix"), ("n3", "prefix")]
    assert res("Bob") == []  # n5's latest version is named Robert
    assert run("resolve_entities", s, query="rob")["rows"] == [
        {"uid": "n5", "label": "user", "name": "Robert", "match": "prefix"}
    ]
    with pytest.raises(InvalidArgError):
        res("   ")


# -------------------------------------------------------------------------------------------- compute


def comp(fn: str, **kw: Any) -> Any:
    return run("compute", None, fn=fn, **kw)  # type: ignore[arg-type]


ROWS = [{"id": "a", "v": 3}, {"id": "b", "v": 5}, {"id": "c", "v": 5}, {"id": "d", "v": 1}]


def test_compute_reducers_exact() -> None:
    assert comp("count", input=ROWS)["value"] == 4
    assert comp("sum", input=[0.1] * 10)["value"] == 1  # exact decimals: 10 * 1/10 = 1 (float sum: 0.999...)
    assert comp("sum", input=[0.1, 0.2])["value"] == 0.3
    assert comp("sum", input=[])["value"] == 0
    assert comp("mean", input=[1, 2, 2])["value"] == 1.666666667  # 5/3 rounded to 9 decimals
    assert comp("mean", input=[1, 2])["value"] == 1.5
    assert comp("median", input=ROWS, field="v")["value"] == 4  # sorted 1,3,5,5 -> (3+5)/2
    assert comp("median", input=[])["value"] is None and comp("max", input=[])["value"] is None
    assert comp("min", input=ROWS, field="v")["value"] == 1 and comp("max", input=[2, 7.5])["value"] == 7.5
    with pytest.raises(InvalidArgError):
        comp("sum", input=["x"])
    with pytest.raises(InvalidArgError):
        comp("sum", input=ROWS, field="missing")
    with pytest.raises(InvalidArgError):
        comp("sum", input=[1], k=3)  # k is not an argument of sum
    with pytest.raises(InvalidArgError):
        comp("avg", input=[1])


def test_compute_topk_filter_sets() -> None:
    top = comp("topk", input=ROWS, field="v", k=2)
    assert [r["id"] for r in top["rows"]] == ["b", "c"] and top["value"] == 2  # tie 5/5 kept in input order
    assert comp("topk", input=[1, 9, 4])["rows"] == [9, 4, 1]  # k defaults to 10
    assert [r["id"] for r in comp("filter", input=ROWS, field="v", cmp=">=", value=3)["rows"]] == [
        "a",
        "b",
        "c",
    ]
    assert [r["id"] for r in comp("filter", input=ROWS, field="id", cmp="eq", value="d")["rows"]] == ["d"]
    assert comp("filter", input=[1, 2.0, "2"], cmp="==", value=2)["rows"] == [2.0]
    # inputs are canonicalized before comparing: 0.1 + 0.2 (0.30000000000000004) equals 0.3, is not > 0.3
    assert comp("filter", input=[0.1 + 0.2], cmp=">", value=0.3)["rows"] == []
    assert comp("filter", input=[0.1 + 0.2], cmp="==", value=0.3)["value"] == 1
    with pytest.raises(InvalidArgError):
        comp("filter", input=["a"], cmp="<", value=1)
    assert comp("union", a=["n3", "n1"], b=["n2", "n1"])["rows"] == ["n1", "n2", "n3"]
    assert comp("intersection", a=ROWS, b=[{"id": "b"}, {"id": "z"}], field="id")["rows"] == ["b"]
    out = comp("difference", input=[[3, 1, 2], [2.0]])
    assert out["rows"] == [1, 3] and out["value"] == 2
    with pytest.raises(InvalidArgError):
        comp("union", a=["x"], b=[1])


def test_compute_pairwise_and_intervals() -> None:
    assert comp("ratio", a=1, b=3)["value"] == 0.333333333
    assert comp("ratio", input=[6, 3])["value"] == 2
    assert comp("ratio", a=1, b=0)["value"] is None
    assert comp("diff", a=0.3, b=0.1)["value"] == 0.2  # exact: 3/10 - 1/10
    assert comp("percent", a=1, b=4)["value"] == 25
    assert comp("pct_change", a=150, b=100)["value"] == 50
    assert comp("interval_relation", a=[0, 10], b=[10, 20])["value"] == "meets"
    assert comp("interval_relation", a=5, b=6)["value"] == "meets"  # instants [5,6) and [6,7)
    assert comp("interval_relation", a=5, b=7)["value"] == "before"
    assert comp("interval_relation", a={"vt_s": 2, "vt_e": 4}, b={"t_a": 0, "t_b": 9})["value"] == "during"
    with pytest.raises(InvalidArgError):
        comp("interval_relation", a=[5, 5], b=[0, 1])
    with pytest.raises(SchemaError):
        comp("ratio", a=1)
