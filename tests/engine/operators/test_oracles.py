"""Hand-computed cases for every operator oracle, plus cross-checks against second, naive formulations.

Every expected value is worked out by hand in the comment next to it (see docs/operators.md for the rules).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from engine.errors import InvalidArgError, NotFoundError, SchemaError
from engine.operators.oracle import ORACLES, OracleStore
from engine.operators.oracle.evolution import ALLEN_RELATIONS, allen
from engine.timeutil import OPEN_END

OE = OPEN_END
W100 = {"t_a": 0, "t_b": 100}
_VIDS = itertools.count(500_000)


def node(uid: str, vt_s: int = 0, vt_e: int = OE, *, vid: int | None = None, label: str = "user",
         props: dict | None = None, tt_s: int = 0, tt_e: int = OE) -> dict[str, Any]:  # fmt: skip
    return {"vid": vid if vid is not None else next(_VIDS), "uid": uid,
            "label": label, "props": props or {}, "vt_s": vt_s, "vt_e": vt_e, "tt_s": tt_s, "tt_e": tt_e,
            "source": None, "provenance_ref": None}  # fmt: skip


def edge(src: str, dst: str, vt_s: int, vt_e: int | None = None, *, eid: int, vid: int, rel: str = "msg",
         props: dict | None = None, tt_s: int = 0, tt_e: int = OE) -> dict[str, Any]:  # fmt: skip
    return {"vid": vid, "eid": eid, "src": src, "dst": dst, "rel_type": rel, "disc": "", "props": props or {},
            "vt_s": vt_s, "vt_e": vt_s + 1 if vt_e is None else vt_e, "tt_s": tt_s, "tt_e": tt_e,
            "source": None, "provenance_ref": None}  # fmt: skip


def events(*triples: tuple[str, str, int], start_eid: int = 1) -> list[dict[str, Any]]:
    """Instantaneous events; eid per (src, dst) pair in order of first use, vid = position."""
    eids: dict[tuple[str, str], int] = {}
    out = []
    for i, (s, d, t) in enumerate(triples):
        eid = eids.setdefault((s, d), start_eid + len(eids))
        out.append(edge(s, d, t, eid=eid, vid=1000 + i))
    return out


def store_of(edges: list[dict[str, Any]], extra_nodes: list[dict[str, Any]] | None = None) -> OracleStore:
    uids = sorted({e["src"] for e in edges} | {e["dst"] for e in edges})
    return OracleStore([node(u) for u in uids] + (extra_nodes or []), edges)


def run(op: str, store: OracleStore, **args: Any) -> dict[str, Any]:
    return ORACLES[op](store, args)


def reach(store: OracleStore, src: str, **kw: Any) -> list[tuple[str, int]]:
    rows = run("temporal_reachability", store, src=src, **kw)["rows"]
    return [(r["uid"], r["earliest_arrival"]) for r in rows]


def test_registry_has_all_thirteen() -> None:
    assert len(ORACLES) == 13


# ------------------------------------------------------------------------------------- entity_history


def correction_store() -> OracleStore:
    # The paper's example: at tt=10 edge x->y p=1 over vt [0,100); at tt=20 corrected to p=2 on [40,60).
    return OracleStore(
        [node("x", vid=1, tt_s=5), node("y", vid=2, tt_s=5),
         node("z", vid=3, props={"name": "Z"}, tt_s=5, tt_e=20),
         node("z", vid=4, props={"name": "Zed"}, tt_s=20)],
        [edge("x", "y", 0, 100, eid=7, vid=20, props={"p": 1}, tt_s=10, tt_e=20),
         edge("x", "y", 0, 40, eid=7, vid=21, props={"p": 1}, tt_s=20),
         edge("x", "y", 40, 60, eid=7, vid=22, props={"p": 2}, tt_s=20),
         edge("x", "y", 60, 100, eid=7, vid=23, props={"p": 1}, tt_s=20)],
    )  # fmt: skip


def test_entity_history_edges_order_and_unknown() -> None:
    s = OracleStore(
        [node("a", 10, OE, vid=2), node("a", 0, 10, vid=1), node("b", vid=3)],
        [
            edge("a", "b", 5, eid=9, vid=11),
            edge("b", "a", 3, eid=8, vid=10),
            edge("c", "d", 1, eid=1, vid=12),
        ],
    )
    out = run("entity_history", s, uid="a", include_edges=True)
    assert [r["vid"] for r in out["rows"]] == [1, 2]  # by vt_s: [0,10) then [10,open)
    assert [e["vid"] for e in out["edges"]] == [10, 11]  # by vt_s: b->a@3, a->b@5; c->d not incident
    assert out["rows_total"] == 2 and out["edges_total"] == 2
    assert run("entity_history", s, uid="a")["edges"] == []  # include_edges defaults to false
    assert run("entity_history", s, uid="c")["rows"] == []  # known as an endpoint only: no node versions
    with pytest.raises(NotFoundError):
        run("entity_history", s, uid="nobody")
    with pytest.raises(SchemaError):
        run("entity_history", s, uid="a", bogus=1)


def test_correction_visible_at_current_belief_only() -> None:
    s = correction_store()
    cur = run("entity_history", s, uid="x", include_edges=True)["edges"]
    assert [(e["vid"], e["props"]["p"]) for e in cur] == [(21, 1), (22, 2), (23, 1)]  # three fragments
    old = run("entity_history", s, uid="x", include_edges=True, as_of_tt=15)["edges"]
    assert [(e["vid"], e["props"]["p"], e["tt_e"]) for e in old] == [(20, 1, OE)]  # closure at 20 censored
    # snapshot at vt=50: p=2 now, p=1 as believed at tt=15
    assert [e["props"]["p"] for e in run("snapshot_subgraph", s, seeds=["x"], t_valid=50)["rows"]] == [2]
    assert [
        e["props"]["p"] for e in run("snapshot_subgraph", s, seeds=["x"], t_valid=50, as_of_tt=15)["rows"]
    ] == [1]
    # at tt=25 the correction is believed and vid 20 (closed at 20) is not
    at25 = run("entity_history", s, uid="x", include_edges=True, as_of_tt=25)["edges"]
    assert [e["vid"] for e in at25] == [21, 22, 23]
    assert run("entity_history", s, uid="z", as_of_tt=19)["rows"][0]["props"] == {"name": "Z"}
    assert [r["vid"] for r in run("entity_history", s, uid="z", as_of_tt=20)["rows"]] == [4]
    with pytest.raises(NotFoundError):  # nothing about x was believed at tt=4
        run("entity_history", s, uid="x", as_of_tt=4)


# ------------------------------------------------------------------------------------ snapshot_subgraph


def snap_store() -> OracleStore:
    return OracleStore(
        [node(u, label="L" + u) for u in "abcd"] + [node("z"), node("late", 100, OE)],
        [edge("a", "b", 0, 10, eid=1, vid=1), edge("c", "b", 0, 10, eid=2, vid=2),
         edge("c", "d", 0, 10, eid=3, vid=3), edge("e", "a", 20, 30, eid=4, vid=4),
         edge("a", "c", 0, 10, eid=5, vid=5, rel="follows"), edge("a", "a", 0, 10, eid=6, vid=6)],
    )  # fmt: skip


def test_snapshot_hops_rel_types_and_isolated() -> None:
    s = snap_store()

    def snap(**kw: Any) -> tuple[list[tuple[str, int]], list[int]]:
        out = run("snapshot_subgraph", s, t_valid=5, **kw)
        return [(n["uid"], n["hop"]) for n in out["nodes"]], [e["eid"] for e in out["rows"]]

    # hop 1 from a (undirected): b via a->b, c via a->c (follows); e->a not valid at 5. Edges among {a,b,c}
    # sorted by (vt_s, eid): 1 (a->b), 2 (c->b), 5 (a->c), 6 (a->a); c->d excluded (d not in the set).
    assert snap(seeds=["a"]) == ([("a", 0), ("b", 1), ("c", 1)], [1, 2, 5, 6])
    assert snap(seeds=["a"], rel_types=["msg"]) == ([("a", 0), ("b", 1)], [1, 6])
    assert snap(seeds=["a"], rel_types=["msg"], hops=3) == (
        [("a", 0), ("b", 1), ("c", 2), ("d", 3)],
        [1, 2, 3, 6],
    )
    assert snap(seeds=["a"], hops=0) == ([("a", 0)], [6])  # hops=0: the seeds and edges among them
    assert snap(seeds=["z"]) == ([("z", 0)], [])  # valid but isolated
    out = run("snapshot_subgraph", s, seeds=["late", "a"], t_valid=5, hops=0)
    assert out["nodes"] == [{"uid": "a", "label": "La", "hop": 0}, {"uid": "late", "label": None, "hop": 0}]
    with pytest.raises(InvalidArgError):
        run("snapshot_subgraph", s, seeds=["a"], t_valid=5, hops=4)
    with pytest.raises(NotFoundError):
        run("snapshot_subgraph", s, seeds=["nope"], t_valid=5)


# -------------------------------------------------------------------------------------- diff_snapshots


def test_diff_snapshots_and_scope() -> None:
    s = OracleStore(
        [node("a"), node("b", 0, 10), node("c", 10, OE),
         node("d", 0, 10, vid=41, props={"w": 1, "k": "x"}),
         node("d", 10, OE, vid=42, props={"w": 2, "n": 3})],
        [edge("a", "b", 0, 10, eid=1, vid=1), edge("a", "c", 12, 20, eid=2, vid=2),
         edge("a", "d", 0, 10, eid=3, vid=3, props={"p": 1}),
         edge("a", "d", 10, OE, eid=3, vid=4, props={"p": 1}),
         edge("d", "a", 0, 10, eid=4, vid=5, props={"p": 1}),
         edge("d", "a", 10, OE, eid=4, vid=6, props={"p": 2})],
    )  # fmt: skip
    out = run("diff_snapshots", s, t1=5, t2=15)
    assert out["nodes_added"] == [{"uid": "c", "label": "user"}]
    assert out["nodes_removed"] == [{"uid": "b", "label": "user"}]
    assert [e["vid"] for e in out["edges_added"]] == [2] and [e["vid"] for e in out["edges_removed"]] == [1]
    # d: k removed, n added, w 1->2; edge 3 only changed version (same props): no row; edge 4 p 1->2
    assert [(r["kind"], r["uid"], r["eid"], r["key"], r["change"], r["before"], r["after"])
            for r in out["props_changed"]] == [
        ("node", "d", None, "k", "removed", "x", None), ("node", "d", None, "n", "added", None, 3),
        ("node", "d", None, "w", "modified", 1, 2), ("edge", None, 4, "p", "modified", 1, 2)]  # fmt: skip
    assert out["props_changed_total"] == 4
    # scope {c}, 1 hop: c isolated in G(5), {c, a} in G(15) -> scope {a, c}; b, d and their edges drop out
    sc = run("diff_snapshots", s, t1=5, t2=15, scope={"seeds": ["c"], "hops": 1})
    assert [n["uid"] for n in sc["nodes_added"]] == ["c"] and sc["nodes_removed"] == []
    assert [e["vid"] for e in sc["edges_added"]] == [2] and sc["edges_removed"] == []
    assert sc["props_changed"] == [] and sc["props_changed_total"] == 0
    with pytest.raises(InvalidArgError):
        run("diff_snapshots", s, t1=15, t2=15)


# ------------------------------------------------------------------------------- temporal_reachability


def test_reachability_multilabel_beats_greedy() -> None:
    # S->X@0, X->A@1, X->A@3, A->B@6, delta 3. A is first reached at 1, but from there B waits 5 > 3; the
    # later label A@3 (wait 3 at X) reaches B@6 (wait 3). A greedy single label (A@1) would miss B.
    s = store_of(events(("S", "X", 0), ("X", "A", 1), ("X", "A", 3), ("A", "B", 6)))
    assert reach(s, "S", window=W100, delta_max_wait=3) == [("X", 0), ("A", 1), ("B", 6)]
    assert reach(s, "S", window=W100, delta_max_wait=2) == [("X", 0), ("A", 1)]  # A@3 waits 3 > 2
    assert reach(s, "S", window=W100) == [("X", 0), ("A", 1), ("B", 6)]


def test_reachability_source_wait_intervals_bounds() -> None:
    # the wait at the source is not an intermediate wait: S->A@100 with delta 5 still reaches A
    assert reach(store_of(events(("S", "A", 100))), "S", window={"t_a": 0, "t_b": 200}, delta_max_wait=5) == [
        ("A", 100)
    ]
    # interval edges: S->A [5,20) used at 5; A->B [0,8) usable at 5 (5 < 8); A->C [0,5) not (5 !< 5);
    # A->D [40,60) needs tau=40 < t_b.
    s = store_of([edge("S", "A", 5, 20, eid=1, vid=1), edge("A", "B", 0, 8, eid=2, vid=2),
                  edge("A", "C", 0, 5, eid=3, vid=3), edge("A", "D", 40, 60, eid=4, vid=4)])  # fmt: skip
    assert reach(s, "S", window={"t_a": 0, "t_b": 40}) == [("A", 5), ("B", 5)]
    assert reach(s, "S", window={"t_a": 0, "t_b": 41}) == [("A", 5), ("B", 5), ("D", 40)]
    assert reach(s, "S", window={"t_a": 21, "t_b": 50}) == []  # S->A ended at 20
    # equal timestamps chain (non-decreasing times); the source is never a row even on a cycle back
    assert reach(store_of(events(("S", "A", 5), ("A", "B", 5), ("B", "S", 7))), "S", window=W100) == [
        ("A", 5), ("B", 5)]  # fmt: skip
    with pytest.raises(InvalidArgError):
        reach(s, "S", window={"t_a": 5, "t_b": 5})
    with pytest.raises(NotFoundError):
        reach(s, "Q", window=W100)


def test_reachability_direction() -> None:
    s = store_of(events(("S", "A", 1), ("B", "S", 2), ("A", "C", 3)))
    assert reach(s, "S", window=W100) == [("A", 1), ("C", 3)]
    assert reach(s, "S", window=W100, direction="in") == [("B", 2)]  # reversed arcs A->S@1, S->B@2, C->A@3
    assert reach(s, "S", window=W100, direction="both") == [("A", 1), ("B", 2), ("C", 3)]
    with pytest.raises(InvalidArgError):
        reach(s, "S", window=W100, direction="sideways")


# ------------------------------------------------------------------------------------- temporal_paths


def test_temporal_paths() -> None:
    s = OracleStore([node(u) for u in "SABD"], [
        edge("S", "A", 1, eid=1, vid=1), edge("S", "A", 3, eid=1, vid=2), edge("A", "D", 2, eid=2, vid=3),
        edge("S", "B", 1, eid=3, vid=4), edge("B", "D", 5, eid=4, vid=5), edge("S", "D", 9, eid=5, vid=6),
        edge("A", "B", 4, eid=6, vid=7)])  # fmt: skip

    def paths(**kw: Any) -> list[tuple[int, int, list[str]]]:
        rows = run("temporal_paths", s, src="S", dst="D", **kw)["rows"]
        return [(r["arrival"], r["hops"], r["nodes"]) for r in rows]

    # S,A,D arrives 2; S,B,D 5 (2 hops) before S,A,B,D 5 (3 hops); S,D 9. Ordered by (arrival, hops, nodes).
    assert paths(window=W100) == [(2, 2, ["S", "A", "D"]), (5, 2, ["S", "B", "D"]),
                                  (5, 3, ["S", "A", "B", "D"]), (9, 1, ["S", "D"])]  # fmt: skip
    assert paths(window=W100, k=2) == [(2, 2, ["S", "A", "D"]), (5, 2, ["S", "B", "D"])]
    assert [p[2] for p in paths(window=W100, max_hops=2)] == [["S", "A", "D"], ["S", "B", "D"], ["S", "D"]]
    assert paths(window={"t_a": 0, "t_b": 5}) == [(2, 2, ["S", "A", "D"])]  # B->D@5 needs 5 < t_b
    # from t_a=2 the S->A@1 version is gone; S->A@3 (vid 2) is used, A->D@2 no longer usable
    first = run("temporal_paths", s, src="S", dst="D", window={"t_a": 2, "t_b": 100})["rows"][0]
    assert first["nodes"] == ["S", "A", "B", "D"] and [e["vid"] for e in first["edges"]] == [2, 7, 5]
    assert first["edges"][0] == {"vid": 2, "eid": 1, "src": "S", "dst": "A", "rel_type": "msg", "t": 3}
    with pytest.raises(InvalidArgError):
        run("temporal_paths", s, src="S", dst="S", window=W100)
    with pytest.raises(InvalidArgError):
        run("temporal_paths", s, src="S", dst="D", window=W100, k=21)


# --------------------------------------------------------------------------------------------- motifs


def motif_count(s: OracleStore, motif: str, delta: int, window: dict = W100, **kw: Any) -> int:
    return run("count_temporal_motifs", s, motif=motif, delta=delta, window=window, **kw)["count"]


def test_motif_ties_broken_by_eid() -> None:
    # a->b@5 and b->a@5 tie on t. With eid(b->a)=1 < eid(a->b)=2 the order is b->a, a->b, a->b: no ping-pong
    # (u=b, v=a needs b->a third). With eid(b->a)=3 the order is a->b, b->a, a->b: one ping-pong.
    lo = [edge("a", "b", 5, eid=2, vid=1), edge("b", "a", 5, eid=1, vid=2), edge("a", "b", 7, eid=2, vid=3)]
    hi = [edge("a", "b", 5, eid=2, vid=1), edge("b", "a", 5, eid=3, vid=2), edge("a", "b", 7, eid=2, vid=3)]
    assert motif_count(store_of(lo), "M_2node_pingpong", 10) == 0
    assert motif_count(store_of(hi), "M_2node_pingpong", 10) == 1
    rows = run("find_temporal_motif_instances", store_of(hi), motif="M_2node_pingpong", delta=10, window=W100)
    assert [[e["vid"] for e in r["edges"]] for r in rows["rows"]] == [[1, 2, 3]]
    assert rows["rows"][0]["nodes"] == ["a", "b"]


def test_motif_patterns_delta_window_filter() -> None:
    cyc = store_of(events(("a", "b", 10), ("b", "c", 20), ("c", "a", 30)))
    assert motif_count(cyc, "M_triangle_cyclic", 20) == 1  # t3 - t1 = 20 <= 20
    assert motif_count(cyc, "M_triangle_cyclic", 19) == 0
    assert motif_count(cyc, "M_triangle_cyclic", 20, {"t_a": 0, "t_b": 30}) == 0  # c->a@30 outside [0,30)
    # the same triangle closed in another order (a->b, c->a, b->c) is not the cyclic pattern in event order
    assert (
        motif_count(store_of(events(("a", "b", 1), ("c", "a", 2), ("b", "c", 3))), "M_triangle_cyclic", 9)
        == 0
    )
    assert (
        motif_count(store_of(events(("a", "b", 1), ("a", "c", 2), ("b", "c", 3))), "M_triangle_acyclic_1", 2)
        == 1
    )
    # star: u->a@1 u->b@2 u->c@3 u->a@4; triples (1,2,3) and (2,3,4) have distinct targets
    star = store_of(events(("u", "a", 1), ("u", "b", 2), ("u", "c", 3), ("u", "a", 4)))
    assert [motif_count(star, "M_star_out_3", d) for d in (3, 2, 1)] == [2, 2, 0]
    out = run("find_temporal_motif_instances", star, motif="M_star_out_3", delta=3, window=W100)
    assert [r["nodes"] for r in out["rows"]] == [["u", "a", "b", "c"], ["u", "b", "c", "a"]]
    assert motif_count(store_of(events(("a", "b", 1), ("b", "c", 2), ("c", "d", 3))), "M_path_3", 5) == 1
    assert (
        motif_count(store_of(events(("a", "b", 1), ("b", "c", 2), ("c", "a", 3))), "M_path_3", 5) == 0
    )  # x=u
    assert (
        motif_count(store_of(events(("a", "a", 1), ("a", "a", 2), ("a", "a", 3))), "M_2node_pingpong", 5) == 0
    )
    # node_filter: both endpoints of every event must be in it; n_events_in_window counts after the filter
    res = run(
        "count_temporal_motifs", cyc, motif="M_triangle_cyclic", delta=50, window=W100, node_filter=["a", "b"]
    )
    assert res == {"count": 0, "n_events_in_window": 1}
    assert (
        run("count_temporal_motifs", cyc, motif="M_triangle_cyclic", delta=50, window=W100)[
            "n_events_in_window"
        ]
        == 3
    )
    with pytest.raises(InvalidArgError):
        motif_count(cyc, "M_square", 5)


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
