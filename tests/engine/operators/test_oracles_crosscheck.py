"""Cross-checks of the oracles against second, naive formulations (hypothesis), paging, immutability.

- temporal reachability without a wait limit vs a Bellman-Ford style fixpoint;
- wait-limited reachability vs brute force over every event sequence, and vs networkx on the explicit
  time-expanded state graph;
- motif counts vs every ordered triple of events matched by trying all variable assignments;
- bi-temporal immutability: results pinned to as_of_tt = a are unchanged by later writes.
"""

from __future__ import annotations

import itertools
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tgms.engine.errors import InvalidArgError, NotFoundError
from tgms.engine.operators.oracle import ORACLES, OracleStore, page
from tgms.engine.operators.oracle.motifs import MOTIFS
from tgms.engine.timeutil import OPEN_END

OE = OPEN_END


def node(uid: str, *, vid: int, tt_s: int = 0) -> dict[str, Any]:
    return {"vid": vid, "uid": uid, "label": "user", "props": {}, "vt_s": 0, "vt_e": OE, "tt_s": tt_s,
            "tt_e": OE, "source": None, "provenance_ref": None}  # fmt: skip


def edge(src: str, dst: str, vt_s: int, vt_e: int, *, eid: int, vid: int, rel: str) -> dict[str, Any]:
    return {"vid": vid, "eid": eid, "src": src, "dst": dst, "rel_type": rel, "disc": "", "props": {},
            "vt_s": vt_s, "vt_e": vt_e, "tt_s": 0, "tt_e": OE, "source": None,
            "provenance_ref": None}  # fmt: skip


def store_of(edges: list[dict[str, Any]]) -> OracleStore:
    uids = sorted({e["src"] for e in edges} | {e["dst"] for e in edges} | {"n0"})
    return OracleStore([node(u, vid=800 + i) for i, u in enumerate(uids)], edges)


def reach(store: OracleStore, src: str, **kw: Any) -> list[tuple[str, int]]:
    rows = ORACLES["temporal_reachability"](store, {"src": src, **kw})["rows"]
    return [(r["uid"], r["earliest_arrival"]) for r in rows]


def run(op: str, store: OracleStore, **args: Any) -> dict[str, Any]:
    return ORACLES[op](store, args)


# --------------------------------------------------------------------------------------------- paging


def test_page_lock_step_and_flags() -> None:
    payload = {"rows": list(range(5)), "rows_total": 5, "edges": ["x"], "edges_total": 1, "n": 7}
    p0 = page(payload, limit=2)
    assert p0["rows"] == [0, 1] and p0["edges"] == ["x"] and p0["edges_truncated"] is False
    assert p0["truncated"] is True and p0["cursor"] == "2" and p0["rows_total"] == 5 and p0["n"] == 7
    p2 = page(payload, limit=2, cursor_offset=4)
    assert p2["rows"] == [4] and p2["edges"] == [] and p2["edges_truncated"] is True
    assert p2["truncated"] is True and p2["cursor"] is None  # a last page at offset > 0 is still partial
    full = page(payload, limit=100)
    assert full["truncated"] is False and full["cursor"] is None and full["rows"] == payload["rows"]
    with pytest.raises(InvalidArgError):
        page(payload, limit=0)


@given(n=st.integers(0, 30), limit=st.integers(1, 12))
def test_pages_concatenate_to_the_full_list(n: int, limit: int) -> None:
    payload = {"rows": list(range(n)), "rows_total": n}
    got, offset = [], 0
    while True:
        p = page(payload, limit=limit, cursor_offset=offset)
        got += p["rows"]
        assert p["truncated"] == (len(p["rows"]) < n)
        if p["cursor"] is None:
            break
        offset = int(p["cursor"])
    assert got == payload["rows"]


# ------------------------------------------------------------------- cross-checks with hypothesis

UIDS = ["n0", "n1", "n2", "n3", "n4"]


@st.composite
def edge_lists(draw: st.DrawFn, max_edges: int = 8, intervals: bool = True, t_max: int = 30) -> list[dict]:
    out = []
    for i in range(draw(st.integers(0, max_edges))):
        s, d = draw(st.sampled_from(UIDS)), draw(st.sampled_from(UIDS))
        t = draw(st.integers(0, t_max))
        length = draw(st.integers(1, 12)) if intervals and draw(st.booleans()) else 1
        rel = draw(st.sampled_from(["msg", "fw"]))
        eid = 10 * UIDS.index(s) + UIDS.index(d) + (100 if rel == "fw" else 0)
        out.append(edge(s, d, t, t + length, eid=eid, vid=i, rel=rel))
    return out


