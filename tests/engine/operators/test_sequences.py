"""next_event: the fast path equals the oracle on random bi-temporal stores (both backends) and on stores
full of equal times; hand cases (a reply chain, ties with strict true/false, previous, within, unmatched
rows, the nearest-rank quantile, paging with summaries over every row); refusals; uid grounding."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import MATCHES, N_CASES, counter_clock, random_store, sample_args
from tgms.engine.canonical import canonicalize
from tgms.engine.errors import TGMSError
from tgms.engine.operators.base import parse_args
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call, run_call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.operators.sequences import NextEventArgs, SequenceRows, _match
from tgms.engine.plan.contracts import literal_uids
from tgms.engine.plan.verifier import verify
from tgms.engine.store import Store

STORES = 4
UIDS = [f"u{i}" for i in range(8)]
OP = "next_event"
REPLY = [{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}]
SAME_SENDER = [{"a": "src", "b": "src"}]


def test_fast_path_matches_oracle(tmp_path: Path, backend: str) -> None:
    outcomes: Counter[str] = Counter()
    shapes: Counter[Any] = Counter()
    seen: Counter[str] = Counter()
    per_store = max(-(-N_CASES // STORES), 10)
    for s in range(STORES):
        store, tts = random_store(tmp_path / f"s{s}", backend, seed=1300 + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            rng = random.Random(s)
            for _ in range(per_store):
                args = sample_args(OP, rng, UIDS, tts)
                outcomes[compare(ctx, oracle, OP, args)] += 1
                if outcomes["ok"]:
                    got = call(ctx, OP, {**args, "limit": 10_000}, check_cost=False)["payload"]
                    shapes[got["rows_total"], got["n_matched"], got["delay_median"]] += 1
                    seen["matched"] += got["n_matched"] > 0
                    seen["unmatched rows"] += got["rows_total"] > got["n_matched"]
                    seen["quantile"] += got["delay_quantile"] is not None
        finally:
            store.close()
    assert outcomes["ok"] >= N_CASES // 2, outcomes
    assert len(shapes) >= 5, shapes  # several sizes of answer, not one degenerate case
    assert min(seen[k] for k in ("matched", "unmatched rows", "quantile")) >= 2, seen


def _store(tmp_path: Path, edges: list[tuple[str, str, int]], backend: str = "duckdb") -> Store:
    store = Store.create(tmp_path / "s", backend, now=counter_clock())
    uids = sorted({x for s, d, _ in edges for x in (s, d)} | {"lone"})
    store.write([{"op": "assert_node", "uid": u, "label": "user", "vt_s": 0} for u in uids])
    store.write(
        [
            {"op": "assert_edge", "src": s, "dst": d, "rel_type": "msg", "vt_s": t, "vt_e": t + 1}
            for s, d, t in edges
        ]
    )
    return store


def test_ties_and_every_shape_on_a_crowded_store(tmp_path: Path, backend: str) -> None:
    # 120 events over 12 time points and 4 nodes: equal times everywhere, repeated pairs, self-loops
    rng = random.Random(3)
    nodes = ["p", "q", "r", "s"]
    edges = [(rng.choice(nodes), rng.choice(nodes), rng.randrange(12)) for _ in range(120)]
    store = _store(tmp_path, edges, backend)
    try:
        ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
        zero_delays = 0
        for match in MATCHES:
            for direction in ("next", "previous"):
                for strict in (True, False):
                    for b in (None, {"dst": ["p", "q"]}):
                        args = {"a": {}, "b": b, "match": match, "direction": direction, "strict": strict,
                                "unmatched": True, "quantile": 0.75, "limit": 10_000}  # fmt: skip
                        assert compare(ctx, oracle, OP, args) == "ok"
                        if not strict:
                            zero_delays += call(ctx, OP, args)["payload"]["delay_min"] == 0
                        for unmatched in (True, False):  # every b within 3, ties and own versions too
                            every = {**args, "all": True, "within": 3, "unmatched": unmatched}
                            assert compare(ctx, oracle, OP, every) == "ok"
        assert zero_delays >= 10  # ties matched at delay 0, never with the event itself
        # a whole-store selection's sorted codes are kept per belief state (sequences._whole_order): after
        # a write the next call sorts the new state's, and still agrees with the oracle
        whole = {"a": {}, "match": MATCHES[-1], "unmatched": True, "limit": 10_000}
        before = call(ctx, OP, whole)["payload"]
        new_event = {"op": "assert_edge", "src": "lone", "dst": "p", "rel_type": "msg", "vt_s": 5, "vt_e": 6}
        store.write([new_event])
        ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
        assert compare(ctx, oracle, OP, whole) == "ok"
        assert call(ctx, OP, whole)["payload"]["n_a"] == before["n_a"] + 1  # the new event is an a event
    finally:
        store.close()


def test_keys_too_wide_for_one_code_are_renumbered(tmp_path: Path) -> None:
    # pair keys of a huge node count would overflow the 62-bit codes: they are renumbered, same answer
    rng = random.Random(4)
    edges = [(rng.choice("pqrs"), rng.choice("pqrs"), rng.randrange(12)) for _ in range(60)]
    store = _store(tmp_path, edges)
    try:
        ctx = OpContext(store)
        e, ap, n_nodes = ctx.edges(None), np.arange(ctx.edges(None).n), len(ctx.uids())
        for direction, strict in (("next", True), ("previous", False)):
            a = parse_args(
                NextEventArgs, {"a": {}, "match": REPLY, "direction": direction, "strict": strict}, OP
            )
            want, got = _match(e, ap, ap, a, n_nodes, True), _match(e, ap, ap, a, 2**40, True)
            assert np.array_equal(want.b, got.b) and np.array_equal(want.delay, got.delay)
            assert len(want.hit) > 10
    finally:
        store.close()


def _rows(store: Store, args: dict[str, Any]) -> dict[str, Any]:
    """The fast path's payload, which the oracle's agrees with (every hand case checks both)."""
    ctx = OpContext(store)
    assert compare(ctx, OracleStore(*store.public_rows()), OP, args) == "ok", args
    return call(ctx, OP, args)["payload"]


def _pairs(out: dict[str, Any]) -> list[tuple[str, str, int, int | None]]:
    return [(r["src"], r["dst"], r["t"], r["delay"]) for r in out["rows"]]


def test_reply_chain(tmp_path: Path) -> None:
    store = _store(tmp_path, [("a", "b", 10), ("b", "a", 15), ("b", "a", 40), ("a", "b", 50), ("c", "a", 50),
                              ("a", "c", 60)])  # fmt: skip
    try:
        out = _rows(store, {"a": {}, "match": REPLY})
        # a→b@10 answered by b→a@15; b→a@15 and @40 both by a→b@50; c→a@50 by a→c@60
        assert _pairs(out) == [("a", "b", 10, 5), ("b", "a", 15, 35), ("b", "a", 40, 10), ("c", "a", 50, 10)]
        assert (out["n_a"], out["n_matched"], out["rows_total"]) == (6, 4, 4)
        assert (out["delay_min"], out["delay_max"], out["delay_mean"], out["delay_median"]) == (5, 35, 15, 10)
        assert out["delay_quantile"] is None
        r = out["rows"][0]
        assert (r["b_src"], r["b_dst"], r["b_t"], r["rel_type"]) == ("b", "a", 15, "msg")
        # how long until b answers a: a's messages to b, b's to a
        ab = _rows(store, {"a": {"src": "a", "dst": "b"}, "b": {"src": "b", "dst": "a"}, "match": REPLY})
        assert _pairs(ab) == [("a", "b", 10, 5)]
        # after each message a receives, how long until a next sends one
        recv = _rows(store, {"a": {"dst": "a"}, "b": {"src": "a"}, "match": [{"a": "dst", "b": "src"}]})
        assert _pairs(recv) == [("b", "a", 15, 35), ("b", "a", 40, 10), ("c", "a", 50, 10)]
        # previous: the message each one answers
        prev = _rows(store, {"a": {}, "match": REPLY, "direction": "previous"})
        assert _pairs(prev) == [("b", "a", 15, 5), ("b", "a", 40, 30), ("a", "b", 50, 10), ("a", "c", 60, 10)]
        # within 10 µs; unmatched rows carry null b fields; desc reverses the rows
        near = _rows(store, {"a": {}, "match": REPLY, "within": 10, "unmatched": True, "order": "desc"})
        assert _pairs(near) == [("a", "c", 60, None), ("c", "a", 50, 10), ("a", "b", 50, None),
                                ("b", "a", 40, 10), ("b", "a", 15, None), ("a", "b", 10, 5)]  # fmt: skip
        assert (near["rows_total"], near["n_matched"], near["delay_max"]) == (6, 3, 10)
        assert near["rows"][0]["b_src"] is None and near["rows"][0]["b_eid"] is None
        # nothing matched: every summary null
        none = _rows(store, {"a": {"src": "lone"}, "match": REPLY})
        assert none["rows"] == [] and none["delay_min"] is None and none["delay_mean"] is None
    finally:
        store.close()


def test_equal_times_strict_and_not(tmp_path: Path) -> None:
    store = _store(tmp_path, [("x", "y", 10), ("x", "z", 10), ("x", "w", 20)])
    try:
        eids = {r["dst"]: r["eid"] for r in _rows(store, {"a": {}})["rows"]}
        first, second = sorted(["y", "z"], key=lambda d: eids[d])  # the (t, eid) order of the tie
        strict = _rows(store, {"a": {}, "match": SAME_SENDER})
        assert _pairs(strict) == [("x", first, 10, 10), ("x", second, 10, 10)]
        assert {r["b_dst"] for r in strict["rows"]} == {"w"}
        loose = _rows(store, {"a": {}, "match": SAME_SENDER, "strict": False})
        # each event at 10 finds the other (b.t >= a.t, never itself), even the one before it in the order
        assert [(r["dst"], r["b_dst"], r["delay"]) for r in loose["rows"]] == [
            (first, second, 0),
            (second, first, 0),
        ]
        assert loose["n_matched"] == 2 and loose["delay_max"] == 0
        # previous, strict: x→w@20's previous is the last of the tie in (t, eid, vid) order
        prev = _rows(store, {"a": {"dst": "w"}, "b": {}, "match": SAME_SENDER, "direction": "previous"})
        assert [(r["b_dst"], r["delay"]) for r in prev["rows"]] == [(second, 10)]
        prev_loose = _rows(store, {"a": {}, "match": SAME_SENDER, "direction": "previous", "strict": False})
        assert [(r["dst"], r["b_dst"]) for r in prev_loose["rows"]] == [
            (first, second),
            (second, first),
            ("w", second),
        ]
        # within 0: only the tie's partner
        assert _rows(store, {"a": {}, "match": SAME_SENDER, "strict": False, "within": 0})["n_matched"] == 2
    finally:
        store.close()


def test_quantile_is_the_nearest_rank_and_summaries_cover_every_page(tmp_path: Path) -> None:
    # p{i} writes to hub at 100·i, hub answers i µs later: reply delays 1..10
    edges = [(f"p{i}", "hub", 100 * i) for i in range(1, 11)]
    edges += [("hub", f"p{i}", 100 * i + i) for i in range(1, 11)]
    store = _store(tmp_path, edges)
    try:
        base = {"a": {"dst": "hub"}, "b": {}, "match": REPLY}
        for q, want in [(0.1, 1), (0.25, 3), (0.5, 5), (0.7, 7), (0.9, 9), (0.95, 10), (0.99, 10)]:
            # 0.7·10 and 0.9·10 are 7 and 9 exactly (the float products are a hair above)
            assert _rows(store, {**base, "quantile": q})["delay_quantile"] == want, q
        ctx = OpContext(store)
        first = call(ctx, OP, {**base, "limit": 3, "quantile": 0.5})["payload"]
        assert [r["delay"] for r in first["rows"]] == [1, 2, 3] and first["truncated"]
        second = call(ctx, OP, {**base, "limit": 3, "quantile": 0.5, "cursor": first["cursor"]})["payload"]
        assert [r["delay"] for r in second["rows"]] == [4, 5, 6]
        for page in (first, second):
            assert (page["rows_total"], page["n_matched"], page["n_a"]) == (10, 10, 10)
            assert (page["delay_min"], page["delay_max"]) == (1, 10)
            assert (page["delay_mean"], page["delay_median"], page["delay_quantile"]) == (5.5, 5.5, 5)
        odd = _rows(store, {**base, "a": {"dst": "hub", "src": ["p1", "p2", "p4"]}})
        assert (odd["delay_mean"], odd["delay_median"]) == (2.333333333, 2)
    finally:
        store.close()


def test_refusals_change_nothing(tmp_path: Path) -> None:
    # the same error code from the fast path and the oracle, naming the argument; the store answers after
    store = _store(tmp_path, [("a", "b", 1), ("b", "a", 2)])
    try:
        ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
        for args, code, field in [
            ({"a": {}, "match": [{"a": "from", "b": "src"}]}, "E_INVALID_ARG", "match.0.a"),
            ({"a": {}, "match": [{"a": "src", "b": "src"}, {"a": "src", "b": "src"}]}, "E_INVALID_ARG",
             "match.1"),
            ({"a": {}, "match": [*REPLY, {"a": "src", "b": "src"}]}, "E_INVALID_ARG", "match"),
            ({"a": {}, "match": [{"a": "src"}]}, "E_SCHEMA", "match.0.b"),
            ({"a": {}, "match": [{"a": "src", "b": "dst", "c": "src"}]}, "E_SCHEMA", "match.0.c"),
            ({"a": {}, "quantile": 1.0}, "E_INVALID_ARG", "quantile"),
            ({"a": {}, "quantile": 0}, "E_INVALID_ARG", "quantile"),
            ({"a": {}, "within": -1}, "E_INVALID_ARG", "within"),
            ({"a": {}, "direction": "later"}, "E_INVALID_ARG", "direction"),
            ({"a": {}, "strict": "yes"}, "E_SCHEMA", "strict"),
            ({"a": {"src": "zz"}}, "E_NOT_FOUND", "a.src"),
            ({"a": {}, "b": {"node": ["a", "zz"]}}, "E_NOT_FOUND", "b.node"),
            ({"a": {"window": {"t_a": 5, "t_b": 5}}}, "E_INVALID_ARG", "a.window"),
            ({"a": {"sender": "a"}}, "E_SCHEMA", "a.sender"),
            ({"match": REPLY}, "E_SCHEMA", "a"),
        ]:  # fmt: skip
            assert compare(ctx, oracle, OP, args) == code, args
            with pytest.raises(TGMSError) as err:
                call(ctx, OP, args)
            assert err.value.code == code and field in str(err.value.to_dict()), err.value.to_dict()
        with pytest.raises(TGMSError) as err:  # priced before it runs, with narrowing suggestions
            call(ctx, OP, {"a": {}, "match": REPLY}, budget_s=1e-9)
        assert err.value.code == "E_COST" and "src/dst/node" in str(err.value.to_dict())
        assert _rows(store, {"a": {}, "match": REPLY})["n_matched"] == 1
    finally:
        store.close()


def test_listed_uids_in_both_selections_are_grounded() -> None:
    args = {"a": {"src": "u1", "dst": ["u2", "u3"]}, "b": {"node": "u4"}, "match": REPLY}
    assert literal_uids(NextEventArgs, args) == [("a.src", "u1"), ("a.dst[0]", "u2"), ("a.dst[1]", "u3"),
                                                 ("b.node", "u4")]  # fmt: skip


def test_the_verifier_knows_the_units() -> None:
    # within takes a duration: a time point passed there is refused; the delays are durations
    steps = [
        {"id": "s1", "op": "list_events", "args": {"limit": 1}, "depends_on": []},
        {
            "id": "s2",
            "op": OP,
            "args": {"a": {}, "within": {"$ref": "s1.rows[0].vt_s"}},
            "depends_on": ["s1"],
        },
    ]
    raw = {
        "plan_id": "p",
        "question": "q",
        "steps": steps,
        "answer_spec": {"kind": "value", "from": "s2.delay_mean"},
    }
    assert [(v.code, v.field) for v in verify(raw).violations] == [("unit", "args.within")]
    steps[1]["args"] = {"a": {}, "within": 60_000_000}
    assert verify(raw).violations == []


def test_all_gives_every_reply_within_the_bound_a_row_each(tmp_path: Path) -> None:
    """ "How many times did someone get a reply within a minute": every (message, reply) pair, not only
    the first reply; nearest first; n_matched counts the a events with one; a pair count over 10^7 is
    E_LIMIT before any row is built."""
    edges = [("p", "q", 0), ("q", "p", 30), ("q", "p", 50), ("q", "p", 70), ("p", "q", 60), ("r", "p", 1)]
    store = _store(tmp_path, edges)
    try:
        reply = {"a": {}, "match": REPLY, "within": 60, "limit": 100}
        first = _rows(store, reply)
        every = _rows(store, {**reply, "all": True})
        # p→q at 0 is answered at 30 and 50 (not 70: 70 s later); p→q at 60 at 70; q→p at 50 by p→q at 60
        assert [(r["t"], r["b_t"]) for r in every["rows"]] == [(0, 30), (0, 50), (30, 60), (50, 60), (60, 70)]
        assert every["rows_total"] == 5 and every["n_matched"] == first["n_matched"] == 4
        assert first["rows_total"] == 4 and every["delay_max"] == 50
        back = _rows(store, {**reply, "all": True, "direction": "previous"})
        assert [(r["t"], r["b_t"]) for r in back["rows"]] == [(30, 0), (50, 0), (60, 50), (60, 30), (70, 60)]
        with pytest.raises(TGMSError) as err:
            call(OpContext(store), OP, {**reply, "within": None, "all": True})
        assert err.value.code == "E_INVALID_ARG" and err.value.details.get("field") == "all"
        with pytest.MonkeyPatch.context() as mp:  # more pairs than the cap: refused, no row built
            mp.setattr("tgms.engine.operators.sequences.MAX_PAIRS", 4)
            with pytest.raises(TGMSError) as err:
                call(OpContext(store), OP, {**reply, "all": True})
        assert err.value.code == "E_LIMIT" and err.value.details["pairs"] == 5
    finally:
        store.close()


def test_rows_are_canonical_as_built(tmp_path: Path, backend: str) -> None:
    """``SequenceRows.canonical_rows``: a plan's whole read takes the built rows without canonicalizing
    them (engine/execute/full_reads.py), so every row must come out canonical: str, int or null values of
    exactly those types, unmatched rows' b fields null, equal to their canonical form."""
    store, _ = random_store(tmp_path / "s", backend, seed=1301)
    try:
        ctx = OpContext(store)
        shapes = ({"unmatched": True}, {"within": 10**12, "all": True}, {"direction": "previous"})
        nulls = 0
        for extra in shapes:
            full = run_call(ctx, OP, {"a": {}, "match": REPLY, "limit": 1, **extra}, check_cost=False).full
            assert full is not None
            rows = full["rows"]
            assert isinstance(rows, SequenceRows) and rows.canonical_rows
            built = rows[0 : len(rows)]
            assert built, extra
            assert {type(v) for r in built for v in r.values()} <= {str, int, type(None)}
            assert canonicalize(built) == built
            nulls += sum(r["b_t"] is None for r in built)
        assert nulls > 0  # the unmatched shape gave rows without a b
    finally:
        store.close()
