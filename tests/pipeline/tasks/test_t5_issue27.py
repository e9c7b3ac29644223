"""The T5 templates over issue 27's compute, windows and motif predicates: each asks only where its
answer needs the whole plan (a one-way or tied pair, a one-sided account, fewer than three two-way
correspondents, a predicate that changes nothing, sessions of one message get no draw), and the gold of
what it asks is the hand-computed value, confirmed by the brute-force oracles (on both backends)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.pipeline.tasks.test_t5 import T0, _draws, _edge, _store
from tests.suite_fixtures import task
from tgms.engine.operators.context import OpContext
from tgms.pipeline.tasks.crosscheck import oracle_store_for
from tgms.pipeline.tasks.generate import _balanced, min_distinct, value_cap
from tgms.pipeline.tasks.gold import compute_gold, plan_json
from tgms.pipeline.tasks.model import TEMPLATES, all_templates
from tgms.pipeline.tasks.sampler import HOUR, MINUTE
from tgms.pipeline.tasks.templates import t5_compute, t5_predicates, t5_windows

DAY = 24 * HOUR  # T0 is a Tuesday, 08:00 UTC: T0 + 4 days a Saturday


def _golds(store: Any, name: str, drafts: list[Any]) -> list[Any]:
    """Each draft's gold; every one must be confirmed by the oracles (status ok)."""
    ctx, ostore, tmpl = OpContext(store), oracle_store_for(store), TEMPLATES[name]
    out = []
    for d in drafts:
        g = compute_gold(ctx, ostore, tmpl, d, plan_json("x", "q", tmpl, d))
        assert g.status == "ok", (name, g)
        out.append(g.gold)
    return out


def test_the_issue_27_templates_use_its_capabilities() -> None:
    new = {t.name: t for t in all_templates() if t.name in {
        "T5.wrote_more", "T5.workload", "T5.writing_imbalance", "T5.weekend_pingpong",
        "T5.working_session", "T5.within_first"}}  # fmt: skip
    assert len(new) == 6 and {t.family for t in new.values()} == {"T5"}
    assert new["T5.wrote_more"].kind == "boolean" and new["T5.workload"].kind == "rows"
    # appended after every older template, so the generator's per-template seeds of those do not move
    later = ("T5.x.", "T5.y.", "T5.z.", "T5.zz.", "T5.zzz.", "T5.zzzz.")  # batches appended after, in order
    older = [t.name for t in all_templates() if t.name not in new and not t.name.startswith(later)]
    assert max(older) < min(new)


def test_a_yes_no_template_keeps_both_answers_and_needs_both() -> None:
    assert value_cap(8, "boolean") == 4 and value_cap(8, "count") == value_cap(8) == 2
    assert min_distinct("boolean") == 2 and min_distinct("value") == 3
    golds = [True, True, False, True, True, False]
    tasks = [
        task(id=f"d/T5.x/{k:02d}", family="T5", answer_kind="boolean", gold=g) for k, g in enumerate(golds)
    ]
    dropped: Counter[str] = Counter()
    kept = _balanced(tasks, dropped)  # two of each, the first drawn: a constant answer scores one half
    assert [t.id[-2:] for t in kept] == ["00", "01", "02", "05"]
    assert dropped == {"degenerate: yes/no answers unbalanced": 2}
    assert _balanced(tasks[:2], Counter()) == []  # one answer only: nothing to keep


def test_wrote_more_asks_only_of_two_way_pairs_with_different_counts(make_store) -> None:
    tied = _store(make_store, [("a", "b", 0), ("a", "b", 1), ("b", "a", 2), ("b", "a", 3)], "tied")
    assert _draws(tied, t5_compute.wrote_more) == [None] * 12
    one_way = _store(make_store, [("a", "b", 0), ("a", "b", 1)], "oneway")
    assert _draws(one_way, t5_compute.wrote_more) == [None] * 12
    clear = _store(make_store, [("a", "b", 0), ("a", "b", 1), ("a", "b", 2), ("b", "a", 3)], "clear")
    drafts = [d for d in _draws(clear, t5_compute.wrote_more, 24) if d is not None]
    assert {d.params["u"] for d in drafts} == {"a", "b"}  # both directions are asked
    assert [d.steps[2]["args"]["fn"] for d in drafts] == ["compare"] * len(drafts)
    golds = _golds(clear, "T5.wrote_more", drafts)
    assert golds == [d.params["u"] == "a" for d in drafts]  # a wrote 3, b wrote back 1


