"""The T5 templates over the rest of issue 27's capabilities (``pipeline/tasks/templates/t5_extra.py``): each
asks only where its answer needs what it asks (a wait limit or strict start that changes the answer, a tie
at the minimum, a share of fewer than all, a comparison that is neither 0 nor all, a unique top answerer,
two gaps or more, a relative window that cuts), and the gold is the hand-computed value, confirmed by the
brute-force oracles, on both backends."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from tests.pipeline.tasks.test_t5 import T0, _draws, _edge, _store
from tests.pipeline.tasks.test_t5_issue27 import _golds
from tgms.pipeline.tasks.model import all_templates
from tgms.pipeline.tasks.sampler import HOUR, MINUTE
from tgms.pipeline.tasks.templates import t5_extra

NEW = {
    "T5.x.quick_chain",
    "T5.x.strict_relay",
    "T5.x.quietest_sender",
    "T5.x.top_share",
    "T5.x.more_received",
    "T5.x.readiest_answerer",
    "T5.x.answer_lag",
    "T5.x.first_days",
    "T5.y.fewest_hops",
    "T5.y.peak_in_force",
    "T5.y.sliding_hours",
    "T5.z.every_reply",
}


def test_the_templates_use_the_capabilities_they_are_for_and_sort_last() -> None:
    mine = {t.name: t for t in all_templates() if t.name in NEW}
    assert set(mine) == NEW and {t.family for t in mine.values()} == {"T5"}
    # appended after every older template, so the generator's per-template seeds of those do not move
    later = ("T5.zz.", "T5.zzz.", "T5.zzzz.")  # came later still: test_t5_filters, _reach, _spans
    older = [t.name for t in all_templates() if t.name not in NEW and not t.name.startswith(later)]
    assert max(older) < min(NEW)
    assert mine["T5.x.quietest_sender"].kind == "entity"
    assert {op for t in mine.values() for op in t.ops} == {
        "longest_temporal_path",
        "temporal_reachability",
        "aggregate_events",
        "next_event",
        "list_events",
        "compute",
        "graph_metric_timeseries",
    }


def _chain(make_store: Any, gaps_min: list[int], name: str = "chain") -> Any:
    """a → b → c → ... one message a hop, the k-th ``gaps_min[k-1]`` minutes after the one before."""
    store = make_store(name)
    nodes = "abcdefgh"[: len(gaps_min) + 2]
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in nodes])
    t, edges = T0, []
    for k, (u, v) in enumerate(pairwise(nodes)):
        t += gaps_min[k - 1] * MINUTE if k else 0
        edges.append(_edge(u, v, t))
    store.write(edges)
    return store


def test_quick_chain_counts_hops_within_the_wait_and_only_where_it_matters(make_store: Any) -> None:
    # a→b, then b→c 5 minutes later, c→d 45 minutes after that, d→e 5 hours after that
    store = _chain(make_store, [5, 45, 300])
    drafts = [d for d in _draws(store, t5_extra.quick_chain, 40) if d is not None]
    assert drafts
    times = [0, 5, 50, 350]  # minutes of each hop; the chain from the k-th sender starts at hop k

    def hops(u: str, wait: int) -> int:
        k = "abcd".index(u)
        n = 1
        while k + n < len(times) and (times[k + n] - times[k + n - 1]) * MINUTE <= wait:
            n += 1
        return n

    waits = dict((words, wait) for wait, words in t5_extra.WAITS)
    want = [hops(d.params["u"], waits[d.params["wait"]]) for d in drafts]
    assert all(w >= 2 for w in want)  # one hop is not a chain
    assert all(d.steps[0]["args"]["delta_max_wait"] == waits[d.params["wait"]] for d in drafts)
    assert "6 hours" not in {d.params["wait"] for d in drafts}  # no hop waits more: the limit changes nothing
    assert _golds(store, "T5.x.quick_chain", drafts) == want
    slow = _chain(make_store, [600, 600], "slow")  # 10 hours a hop: one hop within every wait asked
    assert _draws(slow, t5_extra.quick_chain, 12) == [None] * 12


def test_strict_relay_counts_reach_without_same_instant_hand_offs(make_store: Any) -> None:
    store = make_store("relay")
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abcde"])
    # b passes a's message on in the same instant (c), and a minute later (d); d on to e an hour later
    store.write(
        [_edge("a", "b", T0), _edge("b", "c", T0), _edge("b", "d", T0 + MINUTE), _edge("d", "e", T0 + HOUR)]
    )
    drafts = [d for d in _draws(store, t5_extra.strict_relay, 40) if d is not None]
    assert drafts and {d.params["u"] for d in drafts} == {"a"}  # only a's reach changes under strict
    args = drafts[0].steps[0]["args"]
    assert args["strict"] is True and args["window"]["t_a"] < args["depart_by"] < args["window"]["t_b"]
    assert _golds(store, "T5.x.strict_relay", drafts) == [3] * len(drafts)  # b, d, e; not c


def test_quietest_sender_breaks_the_tie_by_account_number(make_store: Any) -> None:
    # n10 and n9 each send once, n2 three times: the tie at one message goes to n9 (9 < 10 as numbers;
    # as strings "n10" < "n9")
    edges = [("n10", "n5", 0), ("n9", "n5", 1), ("n2", "n5", 2), ("n2", "n5", 3), ("n2", "n5", 4)]
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_extra.quietest_sender) if d is not None]
    assert drafts and drafts[0].steps[1]["args"]["tie_by"] == "src"
    assert drafts[0].steps[1]["args"]["order"] == "asc"
    assert _golds(store, "T5.x.quietest_sender", drafts) == ["n9"] * len(drafts)
    tie = _store(make_store, [("n1", "n5", 0), ("n2", "n5", 1), ("n2", "n5", 2), ("n3", "n5", 3)], "tie")
    assert _draws(tie, t5_extra.quietest_sender, 6) != [None] * 6  # n1 and n3 tie at one
    no_tie = _store(
        make_store,
        [("n1", "n5", 0)] + [("n2", "n5", k) for k in (1, 2)] + [("n3", "n5", k) for k in (3, 4, 5)],
        "nt",
    )
    assert _draws(no_tie, t5_extra.quietest_sender, 6) == [None] * 6  # n1 alone is least: no tie rule asked
    two = _store(make_store, [("n1", "n5", 0), ("n2", "n5", 1)], "two")
    assert _draws(two, t5_extra.quietest_sender, 6) == [None] * 6  # two senders: too few to ask


def test_top_share_sums_the_busiest_fraction_of_senders(make_store: Any) -> None:
    # twelve senders: the k-th sends k messages
    edges = [(f"u{k}", "z", k * 20 + j) for k in range(1, 13) for j in range(k)]
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_extra.top_share, 24) if d is not None]
    assert drafts and all(d.steps[1]["args"]["fraction"] == d.params["share"] for d in drafts)
    want = {0.1: 12 + 11, 0.2: 12 + 11 + 10, 0.25: 12 + 11 + 10}  # ceil(1.2) = 2, ceil(2.4) = ceil(3) = 3
    assert _golds(store, "T5.x.top_share", drafts) == [want[d.params["share"]] for d in drafts]
    few = _store(make_store, [(f"u{k}", "z", k) for k in range(5)], "few")
    assert _draws(few, t5_extra.top_share, 6) == [None] * 6


def test_more_received_compares_two_counts_of_each_two_way_account(make_store: Any) -> None:
    # a: sent 1 (to b), received 3 (from b, c, c); b: sent 2, received 1; c: sent 2, received 0 (one-way);
    # a's self-message counts neither way
    edges = [("a", "b", 0), ("b", "a", 1), ("b", "d", 2), ("c", "a", 3), ("c", "a", 4), ("a", "a", 5)]
    edges += [("d", "b", 6)]  # d: sent 1, received 1 (a tie is not "more")
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_extra.more_received) if d is not None]
    assert drafts and drafts[0].steps[3]["args"]["other"] == "count"
    assert _golds(store, "T5.x.more_received", drafts) == [1] * len(drafts)  # a only
    none = _store(make_store, [("a", "b", 0), ("b", "a", 1)], "even")
    assert _draws(none, t5_extra.more_received, 6) == [None] * 6  # 0 of 2: not asked


def test_readiest_answerer_groups_replies_by_who_answered(make_store: Any) -> None:
    # a writes to b three times and c twice; b answers two of them within minutes, c one; d never
    edges = [("a", "b", 0), ("b", "a", 1), ("a", "b", 10), ("b", "a", 12), ("a", "b", 20)]
    edges += [("a", "c", 30), ("c", "a", 31), ("a", "c", 40), ("a", "d", 50)]
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_extra.readiest_answerer, 24) if d is not None]
    assert drafts and {d.params["u"] for d in drafts} == {"a"}
    assert [d.steps[1]["args"]["fn"] for d in drafts] == ["group"] * len(drafts)
    assert _golds(store, "T5.x.readiest_answerer", drafts) == ["b"] * len(drafts)
    tied = _store(make_store, [("a", "b", 0), ("b", "a", 1), ("a", "c", 2), ("c", "a", 3)], "tied")
    assert _draws(tied, t5_extra.readiest_answerer, 6) == [None] * 6  # b and c answered once each


def test_answer_lag_looks_back_to_the_recipients_last_message(make_store: Any) -> None:
    # b writes to a at 0 and 5; a answers at 8 (3 minutes after b's last) and at 20 (15 after it); c at 30
    # had never written to a: not counted
    edges = [("b", "a", 0), ("b", "a", 5), ("a", "b", 8), ("a", "b", 20), ("a", "c", 30)]
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_extra.answer_lag, 24) if d is not None]
    assert drafts and {d.params["u"] for d in drafts} == {"a"}
    assert drafts[0].steps[0]["args"]["direction"] == "previous"
    assert _golds(store, "T5.x.answer_lag", drafts) == [(3 + 15) * MINUTE // 2] * len(drafts)


def test_first_days_counts_in_a_window_that_starts_at_each_accounts_first_message(make_store: Any) -> None:
    # a sends at 0, 1 and 2 minutes, then 2 days and 6 days later
    edges = [("a", "b", 0), ("a", "b", 1), ("a", "b", 2), ("a", "b", 2 * 24 * 60), ("a", "b", 6 * 24 * 60)]
    edges += [("b", "a", 3)]  # b's one message: no window of b holds two
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_extra.first_days, 24) if d is not None]
    assert drafts and {d.params["u"] for d in drafts} == {"a"}
    steps = drafts[0].steps
    assert steps[1]["args"]["fn"] == "add" and steps[2]["args"]["window"]["t_b"] == {"$ref": "s2.value"}
    want = {"24 hours": 3, "3 days": 4}  # 7 days holds all five: not asked
    assert "7 days" not in {d.params["days"] for d in drafts}
    assert _golds(store, "T5.x.first_days", drafts) == [want[d.params["days"]] for d in drafts]


def test_fewest_hops_counts_the_shortest_chain_not_the_earliest(make_store: Any) -> None:
    # a→b, b→c, c→d a minute apart (d reached first, in three messages); a→e, e→d later (two messages)
    store = make_store("hops")
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abcde"])
    store.write(
        [_edge("a", "b", T0), _edge("b", "c", T0 + MINUTE), _edge("c", "d", T0 + 2 * MINUTE),
         _edge("a", "e", T0 + 10 * MINUTE), _edge("e", "d", T0 + 20 * MINUTE)]
    )  # fmt: skip
    drafts = [d for d in _draws(store, t5_extra.fewest_hops, 40) if d is not None]
    # only targets two messages away or more: c and d from a, d from b
    assert {(d.params["u"], d.params["v"]) for d in drafts} <= {("a", "c"), ("a", "d"), ("b", "d")}
    assert ("a", "d") in {(d.params["u"], d.params["v"]) for d in drafts}
    assert drafts[0].steps[0]["args"]["hops"] is True and drafts[0].answer_from == "s2.rows[0].hops"
    assert _golds(store, "T5.y.fewest_hops", drafts) == [2] * len(drafts)  # a→e→d, not a→b→c→d
    lone = _store(make_store, [("a", "b", 0), ("a", "c", 1)], "lone")  # every account one message away
    assert _draws(lone, t5_extra.fewest_hops, 6) == [None] * 6


def test_peak_in_force_counts_lasting_relations_of_one_type_at_one_instant(make_store: Any) -> None:
    # follows a→b for 3 days, b→c from day 1 to 5, c→a from day 2 to 4: three at once from day 2; messages
    # beside them (instantaneous: never asked about)
    day = 24 * HOUR
    store = make_store("peak")
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abc"])
    follows = [("a", "b", 0, 3), ("b", "c", 1, 5), ("c", "a", 2, 4)]
    store.write(
        [{"op": "assert_edge", "src": u, "dst": v, "rel_type": "follows", "vt_s": T0 + s * day,
          "vt_e": T0 + e * day} for u, v, s, e in follows]
        + [_edge("a", "b", T0 + k * HOUR) for k in range(0, 100, 7)]
    )  # fmt: skip
    drafts = [d for d in _draws(store, t5_extra.peak_in_force, 24) if d is not None]
    assert drafts and {d.params["rel"] for d in drafts} == {"follows"}
    args = drafts[0].steps[0]["args"]
    assert args["metric"] == "peak_active_edge_count" and args["rel_types"] == ["follows"]
    assert drafts[0].answer_from == "s1.rows[0].value"
    assert _golds(store, "T5.y.peak_in_force", drafts) == [3] * len(drafts)
    events_only = _store(make_store, [("a", "b", 0), ("b", "a", 0), ("a", "c", 1)], "events")
    assert _draws(events_only, t5_extra.peak_in_force, 6) == [None] * 6


def test_sliding_hours_is_the_busiest_run_of_hours_across_the_buckets_edges(make_store: Any) -> None:
    # three messages at 11:xx and three at 12:xx of one day: every n-hour bucket of the day (n = 3, 6, 12,
    # from midnight) holds three, a run across 12:00 holds all six
    store = make_store("runs")
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "ab"])
    times = [T0 + h * HOUR + k * 10 * MINUTE for h in (3, 4) for k in range(3)]  # T0 is 08:00
    store.write([_edge("a", "b", t) for t in times])
    drafts = [d for d in _draws(store, t5_extra.sliding_hours, 24) if d is not None]
    assert {d.params["n"] for d in drafts} == {3, 6, 12}
    run = drafts[0].steps[1]["args"]
    assert run["fn"] == "rolling" and run["frame"] == [0, drafts[0].params["n"] - 1]
    assert drafts[0].answer_from == "s3.value"

    def brute(d: Any) -> int:  # every run of n hours from a full hour of the window, counted from the times
        w, n = d.steps[0]["args"]["window"], d.params["n"]
        starts = range(w["t_a"], w["t_b"], HOUR)
        return max(sum(1 for t in times if a <= t < min(a + n * HOUR, w["t_b"])) for a in starts)

    assert _golds(store, "T5.y.sliding_hours", drafts) == [brute(d) for d in drafts] == [6] * len(drafts)
    one_hour = _store(make_store, [("a", "b", k) for k in range(5)], "one_hour")  # the buckets answer it
    assert _draws(one_hour, t5_extra.sliding_hours, 6) == [None] * 6


def test_every_reply_counts_each_answer_within_the_bound_not_each_answered_message(make_store: Any) -> None:
    # a→b at 0 answered by b→a at 20 s and 40 s (both within a minute), c→a at 10 s answered at 5 min
    # (too late for a minute, in time for 10 minutes and an hour), a self-loop never a reply
    store = make_store("replies")
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in "abc"])
    sec = 1_000_000
    msgs = [("a", "b", 0), ("b", "a", 20), ("b", "a", 40), ("c", "a", 10), ("a", "c", 300), ("a", "a", 50)]
    store.write([_edge(u, v, T0 + t * sec) for u, v, t in msgs])
    drafts = [d for d in _draws(store, t5_extra.every_reply, 24) if d is not None]
    assert {d.params["within"] for d in drafts} == {"a minute", "10 minutes", "an hour"}
    args = drafts[0].steps[0]["args"]
    assert args["all"] is True and args["match"] == [{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}]
    assert drafts[0].answer_from == "s1.rows_total"
    # a minute: a→b's two answers (b→a's are answered by nothing later from a to b; c→a's answer at
    # 300 s is too late); 10 minutes and an hour: c→a's answer too
    want = {"a minute": 2, "10 minutes": 3, "an hour": 3}
    assert _golds(store, "T5.z.every_reply", drafts) == [want[d.params["within"]] for d in drafts]
    once = _store(make_store, [("a", "b", 0), ("b", "a", 1)], "once")  # one answer: first replies suffice
    assert _draws(once, t5_extra.every_reply, 6) == [None] * 6
