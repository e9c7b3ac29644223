"""T5: analyst questions over the event set and the belief history (the event operators: ``list_events``,
``aggregate_events``, ``belief_changes``, ``longest_temporal_path``).

A question whose answer is "the top group" is only asked when the top is unique: the draw runs the
aggregate once and rejects a tie for first place (so no gold rests on the operator's tie rule, which the
question would otherwise have to state). Templates that need something a dataset may lack (a numeric edge
property, committed correction batches) return no draw on a store without it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tgms.engine.api import call, committed_batches
from tgms.pipeline.tasks.model import Draft, one_step, ref, step, template
from tgms.pipeline.tasks.probe_kinds import numeric_prop_key, sample_props
from tgms.pipeline.tasks.sampler import DAY, HOUR, MONTH, WEEK, Sampler, fmt_time, window_words

MAX_CHAIN = 30  # a chain that reaches it is not asked about (the answer would be the cap)
COUNT_DESC = [{"field": "count", "desc": True}]
NO_SELF_LOOPS = {"field": "src", "op": "ne", "other": "dst"}  # a self-loop's "other" endpoint is the node
SLOTS = {
    "hour": ("hour of the day (UTC)", "an hour 0-23"),
    "dow": ("day of the week (UTC)", "an ISO weekday number, 1 = Monday .. 7 = Sunday"),
}


def payload(s: Sampler, op: str, args: dict[str, Any]) -> dict[str, Any]:
    """The payload of one unguarded call at draw time (what a template checks before it asks)."""
    return call(s.ctx, op, args, check_cost=False)["payload"]


def _unique_top(s: Sampler, args: dict[str, Any]) -> bool:
    """Whether the aggregate ``args`` (ordered by count descending) has one group with the most events."""
    rows = payload(s, "aggregate_events", {**args, "limit": 2})["rows"]
    return len(rows) == 1 or (len(rows) == 2 and rows[0]["count"] > rows[1]["count"])


@template(
    "T5.top_account",
    kind="entity",
    ops=("aggregate_events",),
    paraphrases=(
        "Which account {role} the most messages between {t_a} and {t_b}?",
        "Over the window [{t_a}, {t_b}), who {role} more messages than any other account?",
        "Find the account that {role} the largest number of messages in the period from {t_a} to {t_b}.",
    ),
)
def top_account(s: Sampler) -> Draft | None:
    key, role = s.choice([("src", "sent"), ("dst", "received")])
    w = s.window(s.choice([DAY, 3 * DAY, WEEK]))
    args = {"window": w, "group_by": [key], "order_by": COUNT_DESC, "limit": 2}
    if not _unique_top(s, args):
        return None
    params = {"role": role, **window_words(w)}
    return one_step("aggregate_events", args, f"rows[0].{key}", params, key=(key, w["t_a"], w["t_b"]))


@template(
    "T5.many_partners",
    kind="count",
    ops=("aggregate_events",),
    paraphrases=(
        "How many accounts exchanged messages (in either direction) with more than {k} distinct other "
        "accounts between {t_a} and {t_b}?",
        "In the window [{t_a}, {t_b}), count the accounts that had over {k} different correspondents, "
        "counting both messages sent and received (messages to oneself excluded).",
        "Between {t_a} and {t_b}, for how many accounts does the number of distinct other accounts they "
        "messaged or heard from exceed {k}?",
    ),
)
def many_partners(s: Sampler) -> Draft:
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    k = s.choice([2, 3, 5, 8])
    args = {
        "window": w,
        "where": [NO_SELF_LOOPS],
        "group_by": ["node"],
        "aggregates": [{"fn": "count_distinct", "field": "other", "as": "partners"}],
        "having": [{"field": "partners", "op": "gt", "value": k}],
        "limit": 1,
    }
    params = {"k": k, **window_words(w)}
    return one_step("aggregate_events", args, "rows_total", params, key=(k, w["t_a"], w["t_b"]))


@template(
    "T5.longest_silence",
    kind="value",
    ops=("aggregate_events",),
    paraphrases=(
        "What was {u}'s longest silence between {t_a} and {t_b}: the largest gap, in µs, between two "
        "consecutive messages it sent or received in that window?",
        "Between {t_a} and {t_b}, how long (µs) was the longest pause between consecutive messages "
        "involving {u}?",
        "Looking only at messages sent or received by {u} in [{t_a}, {t_b}), give the maximum time in µs "
        "between one message and the next.",
    ),
)
def longest_silence(s: Sampler) -> Draft:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    args = {"window": w, "node": [u], "aggregates": [{"fn": "max_gap"}]}
    params = {"u": u, **window_words(w)}
    return one_step("aggregate_events", args, "rows[0].max_gap", params, (u,), key=(u, w["t_a"], w["t_b"]))


@template(
    "T5.busiest_slot",
    kind="value",
    ops=("aggregate_events",),
    paraphrases=(
        "Between {t_a} and {t_b}, which {slot} saw the most messages? Answer with {form}.",
        "Grouping the messages of [{t_a}, {t_b}) by {slot}, which group is the largest? Give {form}.",
        "In the period from {t_a} to {t_b}, in which {slot} were accounts most active (most messages)? "
        "Reply with {form}.",
    ),
)
def busiest_slot(s: Sampler) -> Draft | None:
    key = s.choice(sorted(SLOTS))
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    args = {"window": w, "group_by": [key], "order_by": COUNT_DESC, "limit": 2}
    if not _unique_top(s, args):
        return None
    slot, form = SLOTS[key]
    params = {"slot": slot, "form": form, **window_words(w)}
    return one_step("aggregate_events", args, f"rows[0].{key}", params, key=(key, w["t_a"], w["t_b"]))


@template(
    "T5.pair_messages",
    kind="count",
    ops=("list_events",),
    paraphrases=(
        "How many messages did {u} send to {v} between {t_a} and {t_b}?",
        "In the window [{t_a}, {t_b}), count the messages from {u} to {v} (that direction only).",
        "Between {t_a} and {t_b}, how many times did {u} write to {v}?",
    ),
)
def pair_messages(s: Sampler) -> Draft | None:
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    e = s.ctx.edges(None)
    lo, hi = (int(i) for i in np.searchsorted(e.vt_s, [w["t_a"], w["t_b"]], "left"))
    if hi <= lo:
        return None
    i = int(s.rng.integers(lo, hi))  # a pair that wrote in the window (so the count is not zero)
    u, v = s.uid(e.src[i]), s.uid(e.dst[i])
    args = {"window": w, "src": [u], "dst": [v], "limit": 1}
    params = {"u": u, "v": v, **window_words(w)}
    return one_step("list_events", args, "rows_total", params, (u, v), key=(u, v, w["t_a"], w["t_b"]))


def _prop_key(s: Sampler) -> str | None:
    """The data set's numeric edge property (bitcoin-otc ``rating``, synthetic weights), if any."""
    keys = sorted({k for p in sample_props(s.ctx) if (k := numeric_prop_key(p))})
    return keys[0] if keys else None


