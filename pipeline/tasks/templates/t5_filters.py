"""T5 over an aggregate's own ``where`` (SQL's ``FILTER``: the third question set's conditional counts):
per account, every message it sent and the ones sent at night, in one ``aggregate_events`` call, then the
share and its top.

A draw is kept only where the share decides it: at least three accounts qualify, some sent at night,
and the account with the largest share is not the one with the most night messages (so counting night
messages instead of their share gives a wrong answer); its share is the unique top, so the stated tie
rule is not needed to tell.

The name sorts after every older T5 template (``T5.zz.``), so the existing templates' draws keep their
seeds (the generator seeds a template by its position in the sorted registry).
"""

from __future__ import annotations

from fractions import Fraction

from tgms.pipeline.tasks.model import Draft, ref, step, template
from tgms.pipeline.tasks.sampler import DAY, WEEK, Sampler, window_words
from tgms.pipeline.tasks.templates.t5 import payload

MAX_ROWS = 10_000  # every sender of the window at once
#: night: UTC hours 0 to 5
NIGHT = [{"field": "hour", "op": "lt", "value": 6}]


@template(
    "T5.zz.night_share",
    kind="entity",
    ops=("aggregate_events", "compute"),
    paraphrases=(
        "Between {t_a} and {t_b}, among the accounts that sent at least {m} messages, which sent the "
        "largest share of its messages at night (UTC hours 0 to 5)?",
        "Of the accounts with {m} or more outgoing messages in [{t_a}, {t_b}), which had the highest "
        "fraction of them sent between 00:00 and 05:59 UTC?",
        "Which account, of those sending at least {m} messages from {t_a} to {t_b}, sent the greatest "
        "proportion of its messages in the night hours (before 06:00 UTC)?",
    ),
)
def night_share(s: Sampler) -> Draft | None:
    w = s.window(s.choice([3 * DAY, WEEK, 2 * WEEK]))
    m = s.choice([5, 10, 20])
    by_src = {
        "window": w,
        "group_by": ["src"],
        "aggregates": [{"fn": "count"}, {"fn": "count", "as": "night", "where": NIGHT}],
        "having": [{"field": "count", "op": "ge", "value": m}],
        "limit": MAX_ROWS,
    }
    rows = payload(s, "aggregate_events", by_src)["rows"]
    if len(rows) < 3 or len(rows) >= MAX_ROWS or not any(r["night"] for r in rows):
        return None
    shares = sorted(((Fraction(r["night"], r["count"]), r["src"]) for r in rows), reverse=True)
    most_night = max(rows, key=lambda r: r["night"])["src"]
    if shares[0][0] == shares[1][0] or shares[0][1] == most_night:
        return None  # a tie at the top, or the share and the raw count agree: the share would not matter
    share = {
        "fn": "derive",
        "input": ref("s1.rows"),
        "expr": {"op": "div", "left": "night", "right": "count"},
        "as": "share",
    }
    top = {"fn": "topk", "input": ref("s2.rows"), "field": "share", "k": 1}
    steps = [
        step("s1", "aggregate_events", by_src),
        step("s2", "compute", share, "s1"),
        step("s3", "compute", top, "s2"),
    ]
    params = {"m": m, **window_words(w)}
    return Draft(params, (), steps, "s3.rows[0].src", key=(m, w["t_a"], w["t_b"]))
