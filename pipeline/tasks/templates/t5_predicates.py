"""T5 over edge predicates in the graph operators (``where`` on temporal_reachability, motifs, paths and
longest paths, issue 27): a time-respecting question asked of only some of the messages.

The predicate is a calendar key of the message time, which every data set has (CollegeMsg's messages carry
no properties). A draw is kept only when the predicate changes the answer, so a plan that leaves it out
is wrong.
"""

from __future__ import annotations

from engine.api import call
from pipeline.tasks.model import Draft, one_step, template
from pipeline.tasks.sampler import DAY, WEEK, Sampler, window_words

#: ISO day of week: Monday 1 … Sunday 7
WEEKDAYS = [{"field": "dow", "op": "le", "value": 5}]


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
