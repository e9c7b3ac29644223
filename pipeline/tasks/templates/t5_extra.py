"""T5 over the rest of issue 27's capabilities: the wait limit of a longest chain (``delta_max_wait``), strict
relays that must start early (``strict``, ``depart_by``), bottom-k with a declared tie-break (``topk``
``order: asc``, ``tie_by``), top-k by fraction, a filter comparing two fields of a row, a ``group`` over
an operator's derived rows (``next_event`` replies by answerer), ``next_event`` looking back
(``direction: previous``), a window relative to each account's own first message built by scalar
arithmetic (``compute add`` of a time and a duration, both window ends ``$ref``s), the fewest hops of
a time-respecting chain (``temporal_reachability`` ``hops``), the most relations of one type in force
at one instant (``graph_metric_timeseries`` ``peak_active_edge_count`` with ``rel_types``), the busiest
run of consecutive hours (hourly buckets, then ``compute rolling``: overlapping windows), and every reply
within a bound (``next_event`` ``all``: the pairs of a temporal join, not each message's first reply).

Each keeps a draw only where its answer needs what it asks: the wait limit, or the strict start, changes
the answer (a plan that leaves it out is wrong); the fewest-messages question has a tie at the minimum
(so the stated tie rule decides it); the busiest share picks fewer accounts than all; the received-more
count is neither 0 nor every two-way account; the readiest answerer is a unique top of at least two; a
median looks at two or more gaps; the relative window holds two messages or more and not all of them;
the fewest-hops target is two messages away or more; the peak in force is two or more and above the count
at the window's start (only on data with lasting relations: a type whose versions are all instantaneous
would make it a count of equal timestamps); the busiest run of hours beats every run of the window's own
n-hour buckets (so buckets that do not overlap give a wrong answer); the reply pairs outnumber the
answered messages (so counting first replies gives a wrong answer).

The names start ``T5.x.`` so that they sort after every older template: the generator seeds a template's
draws by its position in the sorted registry, so appending keeps every existing task as it was. A template
added later takes the next prefix (``T5.y.fewest_hops``, ``T5.y.peak_in_force``, ``T5.y.sliding_hours``,
``T5.z.every_reply``), for the same reason.
"""

from __future__ import annotations

from collections import Counter

from tgms.engine.api import MAX_BUCKETS
from tgms.pipeline.tasks.model import Draft, one_step, ref, step, template
from tgms.pipeline.tasks.sampler import DAY, HOUR, MINUTE, WEEK, Sampler, fmt_time, window_words
from tgms.pipeline.tasks.templates.t5 import MAX_CHAIN, NO_SELF_LOOPS, payload, sender_in
from tgms.pipeline.tasks.templates.t5_sequences import REPLY

MAX_ROWS = 10_000  # every group of a window at once: a reducer over a cut page would be refused
#: the wait limits asked for, with their words
WAITS = [(10 * MINUTE, "10 minutes"), (HOUR, "an hour"), (6 * HOUR, "6 hours")]
#: the shares of the busiest senders asked for, with their words
SHARES = [(0.1, "10%"), (0.2, "20%"), (0.25, "25%")]


@template(
    "T5.x.quick_chain",
    kind="count",
    ops=("longest_temporal_path",),
    paraphrases=(
        "Starting from {u} at {t_a}, how many messages long is the longest chain in which each message is "
        "sent by the recipient of the one before, strictly later than it and at most {wait} after it, "
        "before {t_b}?",
        "Within [{t_a}, {t_b}), find the longest relay of messages out of {u} where every next message "
        "leaves the account the previous one reached, strictly later but no more than {wait} later. How "
        "many messages (hops) does it have?",
        "Counting only quick hand-offs (each message sent strictly after the previous one arrived, within "
        "{wait} of it), how many hops does the longest chain of messages starting at {u} have between "
        "{t_a} and {t_b}?",
    ),
)
def quick_chain(s: Sampler) -> Draft | None:
    # short windows from one account: the brute-force oracle that cross-checks the gold walks every chain
    w = s.window(s.choice([6 * HOUR, 12 * HOUR, DAY]))
    u = sender_in(s, w)
    if u is None:
        return None
    wait, words = s.choice(WAITS)
    quick = {"src": u, "window": w, "max_hops": MAX_CHAIN, "delta_max_wait": wait, "limit": 1}
    got = payload(s, "longest_temporal_path", quick)
    if got["capped"] or got["hops"] < 2:
        return None  # the cap is not the longest chain; one hop is not a chain
    unlimited = payload(s, "longest_temporal_path", {**quick, "delta_max_wait": None})
    if not unlimited["capped"] and unlimited["hops"] == got["hops"]:
        return None  # the wait limit changes nothing: a plan without it would be right too
    params = {"u": u, "wait": words, **window_words(w)}
    return one_step("longest_temporal_path", quick, "hops", params, (u,), key=(u, wait, w["t_a"], w["t_b"]))


