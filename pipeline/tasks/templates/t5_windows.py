"""T5 over time measured from the events themselves (``aggregate_events``' ``max_session`` and
``count_within_first``, issue 27): how long an account's longest burst of conversation lasted, and who
wrote again soon after their own first message.

A session is a run of an account's messages (sent or received) with no gap longer than the stated one;
a draw is kept only when some session holds two messages (else the answer is 0 by definition). The
relative window starts at each sender's own first message in the asked period; a count of none is
dropped by the generator as empty.

The names sort after every older T5 template, so the existing templates' draws keep their seeds (the
generator seeds a template by its position in the sorted registry).
"""

from __future__ import annotations

from tgms.engine.api import call
from tgms.pipeline.tasks.model import Draft, one_step, template
from tgms.pipeline.tasks.sampler import DAY, HOUR, MINUTE, MONTH, WEEK, Sampler, fmt_duration, window_words


@template(
    "T5.working_session",
    kind="value",
    ops=("aggregate_events",),
    paraphrases=(
        "Group the messages {u} sent or received between {t_a} and {t_b} into sessions, a new session "
        "starting whenever more than {gap} pass without a message. How long (µs, last message minus "
        "first) was the longest session?",
        "Treating any silence longer than {gap} as the end of a conversation, what was the duration in "
        "µs of {u}'s longest conversation in [{t_a}, {t_b}) (messages in either direction)?",
        "In the period from {t_a} to {t_b}, split {u}'s messages (sent and received) wherever consecutive "
        "ones are more than {gap} apart: give the span, in microseconds, of the longest resulting run.",
    ),
)
def working_session(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([3 * DAY, WEEK, 2 * WEEK]))
    gap = s.choice([10 * MINUTE, 30 * MINUTE, HOUR])
    args = {"window": w, "node": [u], "aggregates": [{"fn": "max_session", "gap": gap}]}
    rows = call(s.ctx, "aggregate_events", args, check_cost=False)["payload"]["rows"]
    if not rows or not rows[0]["max_session"]:
        return None  # every message alone in its session: the answer is 0 whatever the data
    params = {"u": u, "gap": fmt_duration(gap), **window_words(w)}
    key = (u, gap, w["t_a"], w["t_b"])
    return one_step("aggregate_events", args, "rows[0].max_session", params, (u,), key=key)


@template(
    "T5.within_first",
    kind="count",
    ops=("aggregate_events",),
    paraphrases=(
        "Between {t_a} and {t_b}, how many accounts sent at least {k} more message(s) within {width} of "
        "their own first message in that period?",
        "For each account that sent messages in [{t_a}, {t_b}), count its further messages sent less than "
        "{width} after its first one in the window. How many accounts have {k} or more?",
        "How many senders followed up their first message of the period from {t_a} to {t_b} with at least "
        "{k} more within {width} (measured from that first message)?",
    ),
)
def within_first(s: Sampler) -> Draft:
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    width = s.choice([HOUR, DAY, 3 * DAY])
    k = s.choice([1, 3, 10])
    args = {
        "window": w,
        "group_by": ["src"],
        "aggregates": [{"fn": "count_within_first", "width": width, "as": "soon"}],
        "having": [{"field": "soon", "op": "ge", "value": k}],
        "limit": 1,
    }
    params = {"k": k, "width": fmt_duration(width), **window_words(w)}
    return one_step("aggregate_events", args, "rows_total", params, key=(k, width, w["t_a"], w["t_b"]))
