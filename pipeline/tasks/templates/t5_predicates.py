"""T5 over edge predicates in the graph operators (``where`` on temporal_reachability, motifs, paths and
longest paths, issue 27): a time-respecting question asked of only some of the messages (reachability
over weekday messages, ping-pongs of weekend messages).

The predicate is a calendar key of the message time, which every data set has (CollegeMsg's messages carry
no properties). A draw is kept only when the predicate changes the answer, so a plan that leaves it out
is wrong.
"""

from __future__ import annotations

from tgms.engine.api import call
from tgms.pipeline.tasks.model import Draft, one_step, template
from tgms.pipeline.tasks.sampler import DAY, HOUR, MINUTE, WEEK, Sampler, fmt_duration, window_words

#: ISO day of week: Monday 1 … Sunday 7
WEEKDAYS = [{"field": "dow", "op": "le", "value": 5}]
WEEKENDS = [{"field": "dow", "op": "ge", "value": 6}]


@template(
    "T5.weekday_reach",
    kind="count",
    ops=("temporal_reachability",),
    paraphrases=(
        "Counting only messages sent on weekdays (Monday to Friday, UTC), how many accounts can {u} reach "
        "by time-respecting chains of messages between {t_a} and {t_b}?",
        "If weekend messages (Saturday and Sunday, UTC) are ignored, how many nodes are reachable from {u} "
        "along time-respecting paths in the window [{t_a}, {t_b})?",
        "Starting at {u} at {t_a} and following only messages sent Monday to Friday (UTC), how many "
        "distinct accounts can be reached before {t_b}?",
    ),
)
def weekday_reach(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([3 * DAY, WEEK, 2 * WEEK]))
    args: dict[str, object] = {"src": u, "window": w, "where": WEEKDAYS}

    def reached(a: dict[str, object]) -> int:
        return int(
            call(s.ctx, "temporal_reachability", {**a, "limit": 1}, check_cost=False)["payload"]["rows_total"]
        )

    weekdays = reached(args)
    if weekdays == 0 or weekdays == reached({"src": u, "window": w}):
        return None  # the predicate must matter, and the answer must not be "none"
    params = {"u": u, **window_words(w)}
    return one_step("temporal_reachability", args, "rows_total", params, (u,), key=(u, w["t_a"], w["t_b"]))


@template(
    "T5.weekend_pingpong",
    kind="count",
    ops=("count_temporal_motifs",),
    paraphrases=(
        "Counting only messages sent on Saturdays and Sundays (UTC), how many ping-pong exchanges (u→v, "
        "v→u, u→v) completed within {delta} occur between {t_a} and {t_b}?",
        "Between {t_a} and {t_b}, how many back-and-forth exchanges u→v, v→u, u→v spanning at most {delta} "
        "consist entirely of weekend messages (Saturday or Sunday, UTC)?",
        "Ignoring every message sent Monday to Friday (UTC), count the δ-temporal ping-pongs (u→v, v→u, "
        "u→v) with δ = {delta} whose messages all fall in [{t_a}, {t_b}).",
    ),
)
def weekend_pingpong(s: Sampler) -> Draft | None:
    # delta and window as T1.motif_count's, small enough for the brute-force motif oracle to recount
    delta = s.span(s.choice([10 * MINUTE, HOUR]))
    w = s.window(s.choice([WEEK, 2 * WEEK]))
    args: dict[str, object] = {"motif": "M_2node_pingpong", "delta": delta, "window": w, "where": WEEKENDS}

    def count(a: dict[str, object]) -> int:
        return int(call(s.ctx, "count_temporal_motifs", a, check_cost=False)["payload"]["count"])

    weekend = count(args)
    if weekend == 0 or weekend == count({k: v for k, v in args.items() if k != "where"}):
        return None  # the predicate must matter, and the answer must not be "none"
    params = {"delta": fmt_duration(delta), **window_words(w)}
    return one_step("count_temporal_motifs", args, "count", params, key=(delta, w["t_a"], w["t_b"]))
