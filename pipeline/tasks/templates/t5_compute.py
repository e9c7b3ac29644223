"""T5 over the richer ``compute`` of issue 27: a yes/no answer from a comparison step (``compare``), a tuple
answer (``record``), and a quantile over a list derived per row (``join``, ``derive`` with ``abs``).

Each question is about one account's correspondence in a window. A draw is kept only when its answer
needs the whole plan: the yes/no pair wrote in both directions with different counts (so no tie rule is
asked about), the tuple's account both sent and received, and the quantile runs over at least three
two-way correspondents.

The names sort after every older T5 template: the generator seeds a template's draws by its position in
the sorted registry, so appending keeps every existing task's draw (and id) as it was.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tgms.engine.api import call
from tgms.pipeline.tasks.model import Draft, ref, step, template
from tgms.pipeline.tasks.sampler import MONTH, WEEK, Sampler, window_words
from tgms.pipeline.tasks.templates.t5 import NO_SELF_LOOPS

MAX_ROWS = 10_000  # a join or quantile over a cut page would be refused: ask for every group at once
#: the nearest-rank quantiles asked for, with their words
QUANTILES = [(0.5, "50th"), (0.75, "75th"), (0.9, "90th")]


def _rows_total(s: Sampler, op: str, args: dict[str, Any]) -> int:
    return int(call(s.ctx, op, {**args, "limit": 1}, check_cost=False)["payload"]["rows_total"])


@template(
    "T5.wrote_more",
    kind="boolean",
    ops=("list_events", "compute"),
    paraphrases=(
        "Between {t_a} and {t_b}, did {u} send more messages to {v} than {v} sent to {u}? Answer yes or no.",
        "In the window [{t_a}, {t_b}), is the number of messages from {u} to {v} greater than the number "
        "from {v} to {u}?",
        "Over the period from {t_a} to {t_b}, did {u} write to {v} more often than {v} wrote back? (true "
        "or false)",
    ),
)
def wrote_more(s: Sampler) -> Draft | None:
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    e = s.ctx.edges(None)
    lo, hi = (int(i) for i in np.searchsorted(e.vt_s, [w["t_a"], w["t_b"]], "left"))
    if hi <= lo:
        return None
    i = int(s.rng.integers(lo, hi))  # a pair that wrote in the window, asked in a random direction
    u, v = s.uid(e.src[i]), s.uid(e.dst[i])
    if u == v:
        return None
    if s.rng.integers(0, 2):
        u, v = v, u
    fwd = {"window": w, "src": [u], "dst": [v], "limit": 1}
    back = {"window": w, "src": [v], "dst": [u], "limit": 1}
    n_fwd, n_back = _rows_total(s, "list_events", fwd), _rows_total(s, "list_events", back)
    if n_fwd == 0 or n_back == 0 or n_fwd == n_back:
        return None  # one-way or tied: the answer would not need both counts, or would rest on the tie
    cmp = {"fn": "compare", "a": ref("s1.rows_total"), "b": ref("s2.rows_total"), "cmp": ">"}
    steps = [
        step("s1", "list_events", fwd),
        step("s2", "list_events", back),
        step("s3", "compute", cmp, "s1", "s2"),
    ]
    params = {"u": u, "v": v, **window_words(w)}
    return Draft(params, (u, v), steps, "s3.value", key=(u, v, w["t_a"], w["t_b"]))


@template(
    "T5.workload",
    kind="rows",
    ops=("aggregate_events", "compute"),
    paraphrases=(
        "For {u} between {t_a} and {t_b}, give three numbers: messages sent (sent), messages received "
        "(received), and distinct other accounts it exchanged messages with (partners).",
        "Summarise {u}'s activity in [{t_a}, {t_b}) as one record with the fields sent (messages it sent), "
        "received (messages it received) and partners (how many different other accounts it wrote to or "
        "heard from).",
        "Over the period from {t_a} to {t_b}, how many messages did {u} send, how many did it receive, and "
        "with how many distinct other accounts did it correspond? Answer as a record {{sent, received, "
        "partners}}.",
    ),
)
def workload(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    sent = {"window": w, "src": [u]}
    got = {"window": w, "dst": [u]}
    if _rows_total(s, "list_events", sent) == 0 or _rows_total(s, "list_events", got) == 0:
        return None  # a tuple of one non-zero part is a count question in disguise
    partners = {
        "window": w,
        "node": [u],
        "where": [NO_SELF_LOOPS],
        "aggregates": [{"fn": "count_distinct", "field": "unordered_pair", "as": "partners"}],
    }
    fields = {
        "sent": ref("s1.rows[0].count"),
        "received": ref("s2.rows[0].count"),
        "partners": ref("s3.rows[0].partners"),
    }
    steps = [
        step("s1", "aggregate_events", sent),
        step("s2", "aggregate_events", got),
        step("s3", "aggregate_events", partners),
        step("s4", "compute", {"fn": "record", "fields": fields}, "s1", "s2", "s3"),
    ]
    return Draft({"u": u, **window_words(w)}, (u,), steps, "s4.rows", key=(u, w["t_a"], w["t_b"]))


@template(
    "T5.writing_imbalance",
    kind="value",
    ops=("aggregate_events", "compute"),
    paraphrases=(
        "Between {t_a} and {t_b}, take every other account that {u} both wrote to and heard from, and for "
        "each the absolute difference between the messages {u} sent it and the messages it sent {u}. What "
        "is the {qw} percentile of these differences (nearest rank: the ⌈{q}·n⌉-th smallest of n)?",
        "For each two-way correspondent of {u} in [{t_a}, {t_b}) (messages in both directions), compute "
        "|sent by {u} − received by {u}|. Give the nearest-rank {qw} percentile of those values (the "
        "⌈{q}·n⌉-th smallest).",
        "How lopsided are {u}'s conversations from {t_a} to {t_b}? Over the accounts it exchanged messages "
        "with in both directions, report the {qw} percentile (nearest rank, ⌈{q}·n⌉-th of n ascending) of "
        "the absolute gap between messages sent and received per account.",
    ),
)
def writing_imbalance(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    q, qw = s.choice(QUANTILES)
    out = {"window": w, "src": [u], "where": [NO_SELF_LOOPS], "group_by": ["dst"], "limit": MAX_ROWS}
    into = {"window": w, "dst": [u], "where": [NO_SELF_LOOPS], "group_by": ["src"], "limit": MAX_ROWS}
    wrote = {r["dst"] for r in call(s.ctx, "aggregate_events", out, check_cost=False)["payload"]["rows"]}
    heard = {r["src"] for r in call(s.ctx, "aggregate_events", into, check_cost=False)["payload"]["rows"]}
    if len(wrote & heard) < 3:
        return None  # a quantile of one or two values is not a question about a distribution
    # the join pairs each account u wrote to with the same account as a sender to u: {dst, count, b_count}
    join = {"fn": "join", "a": ref("s1.rows"), "b": ref("s2.rows"), "on": [{"a": "dst", "b": "src"}]}
    gap = {"op": "abs", "arg": {"op": "sub", "left": "count", "right": "b_count"}}
    derive = {"fn": "derive", "input": ref("s3.rows"), "expr": gap, "as": "gap"}
    steps = [
        step("s1", "aggregate_events", out),
        step("s2", "aggregate_events", into),
        step("s3", "compute", {**join, "limit": MAX_ROWS}, "s1", "s2"),
        step("s4", "compute", {**derive, "limit": MAX_ROWS}, "s3"),
        step("s5", "compute", {"fn": "quantile", "input": ref("s4.rows[*].gap"), "q": q}, "s4"),
    ]
    params = {"u": u, "q": q, "qw": qw, **window_words(w)}
    return Draft(params, (u,), steps, "s5.value", key=(u, q, w["t_a"], w["t_b"]))
