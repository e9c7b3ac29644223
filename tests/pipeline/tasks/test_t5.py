"""T5 (analyst questions): registered with distinct paraphrases over the event operators; the draws that
would make an ambiguous or capped gold (a tie for first place, a chain at the hop cap) are rejected; a
store without what a template needs gets no draw; accepted drafts get gold that the oracles confirm."""

from __future__ import annotations

from typing import Any

import numpy as np

from tgms.engine.operators.context import OpContext
from tgms.engine.operators.registry import OPERATOR_ORDER
from tgms.pipeline.tasks.crosscheck import oracle_store_for
from tgms.pipeline.tasks.gold import compute_gold, plan_json
from tgms.pipeline.tasks.model import TEMPLATES, all_templates
from tgms.pipeline.tasks.sampler import HOUR, Sampler
from tgms.pipeline.tasks.templates import t5

T0 = 1_700_000_000_000_000 - 1_700_000_000_000_000 % (24 * HOUR) + 8 * HOUR  # 08:00 UTC of some day


def _edge(src: str, dst: str, t: int, **props: Any) -> dict[str, Any]:
    return {
        "op": "assert_edge",
        "src": src,
        "dst": dst,
        "rel_type": "msg",
        "vt_s": t,
        "vt_e": t + 1,
        "props": props,
    }


def _store(make_store, edges: list[tuple[str, str, int]], name: str = "s"):
    store = make_store(name)
    store.write(
        [{"op": "assert_node", "uid": u, "vt_s": 0} for u in sorted({x for e in edges for x in e[:2]})]
    )
    store.write([_edge(s, d, T0 + k * 60_000_000) for s, d, k in edges])
    return store


def _draws(store, fn, n: int = 12) -> list[Any]:
    ctx = OpContext(store)
    s = Sampler(ctx, "toy", np.random.default_rng(0))
    return [fn(s) for _ in range(n)]


def test_t5_is_a_family_of_analyst_templates_over_the_new_operators() -> None:
    t5s = [t for t in all_templates() if t.family == "T5"]
    assert len(t5s) >= 6
    used = {op for t in t5s for op in t.ops}
    assert {"list_events", "aggregate_events", "belief_changes", "longest_temporal_path"} <= used
    assert {"connected_components", "hop_distance"} <= used  # the static graph of a window (t5_static)
    assert "next_event" in used  # per-entity event sequences (t5_sequences)
    assert "temporal_reachability" in used  # edge predicates in a graph operator (t5_predicates)
    assert used <= set(OPERATOR_ORDER)
    for t in t5s:
        assert len(set(t.paraphrases)) == 3, t.name


def test_a_tie_for_first_place_is_rejected(make_store) -> None:
    tied = _store(make_store, [("a", "b", 0), ("c", "d", 1)], "tied")
    assert _draws(tied, t5.top_account) == [None] * 12
    # 08:00 and 09:00 the same day: the hours tie (no draw), the weekday does not
    hours = _store(make_store, [("a", "b", 0), ("c", "d", 60)], "hours")
    slots = _draws(hours, t5.busiest_slot)
    assert None in slots and {d.key[0] for d in slots if d is not None} == {"dow"}
    clear = _store(make_store, [("a", "b", 0), ("c", "d", 1), ("a", "d", 2)], "clear")
    drafts = _draws(clear, t5.top_account)
    assert all(d is not None for d in drafts)
    ctx = OpContext(clear)
    golds = {
        compute_gold(
            ctx, None, TEMPLATES["T5.top_account"], d, plan_json("x", "q", TEMPLATES["T5.top_account"], d)
        ).gold
        for d in drafts
    }
    assert golds <= {"a", "d"} and golds  # a sent 2, d received 2: the unique tops


def test_last_contact_rejects_two_receivers_at_the_last_instant(make_store) -> None:
    tied = _store(make_store, [("a", "b", 0), ("a", "c", 5), ("a", "d", 5)], "tied")
    drafts = [d for d in _draws(tied, t5.last_contact) if d is not None]
    assert drafts == []
    clear = _store(make_store, [("a", "b", 0), ("a", "c", 5), ("a", "d", 6)], "clear")
    drafts = [d for d in _draws(clear, t5.last_contact) if d is not None]
    assert drafts and all(d.steps[0]["args"]["src"] == ["a"] for d in drafts)