@template(
    "T5.rating_received",
    kind="value",
    ops=("aggregate_events",),
    paraphrases=(
        "Over the whole record, what is the {stat} {prop} that {u} received from other accounts?",
        "Taking every edge that points to {u}, what is the {stat} value of its {prop} property?",
        "Across all incoming edges of {u}, report the {stat} of the edge property {prop}.",
    ),
)
def rating_received(s: Sampler) -> Draft | None:
    prop = _prop_key(s)
    if prop is None:
        return None
    u = s.busy_uid()
    fn, stat = s.choice([("mean", "average"), ("min", "lowest"), ("median", "median")])
    args = {"dst": [u], "aggregates": [{"fn": fn, "field": f"prop.{prop}"}]}
    params = {"u": u, "stat": stat, "prop": prop}
    return one_step("aggregate_events", args, f"rows[0].{fn}_prop_{prop}", params, (u,), key=(u, fn))


@template(
    "T5.negative_ratings",
    kind="count",
    ops=("list_events",),
    datasets=("bitcoin-otc",),
    paraphrases=(
        "How many negative ratings (rating below 0) were given between {t_a} and {t_b}?",
        "In the window [{t_a}, {t_b}), count the rating events whose rating is less than zero.",
        "Between {t_a} and {t_b}, how many times did one account rate another negatively (rating < 0)?",
    ),
)
def negative_ratings(s: Sampler) -> Draft:
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    args = {"window": w, "where": [{"field": "prop.rating", "op": "lt", "value": 0}], "limit": 1}
    return one_step("list_events", args, "rows_total", window_words(w), key=(w["t_a"], w["t_b"]))


CHANGES = {
    "corrected": "recorded versions were replaced by corrected content",
    "asserted": "new facts (nodes or edge events not recorded before) were added",
}


