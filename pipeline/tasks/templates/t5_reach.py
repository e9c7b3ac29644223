"""T5 over reachability from a list of sources (the fifth question set's ve09, "whose news could travel
furthest"): every sender of a short window, one strict walk from each in one ``temporal_reachability``
call (``src`` a list), the reached accounts counted per sender, the top one.

A draw is kept only where the reach decides it: 3 to 199 senders, every walk's rows within one page
of the counting step's read (≤ 10,000), a unique top, and the top is not the sender with the most messages
(so counting messages, or direct recipients, instead of reach gives a wrong answer).

The name sorts after every older T5 template (``T5.zzz.``), so the existing templates' draws keep their
seeds (the generator seeds a template by its position in the sorted registry).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tgms.pipeline.tasks.model import Draft, ref, step, template
from tgms.pipeline.tasks.sampler import DAY, HOUR, Sampler, window_words
from tgms.pipeline.tasks.templates.t5 import payload

#: the most senders a draw walks from (the list may hold 1,000; the oracles' walks, one a sender, are what
#: a suite build waits for)
MAX_SENDERS = 200
#: the most (sender, reached) rows a draw's walks may give
MAX_REACHED = 10_000


@template(
    "T5.zzz.widest_reach",
    kind="entity",
    ops=("aggregate_events", "temporal_reachability", "compute"),
    paraphrases=(
        "Between {t_a} and {t_b}, which account's messages could reach the most other accounts through "
        "chains of messages, each passed on strictly later than the one before?",
        "Counting, for every account that sent a message in [{t_a}, {t_b}), the accounts its news could "
        "reach by time-ordered chains of messages in that period (each hop strictly later), which account "
        "reaches the most?",
        "From {t_a} to {t_b}, whose messages could spread to the largest number of other accounts, "
        "following each message on only by a strictly later one from its recipient?",
    ),
)
def widest_reach(s: Sampler) -> Draft | None:
    w = s.window(s.choice([2 * HOUR, 6 * HOUR, 12 * HOUR, DAY]))
    # messages only: a relation that lasts (the synthetic data's follows) is not a message passed on
    lasting = s.lasting_types
    only_messages = [{"field": "rel_type", "op": "not_in", "value": lasting}] if lasting else []
    senders_args = {"window": w, "group_by": ["src"], "limit": MAX_SENDERS}
    if only_messages:
        senders_args["where"] = only_messages
    senders = payload(s, "aggregate_events", senders_args)["rows"]
    if len(senders) < 3 or len(senders) >= MAX_SENDERS:
        return None
    walks: dict[str, Any] = {"window": w, "strict": True}
    if only_messages:
        walks["where"] = only_messages
    got = payload(s, "temporal_reachability", {**walks, "src": [r["src"] for r in senders], "limit": 10_000})
    if got["rows_total"] > MAX_REACHED or got["rows_total"] != len(got["rows"]):
        return None
    reach = Counter(r["src"] for r in got["rows"]).most_common()
    busiest = max(senders, key=lambda r: (r["count"], r["src"]))["src"]
    if len(reach) < 2 or reach[0][1] == reach[1][1] or reach[0][0] == busiest:
        return None  # a tie at the top, or the busiest sender also reaches the most: reach would not matter
    per_sender = [{"fn": "count", "as": "reached"}]
    count = {"fn": "group", "input": ref("s2.rows"), "by": "src", "aggregates": per_sender}
    top = {"fn": "topk", "input": ref("s3.rows"), "field": "reached", "k": 1}
    steps = [
        step("s1", "aggregate_events", senders_args),
        step("s2", "temporal_reachability", {**walks, "src": ref("s1.rows[*].src"), "limit": 1}, "s1"),
        step("s3", "compute", count, "s2"),
        step("s4", "compute", top, "s3"),
    ]
    return Draft(window_words(w), (), steps, "s4.rows[0].src", key=(w["t_a"], w["t_b"]))
