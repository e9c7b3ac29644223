"""temporal_reachability and temporal_paths: the fast path returns the oracle's canonical payload.

Randomized stores mix instantaneous events, interval edges (some open-ended), equal timestamps (coarse
time grids), self-loops, corrections that split intervals and retractions over several batches, so past
``as_of_tt`` values see other beliefs. Hand-made cases pin the traps: a greedy single label under a wait
limit, interval edges entered after they start, equal-time chains, the three directions, paging.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, counter_clock, edge_where
from tgms.engine.errors import CostError, TGMSError
from tgms.engine.operators import temporal_paths, traversal
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import COEFFICIENTS, StoreProfile, check_budget, memory_factor
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import ORACLES, OracleStore, page
from tgms.engine.operators.registry import get_operator
from tgms.engine.store import Store
from tgms.engine.timeutil import OPEN_END

OPS = ("temporal_reachability", "temporal_paths")
#: (n_uids, t_max, n_batches): coarse grids give many equal timestamps
SHAPES = ((6, 12, 5), (8, 60, 6), (10, 200, 6), (7, 30, 8), (9, 400, 5))


def random_store(root: Path, backend: str, seed: int) -> tuple[Store, list[int], list[str], int]:
    """A store with random bi-temporal history; returns it, the tt of each batch, its uids and t_max."""
    rng = random.Random(seed)
    n_uids, t_max, n_batches = SHAPES[seed % len(SHAPES)]
    store = Store.create(root, backend, now=counter_clock())
    uids = [f"v{i}" for i in range(n_uids)]
    tts = [store.write([{"op": "assert_node", "uid": u, "vt_s": rng.randint(0, t_max)} for u in uids]).tt]
    facts: list[tuple[dict[str, Any], int, int]] = []  # (ref, vt_s, vt_e) of every asserted edge
    for b in range(n_batches):
        ops = []
        for i in range(rng.randint(4, 12)):
            s, d = rng.choice(uids), rng.choice(uids)
            t = rng.randint(0, t_max)
            if rng.random() < 0.3:  # interval edge; a fresh disc keeps identities from overlapping
                rel, disc = "follows", f"b{b}.{i}"
                end = OPEN_END if rng.random() < 0.15 else t + rng.choice([2, 5, 20, t_max // 2 + 1])
            else:
                rel, disc, end = "msg", "", t + 1
            ops.append({"op": "assert_edge", "src": s, "dst": d, "rel_type": rel, "disc": disc,
                        "props": {"w": rng.randint(1, 4)}, "vt_s": t, "vt_e": end})  # fmt: skip
            facts.append(({"src": s, "dst": d, "rel_type": rel, "disc": disc}, t, end))
        r = store.try_write(ops)
        if r.status == "committed":
            tts.append(r.tt)
        for _ in range(rng.randint(1, 3)):  # corrections (split intervals, new props) and retractions
            ref, vs, ve = rng.choice(facts)
            a = rng.randint(vs, min(ve, vs + t_max) - 1)
            fix = (
                {"op": "correct", "ref": ref, "props": {"w": rng.randint(5, 9)}, "vt_s": a,
                 "vt_e": min(ve, a + rng.randint(1, t_max // 3 + 1))}
                if rng.random() < 0.6 or ve == vs + 1
                else {"op": "retract", "ref": ref, "t": a + 1}
            )  # fmt: skip
            r = store.try_write([fix])
            if r.status == "committed":
                tts.append(r.tt)
    return store, tts, uids, t_max


def _window(rng: random.Random, t_max: int) -> dict[str, int]:
    x = rng.random()
    if x < 0.1:  # empty: after every edge
        return {"t_a": 3 * t_max, "t_b": 3 * t_max + rng.randint(1, 50)}
    if x < 0.2:
        return {"t_a": rng.randint(0, t_max), "t_b": OPEN_END}
    a = rng.randint(0, t_max)
    return {"t_a": a, "t_b": a + rng.randint(1, t_max + 5)}


def sample(op: str, rng: random.Random, uids: list[str], tts: list[int], t_max: int) -> dict[str, Any]:
    args: dict[str, Any]
    if op == "temporal_reachability":
        args = {"src": rng.choice(uids), "window": _window(rng, t_max)}
        if rng.random() < 0.7:
            args["direction"] = rng.choice(["out", "in", "both"])
        if rng.random() < 0.55:
            args["delta_max_wait"] = rng.choice([0, 1, 2, rng.randint(0, t_max // 2), 10**18])
        if rng.random() < 0.5:
            args["strict"] = rng.random() < 0.8
        w = args["window"]
        if rng.random() < 0.35:  # anywhere in (t_a, t_b], often early, sometimes t_b itself
            width = min(w["t_b"] - w["t_a"], 2 * t_max)
            args["depart_by"] = rng.choice([w["t_a"] + rng.randint(1, max(1, width // 4)), w["t_a"] + 1,
                                            w["t_a"] + rng.randint(1, width), w["t_b"]])  # fmt: skip
        delta = args.get("delta_max_wait")
        if args.get("strict") and delta is not None and 0 < delta < w["t_b"] - w["t_a"] - 1:
            # a strict hop over an interval edge takes 1 µs: round an open-ended interval loop, a
            # wait-limited search meets a state per µs up to t_b, so the window stays short
            w["t_b"] = min(w["t_b"], w["t_a"] + t_max + 5)
            if "depart_by" in args:
                args["depart_by"] = min(args["depart_by"], w["t_b"])
        if rng.random() < 0.35:  # the fewest hops to each node (not beside a wait limit)
            args["hops"] = True
            args.pop("delta_max_wait", None)
        if rng.random() < 0.25:  # several sources: a walk from each (a repeat walked once)
            args["src"] = [rng.choice(uids) for _ in range(rng.randint(1, 4))]
    else:
        s, d = rng.sample(uids, 2)
        args = {"src": s, "dst": d, "window": _window(rng, t_max)}
        if rng.random() < 0.8:
            args["k"] = rng.choice([1, 2, 3, 5, 20])
        if rng.random() < 0.8:
            args["max_hops"] = rng.randint(1, 6)
        if rng.random() < 0.5:
            args["strict"] = True
    if rng.random() < 0.3:
        args["where"] = edge_where(rng, t_max)
    if rng.random() < 0.35:
        args["as_of_tt"] = rng.choice(tts)
    if rng.random() < 0.4:
        args["limit"] = rng.randint(1, 3)
    return args


@pytest.mark.parametrize("op", OPS)
def test_fast_path_matches_oracle(
    tmp_path: Path, backend: str, op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes: Counter[str] = Counter()
    changed: Counter[str] = Counter()
    n_stores = len(SHAPES)
    per_store = -(-N_CASES // n_stores)
    for s in range(n_stores):
        # tiny time buckets on some stores, so that the wait-limited search settles many buckets
        monkeypatch.setattr(traversal, "_BUCKET_EVENTS", 2 if s % 2 else 4096)
        store, tts, uids, t_max = random_store(tmp_path / f"s{s}", backend, seed=1000 + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            rng = random.Random(s * 7 + len(op))
            for _ in range(per_store):
                args = sample(op, rng, uids, tts, t_max)
                outcomes[compare(ctx, oracle, op, args)] += 1
                for new in ("strict", "depart_by"):  # the new arguments change some answers
                    if args.get(new) and outcomes["ok"] % 2:
                        rows = call(ctx, op, args, check_cost=False)["payload"]["rows"]
                        without = {k: v for k, v in args.items() if k != new}
                        changed[new] += rows != call(ctx, op, without, check_cost=False)["payload"]["rows"]
        finally:
            store.close()
    assert sum(outcomes.values()) >= N_CASES
    assert outcomes["ok"] == sum(outcomes.values()), outcomes  # sampled args are all valid
    if N_CASES >= 50:  # enough draws to meet both
        assert changed["strict"] and (op == "temporal_paths" or changed["depart_by"]), changed


# -- hand-made stores -------------------------------------------------------------------------------


def edge_store(tmp_path: Path, backend: str, edges: list[tuple[str, str, int, int]]) -> Store:
    """One batch of edges (src, dst, vt_s, vt_e); msg for instants, follows (own disc) for intervals."""
    store = Store.create(tmp_path / "hand", backend, now=counter_clock())
    uids = sorted({u for s, d, _, _ in edges for u in (s, d)})
    ops: list[dict[str, Any]] = [{"op": "assert_node", "uid": u, "vt_s": 0} for u in uids]
    for i, (s, d, vs, ve) in enumerate(edges):
        interval = ve != vs + 1
        ops.append({"op": "assert_edge", "src": s, "dst": d, "rel_type": "follows" if interval else "msg",
                    "disc": f"d{i}" if interval else "", "vt_s": vs, "vt_e": ve})  # fmt: skip
    store.write(ops)
    return store


def run(store: Store, op: str, **args: Any) -> dict[str, Any]:
    """The fast payload, checked against the oracle (whole payload, first page)."""
    ctx = OpContext(store)
    assert compare(ctx, OracleStore(*store.public_rows()), op, dict(args)) == "ok"
    return call(ctx, op, args, check_cost=False)["payload"]


def reach(store: Store, src: str, **kw: Any) -> list[tuple[str, int]]:
    rows = run(store, "temporal_reachability", src=src, **kw)["rows"]
    return [(r["uid"], r["earliest_arrival"]) for r in rows]


W = {"t_a": 0, "t_b": 100}


def test_wait_limit_needs_every_label(tmp_path: Path, backend: str) -> None:
    # S->X@0, X->A@1, X->A@3, A->B@6. The earliest label A@1 cannot leave for B within 3 (waits 5); the
    # later label A@3 (X waited 3) does. A greedy single label would miss B.
    s = edge_store(
        tmp_path, backend, [("S", "X", 0, 1), ("X", "A", 1, 2), ("X", "A", 3, 4), ("A", "B", 6, 7)]
    )
    try:
        assert reach(s, "S", window=W, delta_max_wait=3) == [("X", 0), ("A", 1), ("B", 6)]
        assert reach(s, "S", window=W, delta_max_wait=2) == [("X", 0), ("A", 1)]
        assert reach(s, "S", window=W) == [("X", 0), ("A", 1), ("B", 6)]
        # from X with delta 0: the wait at the source is free (A@1, A@3), but both A labels wait for B
        assert reach(s, "X", window=W, delta_max_wait=0) == [("A", 1)]
    finally:
        s.close()


def test_wait_limit_through_interval_edges(tmp_path: Path, backend: str) -> None:
    # S->A@0 and S->A@28; A->B open [0, 50); B->C@30. With delta 5: B@0 (from A@0) cannot wait 30 for
    # B->C, but A@28 enters A->B mid-interval at 28 (no wait), and B@28 leaves at 30 (wait 2): C@30.
    s = edge_store(
        tmp_path, backend, [("S", "A", 0, 1), ("S", "A", 28, 29), ("A", "B", 0, 50), ("B", "C", 30, 31)]
    )
    try:
        assert reach(s, "S", window=W, delta_max_wait=5) == [("A", 0), ("B", 0), ("C", 30)]
        assert reach(s, "S", window={"t_a": 0, "t_b": 30}, delta_max_wait=5) == [("A", 0), ("B", 0)]
        assert reach(s, "S", window=W, delta_max_wait=1) == [("A", 0), ("B", 0)]
    finally:
        s.close()


def test_interval_edges_entered_after_they_start(tmp_path: Path, backend: str) -> None:
    # A->B is valid [0, 100) and sorts before S->A@5 by vt_s; it is still usable at 5. A->C [0, 5) is not
    # (5 !< 5). A chain of equal times S->D@7, D->E@7, E->F@7 holds whatever the eid order.
    s = edge_store(
        tmp_path,
        backend,
        [("S", "A", 5, 6), ("A", "B", 0, 100), ("A", "C", 0, 5), ("E", "F", 7, 8), ("D", "E", 7, 8),
         ("S", "D", 7, 8), ("B", "G", 60, 200)],
    )  # fmt: skip
    try:
        assert reach(s, "S", window=W) == [("A", 5), ("B", 5), ("D", 7), ("E", 7), ("F", 7), ("G", 60)]
        assert reach(s, "S", window={"t_a": 6, "t_b": 100}) == [("D", 7), ("E", 7), ("F", 7)]
        assert reach(s, "A", window={"t_a": 70, "t_b": 80}) == [("B", 70), ("G", 70)]
        assert reach(s, "S", window={"t_a": 500, "t_b": 600}) == []  # empty window
    finally:
        s.close()


def test_directions(tmp_path: Path, backend: str) -> None:
    s = edge_store(tmp_path, backend, [("S", "A", 1, 2), ("B", "S", 2, 3), ("A", "C", 3, 4)])
    try:
        assert reach(s, "S", window=W) == [("A", 1), ("C", 3)]
        assert reach(s, "S", window=W, direction="in") == [("B", 2)]  # A->S@1, S->B@2, C->A@3
        assert reach(s, "S", window=W, direction="both") == [("A", 1), ("B", 2), ("C", 3)]
        assert reach(s, "C", window=W, direction="in", delta_max_wait=1) == [("A", 3)]
    finally:
        s.close()


def test_strict_equal_times_do_not_chain(tmp_path: Path, backend: str) -> None:
    # S->A@5, A->B@5, A->B@7, B->C@7; A->D open [0, 50); S->E@5, E->F open [5, 6) (one instant)
    s = edge_store(
        tmp_path,
        backend,
        [("S", "A", 5, 6), ("A", "B", 5, 6), ("A", "B", 7, 8), ("B", "C", 7, 8), ("A", "D", 0, 50),
         ("S", "E", 5, 6), ("E", "F", 5, 6)],
    )  # fmt: skip
    try:
        loose = [("A", 5), ("B", 5), ("D", 5), ("E", 5), ("F", 5), ("C", 7)]
        assert reach(s, "S", window=W) == loose
        # strict: B only by the later A->B (7), so not B->C at 7; an open edge is entered 1 µs later
        assert reach(s, "S", window=W, strict=True) == [("A", 5), ("E", 5), ("D", 6), ("B", 7)]
        assert reach(s, "S", window={"t_a": 0, "t_b": 6}, strict=True) == [("A", 5), ("E", 5)]
        # the first edge from src is taken at t_a when open (not t_a + 1)
        assert reach(s, "A", window={"t_a": 10, "t_b": 20}, strict=True) == [("D", 10)]
        # with a wait limit: the entry 1 µs later is a wait of 1
        assert reach(s, "S", window=W, strict=True, delta_max_wait=0) == [("A", 5), ("E", 5)]
        assert reach(s, "S", window=W, strict=True, delta_max_wait=1) == [("A", 5), ("E", 5), ("D", 6)]
        assert reach(s, "S", window=W, strict=True, delta_max_wait=2) == [
            ("A", 5), ("E", 5), ("D", 6), ("B", 7)]  # fmt: skip
        assert reach(s, "S", window=W, delta_max_wait=0) == loose[:5]
        # temporal_paths: the same rule (S->A->B->C needs A->B@7, then B->C@7 does not chain)
        rows = run(s, "temporal_paths", src="S", dst="B", window=W, strict=True)["rows"]
        assert [(r["arrival"], r["nodes"]) for r in rows] == [(7, ["S", "A", "B"])]
        assert run(s, "temporal_paths", src="S", dst="C", window=W, strict=True)["rows"] == []
        assert run(s, "temporal_paths", src="S", dst="C", window=W)["rows"][0]["arrival"] == 7
    finally:
        s.close()


def test_depart_by_limits_the_first_edge_only(tmp_path: Path, backend: str) -> None:
    # S->A@9, S->B@10, A->S@12, S->C@20
    s = edge_store(
        tmp_path, backend, [("S", "A", 9, 10), ("S", "B", 10, 11), ("A", "S", 12, 13), ("S", "C", 20, 21)]
    )
    try:
        assert reach(s, "S", window=W) == [("A", 9), ("B", 10), ("C", 20)]
        # a departure just before depart_by counts, one at it does not; back at S at 12 the traveller
        # leaves again as from any stop: S->C@20 (depart_by does not apply), S->B@10 is past
        assert reach(s, "S", window=W, depart_by=10) == [("A", 9), ("C", 20)]
        assert reach(s, "S", window=W, depart_by=11) == [("A", 9), ("B", 10), ("C", 20)]
        assert reach(s, "S", window=W, depart_by=9) == []
        assert reach(s, "S", window=W, depart_by=100) == reach(s, "S", window=W)
        # the return to S is an intermediate stop: its wait (12 -> 20) is limited
        assert reach(s, "S", window=W, depart_by=10, delta_max_wait=7) == [("A", 9)]
        assert reach(s, "S", window=W, depart_by=10, delta_max_wait=8) == [("A", 9), ("C", 20)]
        # the wait at S before the first edge is not limited
        assert reach(s, "S", window=W, depart_by=11, delta_max_wait=0, strict=True) == [("A", 9), ("B", 10)]
    finally:
        s.close()


def test_fewest_hops_are_not_the_earliest_path_s(tmp_path: Path, backend: str) -> None:
    # S->A@1, A->B@2, B->C@3 (C at 3 in three hops); S->C@10 (one hop, later); A->S@4, S->D@6
    s = edge_store(
        tmp_path,
        backend,
        [("S", "A", 1, 2), ("A", "B", 2, 3), ("B", "C", 3, 4), ("S", "C", 10, 11), ("A", "S", 4, 5),
         ("S", "D", 6, 7)],
    )  # fmt: skip
    try:

        def hops(**kw: Any) -> list[tuple[str, int, int]]:
            rows = run(s, "temporal_reachability", src="S", hops=True, **kw)["rows"]
            return [(r["uid"], r["earliest_arrival"], r["hops"]) for r in rows]

        # C is reached first in three hops (at 3), but one hop does it (S->C at 10)
        assert hops(window=W) == [("A", 1, 1), ("B", 2, 2), ("C", 3, 1), ("D", 6, 1)]
        # the first edge before 5: S->C and S->D only after the return to S (A->S at 4): hop 3
        assert hops(window=W, depart_by=5) == [("A", 1, 1), ("B", 2, 2), ("C", 3, 3), ("D", 6, 3)]
        # strict: B->C at 3 still follows A->B at 2; C in three hops either way
        assert hops(window=W, depart_by=5, strict=True) == [
            ("A", 1, 1),
            ("B", 2, 2),
            ("C", 3, 3),
            ("D", 6, 3),
        ]
        # the hop counts are an addition: without hops the rows are the same, without the field
        plain = run(s, "temporal_reachability", src="S", window=W)["rows"]
        assert plain == [{k: v for k, v in r.items() if k != "hops"} for r in
                         run(s, "temporal_reachability", src="S", window=W, hops=True)["rows"]]  # fmt: skip
        with pytest.raises(TGMSError, match="hops is not available with delta_max_wait"):
            call(OpContext(s), "temporal_reachability", {"src": "S", "window": W, "hops": True,
                                                        "delta_max_wait": 5})  # fmt: skip
    finally:
        s.close()


def test_a_list_of_sources_walks_from_each(tmp_path: Path, backend: str) -> None:
    """src as a list (the fifth set's ve09: each day-14 sender's reach): the rows of one walk from each
    source, in the list's order (a repeat walked once), each row naming its source; a single src keeps its
    rows as they were (no src key). An unknown uid anywhere in the list is E_NOT_FOUND; [] is E_SCHEMA."""
    store = edge_store(
        tmp_path, backend, [("S", "A", 1, 2), ("A", "B", 3, 4), ("B", "S", 5, 6), ("C", "A", 2, 3)]
    )
    try:
        one = {u: run(store, "temporal_reachability", src=u, window=W)["rows"] for u in ("S", "C", "B")}
        assert all("src" not in r for rows in one.values() for r in rows)
        many = run(store, "temporal_reachability", src=["C", "S", "C", "B"], window=W)
        want = [{**r, "src": u} for u in ("C", "S", "B") for r in one[u]]
        assert many["rows"] == want and many["rows_total"] == len(want)
        assert [r["src"] for r in many["rows"]] == ["C", "C", "C", "S", "S", "B"]
        ctx = OpContext(store)
        for bad, code in (({"src": ["S", "nope"]}, "E_NOT_FOUND"), ({"src": []}, "E_SCHEMA")):
            args = {**bad, "window": W}
            assert compare(ctx, OracleStore(*store.public_rows()), "temporal_reachability", args) == code
    finally:
        store.close()


def test_paths_rows_and_order(tmp_path: Path, backend: str) -> None:
    s = edge_store(
        tmp_path,
        backend,
        [("S", "A", 1, 2), ("S", "A", 3, 4), ("A", "D", 2, 3), ("S", "B", 1, 2), ("B", "D", 5, 6),
         ("S", "D", 9, 10), ("A", "B", 4, 5), ("B", "A", 0, 60)],
    )  # fmt: skip

    def paths(**kw: Any) -> list[tuple[int, int, list[str]]]:
        rows = run(s, "temporal_paths", src="S", dst="D", **kw)["rows"]
        return [(r["arrival"], r["hops"], r["nodes"]) for r in rows]

    try:
        assert paths(window=W) == [(2, 2, ["S", "A", "D"]), (2, 3, ["S", "B", "A", "D"]),
                                   (5, 2, ["S", "B", "D"]), (5, 3, ["S", "A", "B", "D"]),
                                   (9, 1, ["S", "D"])]  # fmt: skip
        assert paths(window=W, k=2, max_hops=2) == [(2, 2, ["S", "A", "D"]), (5, 2, ["S", "B", "D"])]
        assert paths(window={"t_a": 0, "t_b": 5}) == [(2, 2, ["S", "A", "D"]), (2, 3, ["S", "B", "A", "D"])]
        out = run(s, "temporal_paths", src="S", dst="D", window={"t_a": 2, "t_b": 100})
        first = out["rows"][0]  # S->A@3 (the @1 version is gone), B->A is not used, A->B@4, B->D@5
        assert first["nodes"] == ["S", "A", "B", "D"] and [e["t"] for e in first["edges"]] == [3, 4, 5]
        assert first["edges"][0]["src"] == "S" and first["edges"][0]["rel_type"] == "msg"
        assert run(s, "temporal_paths", src="D", dst="S", window=W)["rows"] == []
    finally:
        s.close()


def test_paging_follows_the_cursor(tmp_path: Path, backend: str) -> None:
    store, _tts, uids, _t_max = random_store(tmp_path / "p", backend, seed=3)
    try:
        ctx = OpContext(store)
        oracle = OracleStore(*store.public_rows())
        cases: tuple[tuple[str, dict[str, Any]], ...] = (
            ("temporal_reachability", {"src": uids[0], "window": {"t_a": 0, "t_b": OPEN_END}, "limit": 2}),
            ("temporal_paths", {"src": uids[0], "dst": uids[1], "window": W, "k": 20, "max_hops": 6,
                                "limit": 3}),
        )  # fmt: skip
        for op, args in cases:
            full = ORACLES[op](oracle, dict(args))
            got, cursor = [], None
            while True:
                payload = call(ctx, op, {**args, "cursor": cursor}, check_cost=False)["payload"]
                assert payload["rows_total"] == full["rows_total"]
                got += payload["rows"]
                cursor = payload["cursor"]
                if cursor is None:
                    break
            assert got == full["rows"]
            first = call(ctx, op, args, check_cost=False)["payload"]
            want = page(full, args["limit"], 0)
            assert first["truncated"] == want["truncated"]
    finally:
        store.close()


def test_errors_and_nulls_match_the_oracle(tmp_path: Path, backend: str) -> None:
    s = edge_store(tmp_path, backend, [("S", "A", 1, 2), ("A", "D", 2, 3)])
    try:
        ctx, oracle = OpContext(s), OracleStore(*s.public_rows())
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("temporal_reachability", {"src": "nope", "window": W}, "E_NOT_FOUND"),
            ("temporal_reachability", {"src": "S", "window": {"t_a": 5, "t_b": 5}}, "E_INVALID_ARG"),
            ("temporal_reachability", {"src": "S", "window": W, "direction": "sideways"}, "E_INVALID_ARG"),
            ("temporal_reachability", {"src": "S", "window": W, "direction": 3}, "E_SCHEMA"),
            ("temporal_reachability", {"src": "S", "window": W, "delta_max_wait": -1}, "E_INVALID_ARG"),
            ("temporal_reachability", {"src": "S", "window": W, "delta_max_wait": "1"}, "E_SCHEMA"),
            ("temporal_reachability", {"src": "S", "window": {"t_a": 0}}, "E_SCHEMA"),
            ("temporal_reachability", {"src": "S"}, "E_SCHEMA"),
            ("temporal_reachability", {"src": "S", "window": W, "strict": 1}, "E_SCHEMA"),
            ("temporal_reachability", {"src": "S", "window": W, "depart_by": "5"}, "E_SCHEMA"),
            ("temporal_reachability", {"src": "S", "window": W, "depart_by": 0}, "E_INVALID_ARG"),  # = t_a
            ("temporal_reachability", {"src": "S", "window": W, "depart_by": 101}, "E_INVALID_ARG"),
            ("temporal_reachability", {"src": "S", "window": W, "depart_by": -1}, "E_INVALID_ARG"),
            ("temporal_reachability", {"src": "S", "window": W, "depart_by": 100}, "ok"),  # = t_b
            ("temporal_reachability", {"src": "S", "window": W, "depart_by": 1, "strict": None}, "ok"),
            ("temporal_paths", {"src": "S", "dst": "D", "window": W, "strict": "yes"}, "E_SCHEMA"),
            ("temporal_paths", {"src": "S", "dst": "S", "window": W}, "E_INVALID_ARG"),
            ("temporal_paths", {"src": "S", "dst": "nope", "window": W}, "E_NOT_FOUND"),
            ("temporal_paths", {"src": "nope", "dst": "nope", "window": W}, "E_NOT_FOUND"),
            ("temporal_paths", {"src": "S", "dst": "D", "window": W, "k": 21}, "E_INVALID_ARG"),
            ("temporal_paths", {"src": "S", "dst": "D", "window": W, "max_hops": 0}, "E_INVALID_ARG"),
            ("temporal_paths", {"src": "S", "dst": "D", "window": W, "k": True}, "E_SCHEMA"),
            ("temporal_paths", {"src": "S", "dst": "D", "window": W, "hops": 2}, "E_SCHEMA"),
            # an optional argument given as null takes its default, as in the oracle
            ("temporal_reachability", {"src": "S", "window": W, "direction": None}, "ok"),
            ("temporal_paths", {"src": "S", "dst": "D", "window": W, "k": None, "max_hops": None}, "ok"),
        ]
        for op, args, code in cases:
            assert compare(ctx, oracle, op, args) == code, (op, args)
        # a depart_by outside (t_a, t_b] is located at the argument, for a repair to name it
        with pytest.raises(TGMSError) as exc:
            call(ctx, "temporal_reachability", {"src": "S", "window": W, "depart_by": 0})
        assert exc.value.details["field"] == "depart_by" and "(t_a, t_b]" in str(exc.value)
    finally:
        s.close()


# -- cost -------------------------------------------------------------------------------------------


def _profile(n_events: int, max_degree: int) -> StoreProfile:
    vt = np.arange(n_events, dtype=np.int64) * 10
    return StoreProfile(n_events, n_events // 50, 0, int(vt[-1]), vt, max_degree)


def _estimate(op: str, p: StoreProfile, **args: Any) -> Any:
    spec = get_operator(op)
    return spec.cost(p, spec.args.model_validate(args))


def test_cost_grows_with_the_window_and_suggests_narrowing() -> None:
    p = _profile(4_000_000, 50_000)
    small = _estimate("temporal_reachability", p, src="x", window={"t_a": 0, "t_b": 100_000})
    big = _estimate("temporal_reachability", p, src="x", window={"t_a": 0, "t_b": 40_000_000})
    both = _estimate(
        "temporal_reachability", p, src="x", window={"t_a": 0, "t_b": 40_000_000}, direction="both"
    )
    wait = _estimate(
        "temporal_reachability", p, src="x", window={"t_a": 0, "t_b": 40_000_000}, delta_max_wait=5
    )
    # a small window costs little beyond the (cold) adjacency build, priced at every call
    index_only = COEFFICIENTS["base"] + COEFFICIENTS["index_row"] * p.n_edges * memory_factor(p.n_edges)
    assert small.seconds < index_only + 0.01 < big.seconds < both.seconds and big.seconds < wait.seconds
    over = _estimate(  # past the default budget: the suggestions are computed against it
        "temporal_reachability",
        p,
        src="x",
        window={"t_a": 0, "t_b": 40_000_000},
        delta_max_wait=5,
        direction="both",
    )
    assert over.seconds > 10.0
    with pytest.raises(CostError) as exc:
        check_budget("temporal_reachability", over, None)
    sugg = exc.value.details["suggestions"]
    width = [s for s in sugg if s.startswith("use a window of at most")]
    assert width, sugg
    n = int(width[0].split()[6])  # the computed width fits the default budget
    fits = _estimate(
        "temporal_reachability", p, src="x", window={"t_a": 0, "t_b": n}, delta_max_wait=5, direction="both"
    )
    assert fits.seconds <= 10.0 + 1e-9
    paths = _estimate("temporal_paths", p, src="x", dst="y", window={"t_a": 0, "t_b": 40_000_000}, max_hops=6)
    fewer = _estimate("temporal_paths", p, src="x", dst="y", window={"t_a": 0, "t_b": 40_000_000}, max_hops=3)
    assert fewer.seconds < paths.seconds
    assert "use max_hops <= 3" in paths.suggestions


def test_run_time_stops_are_structured_cost_errors(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = edge_store(
        tmp_path, backend, [("S", "A", 1, 2), ("A", "B", 2, 3), ("B", "D", 3, 4), ("A", "D", 5, 6)]
    )
    try:
        ctx = OpContext(s)
        monkeypatch.setattr(traversal, "_MAX_STATES", 2)
        monkeypatch.setattr(temporal_paths, "_MAX_EXPANSIONS", 1)  # where the path search reads it
        for op, args in (
            ("temporal_reachability", {"src": "S", "window": W, "delta_max_wait": 5}),
            ("temporal_paths", {"src": "S", "dst": "D", "window": W}),
        ):
            with pytest.raises(CostError) as exc:
                call(ctx, op, args, check_cost=False)
            assert exc.value.details["suggestions"], exc.value.details
        assert len(call(ctx, "temporal_reachability", {"src": "S", "window": W})["payload"]["rows"]) == 3
    finally:
        s.close()


def test_strict_wait_limited_search_round_an_interval_loop(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A->A open [0, 100): strict, each lap takes 1 µs, so A is met at 2, 3, ..., 99 (a state and a round
    # each); B is reached by A->B@60 only through them (wait <= 1), and the round limit stops long loops
    s = edge_store(tmp_path, backend, [("S", "A", 1, 2), ("A", "A", 0, 100), ("A", "B", 60, 61)])
    try:
        args = {"src": "S", "window": W, "strict": True, "delta_max_wait": 1}
        assert reach(s, "S", **{k: v for k, v in args.items() if k != "src"}) == [("A", 1), ("B", 60)]
        monkeypatch.setattr(traversal, "_MAX_STATES", 10**9)
        monkeypatch.setattr(traversal, "_MAX_ROUNDS", 20)
        with pytest.raises(CostError) as exc:
            call(OpContext(s), "temporal_reachability", args, check_cost=False)
        assert any("interval edges" in x for x in exc.value.details["suggestions"])
        # before that: the arrivals it could meet on the loop (2..99 from the earliest arrival 1) are
        # counted first, and too many are refused before the search starts
        monkeypatch.setattr(traversal, "_MAX_DRIFT", 97)
        with pytest.raises(CostError) as exc:
            call(OpContext(s), "temporal_reachability", args, check_cost=False)
        assert exc.value.details["drift"] == 98 and exc.value.details["limit"] == 97
        # without the loop (where) nothing to bound, and A@1 cannot wait for A->B@60
        plain = {**args, "where": [{"field": "rel_type", "op": "eq", "value": "msg"}]}
        rows = call(OpContext(s), "temporal_reachability", plain, check_cost=False)["payload"]["rows"]
        assert rows == [{"uid": "A", "earliest_arrival": 1}]
    finally:
        s.close()
