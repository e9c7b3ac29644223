"""Hand-computed cases for the oracles of entity_history, snapshot_subgraph, diff_snapshots,
temporal_reachability, temporal_paths and the motif operators, plus cross-checks against second, naive
formulations. The other operators' oracles: test_oracles_analytics.py.

Every expected value is worked out by hand in the comment next to it (see docs/operators.md for the rules).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.operators.oracle_rows import OE, W100, edge, events, node, run, store_of
from tgms.engine.errors import InvalidArgError, NotFoundError, SchemaError
from tgms.engine.operators.oracle import ORACLES, OracleStore


def reach(store: OracleStore, src: str, **kw: Any) -> list[tuple[str, int]]:
    rows = run("temporal_reachability", store, src=src, **kw)["rows"]
    return [(r["uid"], r["earliest_arrival"]) for r in rows]


def test_registry_has_all_thirteen() -> None:
    """The paper's thirteen, and every other registered operator, each have an independent oracle."""
    from tgms.engine.operators.registry import OPERATOR_ORDER, REGISTRY, load_all

    load_all()
    assert len(OPERATOR_ORDER[:13]) == 13 and set(ORACLES) == set(REGISTRY) >= set(OPERATOR_ORDER)


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