def test_workload_is_a_record_of_sent_received_and_partners(make_store) -> None:
    edges = [("a", "b", 0), ("b", "a", 1), ("a", "c", 2), ("c", "a", 3), ("a", "a", 4), ("d", "a", 5)]
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_compute.workload, 24) if d is not None]
    assert "d" not in {d.params["u"] for d in drafts}  # d never received: one part would be 0
    mine = [d for d in drafts if d.params["u"] == "a"]
    assert mine
    # a sent 3 (its self-loop included), received 4 (the self-loop too), wrote with b, c and d
    assert _golds(store, "T5.workload", mine) == [[{"sent": 3, "received": 4, "partners": 3}]] * len(mine)


def test_writing_imbalance_is_a_quantile_over_two_way_correspondents(make_store) -> None:
    edges = [("a", "b", k) for k in range(3)] + [("b", "a", 3), ("a", "c", 4), ("c", "a", 5), ("a", "d", 6)]
    edges += [("d", "a", 7 + k) for k in range(4)] + [("a", "e", 11)]
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_compute.writing_imbalance, 24) if d is not None]
    assert drafts and {d.params["u"] for d in drafts} == {"a"}  # the others have under 3 two-way partners
    # |sent - received| per two-way partner of a: b 2, c 0, d 3 (e is one-way): ascending [0, 2, 3]
    want = {0.5: 2, 0.75: 3, 0.9: 3}  # nearest rank: the ceil(q * 3)-th
    assert _golds(store, "T5.writing_imbalance", drafts) == [want[d.params["q"]] for d in drafts]


def test_weekend_pingpong_is_asked_only_where_weekdays_change_the_count(make_store) -> None:
    def pingpong(u: str, v: str, t: int) -> list[dict[str, Any]]:
        return [_edge(u, v, t), _edge(v, u, t + MINUTE), _edge(u, v, t + 2 * MINUTE)]

    store = make_store("mixed")
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abcd"])
    store.write(pingpong("c", "d", T0) + pingpong("a", "b", T0 + 4 * DAY))  # Tuesday, Saturday
    drafts = [d for d in _draws(store, t5_predicates.weekend_pingpong) if d is not None]
    assert drafts and all(d.steps[0]["args"]["where"] == t5_predicates.WEEKENDS for d in drafts)
    assert _golds(store, "T5.weekend_pingpong", drafts) == [1] * len(drafts)  # a-b only
    weekdays = make_store("weekdays")
    weekdays.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "cd"])
    weekdays.write(pingpong("c", "d", T0))
    assert _draws(weekdays, t5_predicates.weekend_pingpong, 6) == [None] * 6  # no weekend ping-pong


def test_working_session_needs_a_session_of_two_messages(make_store) -> None:
    lonely = _store(make_store, [("a", "b", 0), ("b", "a", 180)], "lonely")  # 3 hours apart
    assert _draws(lonely, t5_windows.working_session) == [None] * 12
    store = _store(make_store, [("a", "b", 0), ("b", "a", 1), ("a", "c", 120)])
    drafts = [d for d in _draws(store, t5_windows.working_session, 24) if d is not None]
    assert drafts and {d.params["u"] for d in drafts} <= {"a", "b"}  # c's one message is alone
    assert _golds(store, "T5.working_session", drafts) == [MINUTE] * len(drafts)  # a→b, b→a a minute apart


def test_within_first_counts_senders_by_their_own_first_message(make_store) -> None:
    # a writes again 1 and 2 minutes after its first; b once more, 5 days later; c once
    edges = [("a", "b", 0), ("a", "c", 1), ("a", "d", 2), ("b", "a", 3), ("b", "c", 3 + 5 * 24 * 60),
             ("c", "a", 4)]  # fmt: skip
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_windows.within_first, 24) if d is not None]
    ones = [d for d in drafts if d.params["k"] == 1]  # at least one more: a alone (b's is too late)
    assert ones and _golds(store, "T5.within_first", ones) == [1] * len(ones)
    ctx, tmpl = OpContext(store), TEMPLATES["T5.within_first"]
    for d in drafts:
        if d.params["k"] > 1:  # nobody wrote 3 or 10 more: the generator drops the empty count
            assert (
                compute_gold(ctx, None, tmpl, d, plan_json("x", "q", tmpl, d)).reason == "degenerate: empty"
            )