@template(
    "T5.belief_changes",
    kind="count",
    ops=("belief_changes",),
    paraphrases=(
        "In the update batches committed at transaction times in [{tt_from}, {tt_to}), how many {what}?",
        "Looking at the record's revision history between transaction times {tt_from} (inclusive) and "
        "{tt_to} (exclusive), how many {what}?",
        "Counting only changes committed with a transaction time from {tt_from} up to but excluding "
        "{tt_to}, how many {what}?",
    ),
)
def belief_changes(s: Sampler) -> Draft | None:
    # the windows span the correction batches written after the bulk load (the suite's probes), so the
    # counts are small and differ between draws; a store without such batches gets no draw
    tts = sorted({b.tt for b in committed_batches(s.ctx.store.root, "probe:")})
    if len(tts) < 2:
        return None
    i = int(s.rng.integers(0, len(tts) - 1))
    j = int(s.rng.integers(i + 1, min(len(tts), i + 9)))
    kind = s.choice(sorted(CHANGES))
    args = {"tt_from": tts[i], "tt_to": tts[j] + 1, "kinds": [kind], "limit": 1}
    # transaction times are µs on the same clock as valid times: shown the same way
    params = {"tt_from": fmt_time(tts[i]), "tt_to": fmt_time(tts[j] + 1), "what": CHANGES[kind]}
    return one_step("belief_changes", args, "rows_total", params, key=(kind, tts[i], tts[j]))


@template(
    "T5.longest_chain",
    kind="count",
    ops=("longest_temporal_path",),
    paraphrases=(
        "Starting from {u} at {t_a}, how many hops does the longest chain of messages have in which each "
        "message is sent strictly later than the previous one, before {t_b}?",
        "Within [{t_a}, {t_b}), what is the length (in messages) of the longest time-respecting chain of "
        "messages that starts at {u}, each hop strictly later than the one before?",
        "How long, in hops, is the longest relay of messages out of {u} between {t_a} and {t_b}, where every "
        "next message leaves the current holder strictly after the previous one arrived?",
    ),
)
def longest_chain(s: Sampler) -> Draft | None:
    w = s.window(s.choice([6 * HOUR, DAY]))
    u = sender_in(s, w)
    if u is None:
        return None
    args = {"src": u, "window": w, "max_hops": MAX_CHAIN, "limit": 1}
    if payload(s, "longest_temporal_path", args)["capped"]:
        return None  # longer than max_hops: the answer would be the cap, not the longest chain
    params = {"u": u, **window_words(w)}
    return one_step("longest_temporal_path", args, "hops", params, (u,), key=(u, w["t_a"], w["t_b"]))


def sender_in(s: Sampler, w: dict[str, int]) -> str | None:
    """The sender of a random event of the window (so the chain has at least one hop), or None."""
    e = s.ctx.edges(None)
    lo, hi = (int(i) for i in np.searchsorted(e.vt_s, [w["t_a"], w["t_b"]], "left"))
    return s.uid(e.src[int(s.rng.integers(lo, hi))]) if hi > lo else None


@template(
    "T5.last_contact",
    kind="entity",
    ops=("list_events",),
    paraphrases=(
        "Who was the last account {u} sent a message to between {t_a} and {t_b}?",
        "Among the messages {u} sent in the window [{t_a}, {t_b}), which account received the latest one?",
        "Going by message times, to whom did {u} write last in the period from {t_a} to {t_b}?",
    ),
)
def last_contact(s: Sampler) -> Draft | None:
    w = s.window(s.choice([DAY, 3 * DAY, WEEK]))
    u = sender_in(s, w)
    if u is None:
        return None
    args = {"window": w, "src": [u], "order": "desc", "limit": 2}
    rows = payload(s, "list_events", args)["rows"]
    if len(rows) == 2 and rows[0]["vt_s"] == rows[1]["vt_s"] and rows[0]["dst"] != rows[1]["dst"]:
        return None  # two messages to different accounts at the same last instant: no single answer
    params = {"u": u, **window_words(w)}
    return one_step("list_events", args, "rows[0].dst", params, (u,), key=(u, w["t_a"], w["t_b"]))


@template(
    "T5.send_balance",
    kind="value",
    ops=("aggregate_events", "compute"),
    paraphrases=(
        "Between {t_a} and {t_b}, how many more messages did {u} send than it received? (Negative if it "
        "received more.)",
        "For {u} over [{t_a}, {t_b}), give messages sent minus messages received.",
        "Compute {u}'s net outgoing message count in the window from {t_a} to {t_b}: sent minus received.",
    ),
)
def send_balance(s: Sampler) -> Draft:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    steps = [
        step("s1", "aggregate_events", {"window": w, "src": [u]}),
        step("s2", "aggregate_events", {"window": w, "dst": [u]}),
        step(
            "s3",
            "compute",
            {"fn": "diff", "a": ref("s1.rows[0].count"), "b": ref("s2.rows[0].count")},
            "s1",
            "s2",
        ),
    ]
    return Draft({"u": u, **window_words(w)}, (u,), steps, "s3.value", key=(u, w["t_a"], w["t_b"]))