def fixpoint_reach(edges: list[dict], src: str, t_a: int, t_b: int) -> list[tuple[str, int]]:
    """Bellman-Ford style relaxation of earliest arrivals (no wait limit)."""
    arr = {src: t_a}
    changed = True
    while changed:
        changed = False
        for e in edges:
            if e["src"] in arr:
                tau = max(arr[e["src"]], e["vt_s"])
                if tau < e["vt_e"] and tau < t_b and tau < arr.get(e["dst"], OE):
                    arr[e["dst"]], changed = tau, True
    del arr[src]
    return sorted(arr.items(), key=lambda p: (p[1], p[0]))


def brute_reach_events(edges: list[dict], src: str, t_a: int, t_b: int, delta: int) -> list[tuple[str, int]]:
    """Every sequence of distinct events (enough for instantaneous events) checked as a walk from src."""
    best: dict[str, int] = {}
    for k in range(1, len(edges) + 1):
        for seq in itertools.permutations(edges, k):
            at, alpha, ok = src, t_a, True
            for i, e in enumerate(seq):
                tau = max(alpha, e["vt_s"])
                if e["src"] != at or not (tau < e["vt_e"] and tau < t_b) or (i > 0 and tau - alpha > delta):
                    ok = False
                    break
                at, alpha = e["dst"], tau
            if ok and at != src:
                best[at] = min(best.get(at, OE), alpha)
    return sorted(best.items(), key=lambda p: (p[1], p[0]))


def expanded_reach(edges: list[dict], src: str, t_a: int, t_b: int, delta: int) -> list[tuple[str, int]]:
    """networkx over the explicit time-expanded state graph {(node, time)} with a free start state."""
    times = {t_a} | {e["vt_s"] for e in edges}
    g = nx.DiGraph()
    g.add_node("start")
    for e in edges:
        for alpha in times:
            tau = max(alpha, e["vt_s"])
            if tau < e["vt_e"] and tau < t_b:
                if tau - alpha <= delta:
                    g.add_edge((e["src"], alpha), (e["dst"], tau))
                if e["src"] == src and alpha == t_a:
                    g.add_edge("start", (e["dst"], tau))
    best: dict[str, int] = {}
    for v, t in nx.descendants(g, "start"):
        if v != src:
            best[v] = min(best.get(v, OE), t)
    return sorted(best.items(), key=lambda p: (p[1], p[0]))


@settings(max_examples=150, deadline=None)
@given(
    edges=edge_lists(),
    t_a=st.integers(0, 20),
    span=st.integers(1, 30),
    direction=st.sampled_from(["out", "in"]),
)
def test_reachability_matches_fixpoint(edges: list[dict], t_a: int, span: int, direction: str) -> None:
    s = store_of(edges)
    win = {"t_a": t_a, "t_b": t_a + span}
    arcs = edges if direction == "out" else [{**e, "src": e["dst"], "dst": e["src"]} for e in edges]
    assert reach(s, "n0", window=win, direction=direction) == fixpoint_reach(arcs, "n0", t_a, t_a + span)


@settings(max_examples=120, deadline=None)
@given(
    edges=edge_lists(max_edges=6, intervals=False, t_max=12), delta=st.integers(0, 4), t_a=st.integers(0, 4)
)
def test_wait_limited_reachability_matches_brute_force(edges: list[dict], delta: int, t_a: int) -> None:
    s = store_of(edges)
    got = reach(s, "n0", window={"t_a": t_a, "t_b": 13}, delta_max_wait=delta)
    assert got == brute_reach_events(edges, "n0", t_a, 13, delta)


@settings(max_examples=120, deadline=None)
@given(edges=edge_lists(max_edges=9), delta=st.integers(0, 6))
def test_wait_limited_reachability_matches_time_expanded_graph(edges: list[dict], delta: int) -> None:
    s = store_of(edges)
    got = reach(s, "n0", window={"t_a": 0, "t_b": 35}, delta_max_wait=delta)
    assert got == expanded_reach(edges, "n0", 0, 35, delta)


NAIVE_PATTERNS = {
    "M_triangle_cyclic": "uv vw wu",
    "M_triangle_acyclic_1": "uv uw vw",
    "M_2node_pingpong": "uv vu uv",
    "M_star_out_3": "ua ub uc",
    "M_path_3": "uv vw wx",
}