@template(
    "T5.x.strict_relay",
    kind="count",
    ops=("temporal_reachability",),
    paraphrases=(
        "{u} sends a message between {t_a} and {d}; every account that receives it passes it on only in a "
        "message sent strictly later than the one it got, until {t_b}. How many accounts can it reach?",
        "Starting with a message {u} sends in [{t_a}, {d}), and relaying only through messages each sent "
        "strictly after the previous one arrived (never in the same instant), how many other accounts can "
        "be reached before {t_b}?",
        "How many accounts can {u} reach by chains of messages whose first message {u} sends before {d} "
        "(from {t_a} on) and whose every later message is strictly later than the one before, all before "
        "{t_b}?",
    ),
)
def strict_relay(s: Sampler) -> Draft | None:
    w = s.window(s.choice([DAY, 3 * DAY, WEEK]))
    depart_by = w["t_a"] + max(1, (w["t_b"] - w["t_a"]) // s.choice([4, 7, 10]))
    u = sender_in(s, {"t_a": w["t_a"], "t_b": depart_by})  # someone who does send before depart_by
    if u is None:
        return None
    args = {"src": u, "window": w, "strict": True, "depart_by": depart_by, "limit": 1}
    n = payload(s, "temporal_reachability", args)["rows_total"]
    plain = payload(s, "temporal_reachability", {"src": u, "window": w, "limit": 1})["rows_total"]
    if n == 0 or n == plain:
        return None  # nothing reached, or the strict early start changes nothing
    params = {"u": u, "d": fmt_time(depart_by), **window_words(w)}
    return one_step("temporal_reachability", args, "rows_total", params, (u,), key=(u, depart_by, w["t_b"]))


@template(
    "T5.x.quietest_sender",
    kind="entity",
    ops=("aggregate_events", "compute"),
    paraphrases=(
        "Among the accounts that sent at least one message between {t_a} and {t_b}, which sent the fewest? "
        "If several tie, give the one with the smallest account number (compared as numbers: 9 before 10).",
        "Of the accounts with at least one outgoing message in [{t_a}, {t_b}), which was the least active "
        "sender? Break ties by the lowest account number, in numeric order (9 comes before 10).",
        "Which account sent the fewest messages from {t_a} to {t_b}, counting only accounts that sent some? "
        "On a tie, answer the account whose number is smallest as a number (9 before 10, not after).",
    ),
)
def quietest_sender(s: Sampler) -> Draft | None:
    w = s.window(s.choice([DAY, 3 * DAY, WEEK]))
    by_src = {"window": w, "group_by": ["src"], "limit": MAX_ROWS}
    rows = payload(s, "aggregate_events", by_src)["rows"]
    counts = [r["count"] for r in rows]
    if len(rows) < 3 or len(rows) >= MAX_ROWS or counts.count(min(counts)) < 2:
        return None  # no tie at the minimum: the tie rule would not be asked about
    least = {"fn": "topk", "input": ref("s1.rows"), "field": "count", "k": 1, "order": "asc", "tie_by": "src"}
    steps = [step("s1", "aggregate_events", by_src), step("s2", "compute", least, "s1")]
    return Draft(window_words(w), (), steps, "s2.rows[0].src", key=(w["t_a"], w["t_b"]))


@template(
    "T5.x.top_share",
    kind="count",
    ops=("aggregate_events", "compute"),
    paraphrases=(
        "Between {t_a} and {t_b}, how many messages in total did the busiest {pct} of senders send (the "
        "⌈{share}·n⌉ accounts that sent the most, of the n accounts that sent any)?",
        "Take the accounts that sent messages in [{t_a}, {t_b}) and keep the top {pct} by messages sent "
        "(⌈{share}·n⌉ of n, rounded up). How many messages did those accounts send altogether?",
        "What is the combined number of messages sent from {t_a} to {t_b} by the most active {pct} of the "
        "senders (the ⌈{share}·n⌉ heaviest of the n senders)?",
    ),
)
def top_share(s: Sampler) -> Draft | None:
    w = s.window(s.choice([DAY, 3 * DAY, WEEK]))
    share, pct = s.choice(SHARES)
    by_src = {"window": w, "group_by": ["src"], "limit": MAX_ROWS}
    n = payload(s, "aggregate_events", {**by_src, "limit": 1})["rows_total"]
    if n < 10 or n >= MAX_ROWS:
        return None  # a share of a handful of senders is a top-k in disguise
    top = {"fn": "topk", "input": ref("s1.rows"), "field": "count", "fraction": share}
    steps = [
        step("s1", "aggregate_events", by_src),
        step("s2", "compute", top, "s1"),
        step("s3", "compute", {"fn": "sum", "input": ref("s2.rows[*].count")}, "s2"),
    ]
    params = {"share": share, "pct": pct, **window_words(w)}
    return Draft(params, (), steps, "s3.value", key=(share, w["t_a"], w["t_b"]))


@template(
    "T5.x.more_received",
    kind="count",
    ops=("aggregate_events", "compute"),
    paraphrases=(
        "Among the accounts that both sent and received messages between {t_a} and {t_b} (messages to "
        "oneself excluded), how many received more messages than they sent?",
        "In [{t_a}, {t_b}), consider every account with at least one message out and one message in "
        "(self-messages ignored). For how many of them is the number received greater than the number "
        "sent?",
        "How many accounts that wrote and were written to from {t_a} to {t_b} (not counting messages to "
        "themselves) got more messages than they sent?",
    ),
)
def more_received(s: Sampler) -> Draft | None:
    # a day or three: the brute-force oracle that cross-checks the gold joins every pair of rows
    w = s.window(s.choice([DAY, 2 * DAY, 3 * DAY]))
    sent = {"window": w, "where": [NO_SELF_LOOPS], "group_by": ["src"], "limit": MAX_ROWS}
    got = {"window": w, "where": [NO_SELF_LOOPS], "group_by": ["dst"], "limit": MAX_ROWS}
    out = {r["src"]: r["count"] for r in payload(s, "aggregate_events", sent)["rows"]}
    into = {r["dst"]: r["count"] for r in payload(s, "aggregate_events", got)["rows"]}
    both = out.keys() & into.keys()
    n = sum(into[a] > out[a] for a in both)
    if not both or n in (0, len(both)) or max(len(out), len(into)) >= MAX_ROWS:
        return None  # 0 or all: the comparison would not be asked about
    # the join pairs each sender with the same account as a recipient: {src, count, b_count}
    join = {"fn": "join", "a": ref("s1.rows"), "b": ref("s2.rows"), "on": [{"a": "src", "b": "dst"}]}
    more = {"fn": "filter", "input": ref("s3.rows"), "field": "b_count", "cmp": ">", "other": "count"}
    steps = [
        step("s1", "aggregate_events", sent),
        step("s2", "aggregate_events", got),
        step("s3", "compute", {**join, "limit": MAX_ROWS}, "s1", "s2"),
        step("s4", "compute", {**more, "limit": 1}, "s3"),
    ]
    return Draft(window_words(w), (), steps, "s4.rows_total", key=(w["t_a"], w["t_b"]))


#: how soon an answer must come, with its words
WITHIN = [(HOUR, "an hour"), (DAY, "a day")]


@template(
    "T5.x.readiest_answerer",
    kind="entity",
    ops=("next_event", "compute"),
    paraphrases=(
        "Of the accounts {u} wrote to between {t_a} and {t_b}, which answered {u} most often within "
        "{within}, counting each message of {u}'s whose recipient wrote back to {u} no more than {within} "
        "later?",
        "For every message {u} sent in [{t_a}, {t_b}), check whether its recipient's next message back to "
        "{u} came within {within}. Which recipient did so for the most of {u}'s messages?",
        "Which correspondent of {u} most often replied within {within} to the messages {u} sent them "
        "between {t_a} and {t_b} (a reply: the recipient's next message to {u}, at most {within} later)?",
    ),
)
def readiest_answerer(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK]))
    within, words = s.choice(WITHIN)
    sent = {"window": w, "src": [u], "where": [NO_SELF_LOOPS]}
    replies = {"a": sent, "b": {"dst": [u]}, "match": REPLY, "within": within, "limit": MAX_ROWS}
    rows = payload(s, "next_event", replies)["rows"]
    counts = sorted(Counter(r["dst"] for r in rows).values(), reverse=True)
    if len(counts) < 2 or counts[0] == counts[1] or len(rows) >= MAX_ROWS:
        return None  # one answerer, or a tie for the most: the question would rest on a tie rule
    most = [{"field": "count", "desc": True}]
    group = {"fn": "group", "input": ref("s1.rows"), "by": "dst", "order_by": most, "limit": 1}
    steps = [step("s1", "next_event", replies), step("s2", "compute", group, "s1")]
    params = {"u": u, "within": words, **window_words(w)}
    return Draft(params, (u,), steps, "s2.rows[0].dst", key=(u, within, w["t_a"], w["t_b"]))


