"""T5 over spans counted from the window's own start and over an account's typical pause
(``aggregate_events``' ``bucket`` key and ``median_gap``, the seventh analyst question set): in how many
of the spans of a given width, counted from the window's start, an account wrote, and the median time
between the consecutive messages it sent.

Each is asked only where what it asks changes the answer: the spans where counting them from the window's
start gives another number than the calendar's days or ISO weeks; the median where it is not the mean.

The names sort after every older T5 template (the generator seeds a template by its position in the sorted
registry), so older templates' draws keep their seeds.
"""

from __future__ import annotations

from tgms.pipeline.tasks.model import Draft, one_step, template
from tgms.pipeline.tasks.sampler import DAY, MONTH, WEEK, Sampler, fmt_duration, window_words
from tgms.pipeline.tasks.templates.t5 import payload

#: the calendar key whose groups a span of this width would be if spans were counted from the calendar
CALENDAR_OF = {DAY: "day", WEEK: "week"}


@template(
    "T5.zzzz.active_spans",
    kind="count",
    ops=("aggregate_events",),
    paraphrases=(
        "Cut the period from {t_a} to {t_b} into consecutive spans of {width}, the first starting at "
        "{t_a}. In how many of these spans did {u} send at least one message?",
        "Counting spans of {width} from {t_a} (not calendar periods), how many of the spans before {t_b} "
        "contain a message sent by {u}?",
        "Split [{t_a}, {t_b}) into {width} blocks starting at {t_a}: in how many blocks was {u} active as "
        "a sender?",
    ),
)
def active_spans(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([2 * WEEK, MONTH]), aligned=False)
    width = s.choice([DAY, 3 * DAY, WEEK])
    args = {"window": w, "src": [u], "group_by": ["bucket"], "bucket": {"width": width}, "limit": 1}
    n = payload(s, "aggregate_events", args)["rows_total"]
    if n == 0:
        return None
    cal = CALENDAR_OF.get(width)
    if cal is not None:
        calendar = {"window": w, "src": [u], "group_by": [cal], "limit": 1}
        if payload(s, "aggregate_events", calendar)["rows_total"] == n:
            return None  # calendar days or weeks give the same count: the spans' start would not matter
    params = {"u": u, "width": fmt_duration(width), **window_words(w)}
    return one_step("aggregate_events", args, "rows_total", params, (u,), key=(u, width, w["t_a"], w["t_b"]))


@template(
    "T5.zzzz.typical_pause",
    kind="value",
    ops=("aggregate_events",),
    paraphrases=(
        "Between {t_a} and {t_b}, what was the median time in µs between two consecutive messages sent "
        "by {u} (with an even number of gaps, the mean of the two middle ones)?",
        "Take the gaps between each message {u} sent in [{t_a}, {t_b}) and its next one: what is their "
        "median, in microseconds (two middle values averaged)?",
        "How long, in µs, did {u} typically wait between sending two messages from {t_a} to {t_b}: the "
        "median of the gaps between consecutive messages it sent?",
    ),
)
def typical_pause(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    both = {"window": w, "src": [u], "aggregates": [{"fn": "median_gap"}, {"fn": "mean_gap"}]}
    (row,) = payload(s, "aggregate_events", both)["rows"]
    if row["median_gap"] is None or row["median_gap"] == row["mean_gap"]:
        return None  # under two messages, or the median is the mean: it would not be asked for
    args = {"window": w, "src": [u], "aggregates": [{"fn": "median_gap"}]}
    params = {"u": u, **window_words(w)}
    return one_step("aggregate_events", args, "rows[0].median_gap", params, (u,), key=(u, w["t_a"], w["t_b"]))