def naive_motif_count(edges: list[dict], motif: str, delta: int, t_a: int, t_b: int) -> int:
    evs = [e for e in edges if t_a <= e["vt_s"] < t_b]
    pattern = NAIVE_PATTERNS[motif].split()
    variables = sorted(set("".join(pattern)))
    n = 0
    for trip in itertools.permutations(evs, 3):
        keys = [(e["vt_s"], e["eid"], e["vid"]) for e in trip]
        if not (keys[0] < keys[1] < keys[2]) or trip[2]["vt_s"] - trip[0]["vt_s"] > delta:
            continue
        nodes = sorted({x for e in trip for x in (e["src"], e["dst"])})
        n += any(
            all((asg[p[0]], asg[p[1]]) == (e["src"], e["dst"]) for p, e in zip(pattern, trip, strict=True))
            for perm in itertools.permutations(nodes, len(variables))
            for asg in [dict(zip(variables, perm, strict=True))]
        )
    return n


@settings(max_examples=150, deadline=None)
@given(edges=edge_lists(max_edges=9, t_max=10), motif=st.sampled_from(sorted(MOTIFS)),
       delta=st.integers(0, 8), t_a=st.integers(0, 5))  # fmt: skip
def test_motif_counts_match_naive_triples(edges: list[dict], motif: str, delta: int, t_a: int) -> None:
    s = store_of(edges)
    win = {"t_a": t_a, "t_b": 11}
    count = run("count_temporal_motifs", s, motif=motif, delta=delta, window=win)["count"]
    assert count == naive_motif_count(edges, motif, delta, t_a, 11)
    rows = run("find_temporal_motif_instances", s, motif=motif, delta=delta, window=win)["rows"]
    keys = [[(e["t"], e["eid"], e["vid"]) for e in r["edges"]] for r in rows]
    assert len(rows) == count and keys == sorted(keys)


@st.composite
def histories(draw: st.DrawFn) -> tuple[OracleStore, OracleStore, int]:
    """A store, the same store after later writes (new versions, closures after a), and a."""
    a = draw(st.integers(5, 25))
    edges = draw(edge_lists(max_edges=8))
    nodes = [node(u, vid=900 + i, tt_s=draw(st.integers(0, 30))) for i, u in enumerate(UIDS)]
    for e in edges:
        e["tt_s"] = draw(st.integers(0, 30))
        if draw(st.booleans()):
            e["tt_e"] = e["tt_s"] + draw(st.integers(1, 15))
    before = OracleStore(nodes, edges)
    later_edges = [dict(e) for e in edges]
    for e in later_edges:
        if e["tt_e"] == OE and draw(st.booleans()):
            e["tt_e"] = max(a, e["tt_s"]) + draw(st.integers(1, 10))  # closed after a
    extra = [dict(e, vid=5000 + i, tt_s=a + 1 + i, vt_s=e["vt_s"] + 1, vt_e=e["vt_e"] + 1)
             for i, e in enumerate(draw(edge_lists(max_edges=4)))]  # fmt: skip
    after = OracleStore([*nodes, node("n9", vid=999, tt_s=a + 1)], later_edges + extra)
    return before, after, a


def outcome(op: str, s: OracleStore, args: dict) -> Any:
    try:
        return ORACLES[op](s, args)
    except NotFoundError as exc:
        return ("E_NOT_FOUND", exc.message)


@settings(max_examples=80, deadline=None)
@given(h=histories())
def test_bitemporal_immutability(h: tuple[OracleStore, OracleStore, int]) -> None:
    before, after, a = h
    win = {"t_a": 0, "t_b": 45}
    calls = [
        ("entity_history", {"uid": "n0", "include_edges": True}),
        ("snapshot_subgraph", {"seeds": ["n0"], "t_valid": 10, "hops": 2}),
        ("diff_snapshots", {"t1": 5, "t2": 20}),
        ("temporal_reachability", {"src": "n1", "window": win, "delta_max_wait": 3}),
        ("count_temporal_motifs", {"motif": "M_path_3", "delta": 10, "window": win}),
        ("graph_metric_timeseries", {"metric": "reciprocity", "window": win, "stride": 5}),
        ("neighborhood_evolution", {"uid": "n2", "t1": 10, "t2": 30, "stride": 5}),
        ("co_active", {"a_spec": {"rel_types": ["msg"]}, "b_spec": {}, "allen_relation": "overlaps"}),
        ("resolve_entities", {"query": "n9"}),
    ]
    for op, args in calls:
        assert outcome(op, before, {**args, "as_of_tt": a}) == outcome(op, after, {**args, "as_of_tt": a}), op