@template(
    "T5.x.answer_lag",
    kind="value",
    ops=("next_event",),
    paraphrases=(
        "Over the messages {u} sent between {t_a} and {t_b} to an account that had written to {u} before, "
        "what is the median time (µs) since that account's last message to {u}?",
        "For each message {u} sent in [{t_a}, {t_b}), look back to the recipient's most recent earlier "
        "message to {u}. Where there is one, how long before {u}'s message was it? Give the median, in µs.",
        "How long had {u}'s correspondents been waiting? For every message {u} sent from {t_a} to {t_b} "
        "whose recipient had messaged {u} earlier, take the gap since the recipient's latest such message, "
        "and report the median gap in microseconds.",
    ),
)
def answer_lag(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK]))
    args = {
        "a": {"window": w, "src": [u], "where": [NO_SELF_LOOPS]},
        "b": {"dst": [u]},
        "match": REPLY,
        "direction": "previous",
        "limit": 1,
    }
    if payload(s, "next_event", args)["n_matched"] < 2:
        return None  # the median of one gap is not a question about a sequence
    params = {"u": u, **window_words(w)}
    return one_step("next_event", args, "delay_median", params, (u,), key=(u, w["t_a"], w["t_b"]))


@template(
    "T5.x.first_days",
    kind="count",
    ops=("list_events", "compute"),
    paraphrases=(
        "How many messages did {u} send in the {days} starting at its first message sent at or after "
        "{t_a} (that message included)?",
        "Take {u}'s first message from {t_a} on. Counting it, how many messages did {u} send within the "
        "following {days} (up to, not including, {days} after it)?",
        "Starting the clock at the first message {u} sent on or after {t_a}, how many messages had {u} "
        "sent by the time {days} had passed (the first one counted)?",
    ),
)
def first_days(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    t_a = s.window(WEEK)["t_a"]
    span, days = s.choice([(DAY, "24 hours"), (3 * DAY, "3 days"), (WEEK, "7 days")])
    after = {"window": {"t_a": t_a, "t_b": s.hi + 1}, "src": [u], "limit": 1}
    first = payload(s, "list_events", after)
    if not first["rows"]:
        return None
    t0 = first["rows"][0]["vt_s"]
    n = payload(s, "list_events", {"window": {"t_a": t0, "t_b": t0 + span}, "src": [u], "limit": 1})
    if n["rows_total"] < 2 or n["rows_total"] == first["rows_total"]:
        return None  # one message, or every later one: the relative window would change nothing
    end = {"fn": "add", "a": ref("s1.rows[0].vt_s"), "b": span}
    relative = {"window": {"t_a": ref("s1.rows[0].vt_s"), "t_b": ref("s2.value")}, "src": [u], "limit": 1}
    steps = [
        step("s1", "list_events", after),
        step("s2", "compute", end, "s1"),
        step("s3", "list_events", relative, "s1", "s2"),
    ]
    params = {"u": u, "days": days, "t_a": fmt_time(t_a)}
    return Draft(params, (u,), steps, "s3.rows_total", key=(u, span, t0))


@template(
    "T5.y.fewest_hops",
    kind="count",
    ops=("temporal_reachability", "compute"),
    paraphrases=(
        "Relaying messages from {u} (the first sent by {u} from {t_a} on, each next one sent by the "
        "recipient of the one before, no earlier than it), what is the fewest number of messages a chain "
        "needs to reach {v} before {t_b}?",
        "Between {t_a} and {t_b}, how many hops does the shortest time-respecting chain of messages from "
        "{u} to {v} have (fewest messages, not earliest arrival; each message leaves the account the "
        "previous one reached, at the same time or later)?",
        "Counting messages, how short can a relay from {u} to {v} be within [{t_a}, {t_b}), if every "
        "message after the first is sent by the previous message's recipient no earlier than it arrived?",
    ),
)
def fewest_hops(s: Sampler) -> Draft | None:
    w = s.window(s.choice([DAY, 3 * DAY]))
    u = sender_in(s, w)
    if u is None:
        return None
    reach = {"src": u, "window": w, "hops": True, "limit": MAX_ROWS}
    rows = payload(s, "temporal_reachability", reach)["rows"]
    far = [r for r in rows if r["hops"] >= 2]
    if not far or len(rows) >= MAX_ROWS:
        return None  # every account one message away: the count is not a question about chains
    v = s.choice(far)["uid"]
    find = {"fn": "filter", "input": ref("s1.rows"), "field": "uid", "cmp": "==", "value": v}
    steps = [step("s1", "temporal_reachability", {**reach, "limit": 1}), step("s2", "compute", find, "s1")]
    params = {"u": u, "v": v, **window_words(w)}
    return Draft(params, (u, v), steps, "s2.rows[0].hops", key=(u, v, w["t_a"], w["t_b"]))


@template(
    "T5.y.peak_in_force",
    kind="count",
    ops=("graph_metric_timeseries",),
    paraphrases=(
        "What is the largest number of '{rel}' relations in force at the same moment between {t_a} and "
        "{t_b}? (A relation holds from its start, inclusive, to its end, exclusive.)",
        "At its peak within [{t_a}, {t_b}), how many '{rel}' relations held at one and the same instant "
        "(each from its start up to, not including, its end)?",
        "Counting the '{rel}' relations valid at each instant from {t_a} to {t_b} (start included, end "
        "excluded), what is the highest such count?",
    ),
)
def peak_in_force(s: Sampler) -> Draft | None:
    # a type most of whose versions last: of instantaneous events a peak would count equal timestamps
    # (a correction that stretched a few of CollegeMsg's messages does not make messages one)
    types = s.lasting_types
    if not types:
        return None
    rel = s.choice(types)
    w = s.window(s.choice([WEEK, 2 * WEEK]))
    args = {
        "metric": "peak_active_edge_count",
        "rel_types": [rel],
        "window": w,
        "stride": w["t_b"] - w["t_a"],
    }
    peak = payload(s, "graph_metric_timeseries", args)["rows"][0]
    at_start = payload(s, "graph_metric_timeseries", {**args, "metric": "active_edge_count"})["rows"][0]
    if peak["value"] < 2 or peak["value"] == at_start["value"]:
        return None  # no two at once, or the count at the window's start is the answer already
    params = {"rel": rel, **window_words(w)}
    return one_step("graph_metric_timeseries", args, "rows[0].value", params, key=(rel, w["t_a"], w["t_b"]))


#: the run lengths asked for, in hours
RUN_HOURS = (3, 6, 12)


@template(
    "T5.y.sliding_hours",
    kind="count",
    ops=("graph_metric_timeseries", "compute"),
    paraphrases=(
        "Between {t_a} and {t_b}, what is the largest number of edge events in any {n} consecutive whole "
        "hours (each stretch starting on the hour)?",
        "Sliding a {n}-hour window along [{t_a}, {t_b}) one hour at a time, each window starting on a full "
        "hour, how many edge events does the busiest window hold?",
        "Of all the {n}-hour stretches within {t_a} to {t_b} that start on a full hour, how many edge events "
        "fall in the busiest one?",
    ),
)
def sliding_hours(s: Sampler) -> Draft | None:
    n = s.choice(list(RUN_HOURS))
    w = s.window(s.choice([DAY, 3 * DAY]))  # starts at midnight: its hourly buckets start on full hours
    if (w["t_b"] - w["t_a"]) // HOUR > MAX_BUCKETS:
        return None
    hourly = {"metric": "edge_event_count", "window": w, "stride": HOUR, "limit": MAX_BUCKETS}
    counts = [r["value"] for r in payload(s, "graph_metric_timeseries", hourly)["rows"]]
    busiest = max(sum(counts[i : i + n]) for i in range(len(counts)))
    own_buckets = max(sum(counts[i : i + n]) for i in range(0, len(counts), n))
    if busiest < 2 or busiest == own_buckets:
        return None  # too quiet, or the window's own n-hour buckets already give the answer
    run = {"fn": "rolling", "input": ref("s1.rows"), "frame": [0, n - 1],
           "aggregates": [{"fn": "sum", "field": "value", "as": "events"}]}  # fmt: skip
    steps = [
        step("s1", "graph_metric_timeseries", {**hourly, "limit": 1}),
        step("s2", "compute", run, "s1"),
        step("s3", "compute", {"fn": "max", "input": ref("s2.rows[*].events")}, "s2"),
    ]
    return Draft({"n": n, **window_words(w)}, (), steps, "s3.value", key=(n, w["t_a"], w["t_b"]))


#: the reply bounds asked for, with their words
REPLY_WITHIN = [(MINUTE, "a minute"), (10 * MINUTE, "10 minutes"), (HOUR, "an hour")]


@template(
    "T5.z.every_reply",
    kind="count",
    ops=("next_event",),
    paraphrases=(
        "Among the messages sent between {t_a} and {t_b}, how many (message, reply) pairs are there in "
        "which the recipient wrote back to the sender at most {within} later (the reply also in that "
        "period)? Count every such reply, not only the first.",
        "How many times between {t_a} and {t_b} was a message answered within {within} by its recipient "
        "(a message back to its sender in the same period)? Each answer counts: a message answered twice "
        "counts twice.",
        "In [{t_a}, {t_b}), pair every message with every message its recipient sent back to its sender "
        "no more than {within} after it: how many pairs are there?",
    ),
)
def every_reply(s: Sampler) -> Draft | None:
    # a day (scaled to the data's density): the oracle that cross-checks the gold tests every pair
    w = s.window(DAY)
    within, words = s.choice(REPLY_WITHIN)
    first = {"a": {"window": w, "where": [NO_SELF_LOOPS]}, "match": REPLY, "within": within, "limit": 1}
    answered = payload(s, "next_event", first)["rows_total"]
    every = {**first, "all": True}
    pairs = payload(s, "next_event", every)["rows_total"]
    if pairs < 2 or pairs == answered:
        return None  # no message answered twice: counting first replies would give the answer
    params = {"within": words, **window_words(w)}
    return one_step("next_event", every, "rows_total", params, key=(within, w["t_a"], w["t_b"]))