def test_a_chain_at_the_hop_cap_is_not_asked(make_store) -> None:
    # a ping-pong of 2 * MAX_CHAIN messages: every chain from a or b reaches the cap
    long = [("a", "b", 2 * k) if k % 2 == 0 else ("b", "a", 2 * k) for k in range(2 * t5.MAX_CHAIN)]
    assert _draws(_store(make_store, long, "long"), t5.longest_chain) == [None] * 12
    short = _store(make_store, [("a", "b", 0), ("b", "c", 1), ("c", "d", 2)], "short")
    drafts = [d for d in _draws(short, t5.longest_chain) if d is not None]
    assert drafts and {d.steps[0]["args"]["max_hops"] for d in drafts} == {t5.MAX_CHAIN}


def test_templates_without_their_data_draw_nothing(make_store) -> None:
    plain = _store(make_store, [("a", "b", 0), ("b", "c", 1)])
    for fn in (t5.rating_received, t5.belief_changes):
        assert _draws(plain, fn, 3) == [None] * 3, fn.__name__


def test_belief_history_questions_span_the_probe_batches(make_store) -> None:
    store = _store(make_store, [("a", "b", 0), ("b", "c", 1)])
    for k in range(3):  # late-arriving events, one committed batch each, as the probes write them
        store.write([_edge("c", "a", T0 + (10 + k) * 60_000_000)], batch_id=f"probe:0:{k}:events")
    ctx = OpContext(store)
    ostore = oracle_store_for(store)
    tmpl = TEMPLATES["T5.belief_changes"]
    golds = set()
    for d in _draws(store, t5.belief_changes, 6):
        assert d is not None
        g = compute_gold(ctx, ostore, tmpl, d, plan_json("x", "q", tmpl, d))
        if d.steps[0]["args"]["kinds"] == ["asserted"]:
            assert g.status == "ok", g.reason  # cross-checked by the oracle: 1 edge per batch, 2 or 3 batches
            golds.add(g.gold)
        else:
            assert g.reason == "degenerate: empty"  # nothing was corrected
    assert golds and golds <= {2, 3}


def test_every_t5_draw_on_a_synthetic_store_gets_gold_the_oracles_confirm(tmp_path) -> None:
    from tgms.engine.ingest.build import build_store
    from tgms.engine.store import Store

    build_store("synthetic", tmp_path / "syn", events=4000, nodes=120, seed=5).close()
    with Store.open(tmp_path / "syn", read_only=True) as store:
        ctx = OpContext(store)
        ostore = oracle_store_for(store)
        ok: dict[str, int] = {}
        for tmpl in (t for t in all_templates() if t.family == "T5" and t.applies("synthetic")):
            s = Sampler(ctx, "synthetic", np.random.default_rng(1))
            for _ in range(4):
                d = tmpl.draw(s)
                if d is None:
                    continue
                g = compute_gold(ctx, ostore, tmpl, d, plan_json("x", "q", tmpl, d))
                assert "cross-check" not in g.reason and not g.reason.startswith("verifier"), (tmpl.name, g)
                ok[tmpl.name] = ok.get(tmpl.name, 0) + (g.status == "ok")
    # every template that needs nothing the synthetic store lacks (probe batches) got confirmed gold
    assert {n for n, k in ok.items() if k} >= {t.name for t in all_templates() if t.family == "T5"} - {
        "T5.belief_changes",
        "T5.negative_ratings",
    }, ok


def test_weekday_reach_is_asked_only_where_weekends_change_the_answer(make_store) -> None:
    from tgms.pipeline.tasks.templates import t5_predicates

    day = 24 * HOUR  # T0 is a Tuesday: T0 + 4 days a Saturday, T0 + 6 days a Monday
    weekend = make_store("weekend")
    weekend.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abcd"])
    weekend.write([_edge("a", "b", T0), _edge("b", "c", T0 + 4 * day), _edge("c", "d", T0 + 4 * day + HOUR),
                   _edge("a", "d", T0 + 6 * day)])  # fmt: skip
    drafts = [d for d in _draws(weekend, t5_predicates.weekday_reach, 24) if d is not None]
    assert drafts
    ctx, ostore = OpContext(weekend), oracle_store_for(weekend)
    tmpl = TEMPLATES["T5.weekday_reach"]
    for d in drafts:
        assert d.steps[0]["args"]["where"] == [{"field": "dow", "op": "le", "value": 5}]
        g = compute_gold(ctx, ostore, tmpl, d, plan_json("x", "q", tmpl, d))
        assert g.status == "ok" and g.gold == 2, g  # b (Tuesday), d (Monday); c only over the weekend
    weekdays = _store(make_store, [("a", "b", 0), ("b", "c", 1)], "weekdays")
    assert _draws(weekdays, t5_predicates.weekday_reach, 6) == [None] * 6  # the predicate changes nothing
