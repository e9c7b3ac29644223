"""T3: evolution questions (three templates); T4: multi-step questions (four templates)."""

from __future__ import annotations

from typing import Any

from tgms.pipeline.tasks.model import Draft, one_step, ref, step, template
from tgms.pipeline.tasks.sampler import DAY, MONTH, WEEK, Sampler, fmt_time, window_words

FULL = 10_000  # page limit for lists a later step consumes (so no gold rests on a cut page)


@template(
    "T3.nodes_joined",
    kind="count",
    ops=("diff_snapshots",),
    paraphrases=(
        "How many nodes are present in the graph at {t2} that were not present at {t1}?",
        "Comparing the snapshots at {t1} and {t2}, how many nodes were added?",
        "Between {t1} and {t2}, how many new nodes joined the network?",
    ),
)
def nodes_joined(s: Sampler) -> Draft:
    t1 = s.time(margin=DAY)
    t2 = min(t1 + s.span(s.choice([DAY, WEEK, 2 * WEEK])), s.hi - 1)
    params = {"t1": fmt_time(t1), "t2": fmt_time(t2)}
    return one_step("diff_snapshots", {"t1": t1, "t2": t2}, "nodes_added_total", params, key=(t1, t2))


@template(
    "T3.contacts_gained",
    kind="count",
    ops=("neighborhood_evolution",),
    paraphrases=(
        "How many contacts did {u} have during [{t1}, {t2}) that it had never had before {t1}?",
        "Counting a contact as any node joined to {u} by an edge in either direction, how many new "
        "contacts did "
        "{u} gain between {t1} and {t2}?",
        "From {t1} to {t2}, how many neighbours of {u} were new (not seen before {t1})?",
    ),
)
def contacts_gained(s: Sampler) -> Draft:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    args = {"uid": u, "t1": w["t_a"], "t2": w["t_b"]}
    params = {"u": u, **window_words(w, "t1", "t2")}
    return one_step(
        "neighborhood_evolution", args, "neighbors_gained_total", params, (u,), key=(u, w["t_a"], w["t_b"])
    )


@template(
    "T3.reciprocity",
    kind="value",
    ops=("graph_metric_timeseries",),
    paraphrases=(
        "What share of the directed node pairs that interacted during [{t_a}, {t_b}) also interacted in the "
        "reverse direction in that period?",
        "Between {t_a} and {t_b}, what is the reciprocity of the interactions (the fraction of "
        "directed pairs "
        "whose reverse also occurs)?",
        "Give the reciprocity of the edge events in the window from {t_a} to {t_b}.",
    ),
)
def reciprocity(s: Sampler) -> Draft:
    w = s.window(s.choice([DAY, 3 * DAY, WEEK]))
    length = w["t_b"] - w["t_a"]
    args = {"metric": "reciprocity", "window": w, "stride": length}
    return one_step("graph_metric_timeseries", args, "rows[0].value", window_words(w), key=(w["t_a"], length))


@template(
    "T4.reach_difference",
    kind="value",
    ops=("temporal_reachability", "compute"),
    paraphrases=(
        "In the window [{t_a}, {t_b}), how many more nodes can {u} reach by time-respecting paths than {v} "
        "can? (Negative if fewer.)",
        "Between {t_a} and {t_b}, what is the number of nodes temporally reachable from {u} minus the number "
        "reachable from {v}?",
        "Compare the time-respecting reach of {u} and {v} over [{t_a}, {t_b}): give reach({u}) − reach({v}).",
    ),
)
def reach_difference(s: Sampler) -> Draft | None:
    u, v = s.busy_uid(), s.active_uid()
    if u == v:
        return None
    w = s.window(s.choice([3 * DAY, WEEK]))
    return _reach_pair(u, v, w, {"fn": "diff", "a": ref("s1.rows_total"), "b": ref("s2.rows_total")}, "value")


@template(
    "T4.common_reach",
    kind="count",
    ops=("temporal_reachability", "compute"),
    paraphrases=(
        "How many nodes can be reached by time-respecting paths from both {u} and {v} within [{t_a}, {t_b})?",
        "Within the window from {t_a} to {t_b}, how many nodes are temporally reachable from {u} and "
        "also from "
        "{v}?",
        "Count the nodes in the intersection of the time-respecting reach sets of {u} and {v} over [{t_a}, "
        "{t_b}).",
    ),
)
def common_reach(s: Sampler) -> Draft | None:
    u, v = s.busy_uid(), s.busy_uid()
    if u == v:
        return None
    w = s.window(s.choice([DAY, 3 * DAY, WEEK]))
    both = {"fn": "intersection", "a": ref("s1.rows[*].uid"), "b": ref("s2.rows[*].uid"), "limit": FULL}
    return _reach_pair(u, v, w, both, "rows_total", limit=FULL)


def _reach_pair(
    u: str, v: str, w: dict[str, int], combine: dict[str, Any], answer: str, **page: int
) -> Draft:
    """The reach of ``u`` (``s1``) and of ``v`` (``s2``) over ``w``, combined by the compute ``s3``."""
    steps = [
        step("s1", "temporal_reachability", {"src": u, "window": w, **page}),
        step("s2", "temporal_reachability", {"src": v, "window": w, **page}),
        step("s3", "compute", combine, "s1", "s2"),
    ]
    return Draft({"u": u, "v": v, **window_words(w)}, (u, v), steps, f"s3.{answer}", key=(u, v, w["t_a"]))


@template(
    "T4.busiest_day",
    kind="interval",
    ops=("graph_metric_timeseries", "compute"),
    paraphrases=(
        "Which day between {t_a} and {t_b} had the most edge events? Give the day as an interval "
        "[start, end) "
        "in µs.",
        "Bucketing [{t_a}, {t_b}) into days, which daily bucket has the highest event count? Answer with its "
        "half-open interval in microseconds.",
        "Find the busiest day (most edge events) in the window from {t_a} to {t_b}; give its [start, end).",
    ),
)
def busiest_day(s: Sampler) -> Draft:
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    steps = [
        step(
            "s1",
            "graph_metric_timeseries",
            {"metric": "edge_event_count", "window": w, "stride": DAY, "limit": FULL},
        ),
        step("s2", "compute", {"fn": "topk", "input": ref("s1.rows"), "field": "value", "k": 1}, "s1"),
    ]
    return Draft(window_words(w), (), steps, "s2.rows[0]", key=(w["t_a"], w["t_b"]))


@template(
    "T4.first_new_contacts",
    kind="entity_set",
    ops=("neighborhood_evolution", "compute"),
    paraphrases=(
        "Among the contacts {u} gained during [{t1}, {t2}) (never seen before {t1}), which were "
        "gained first, "
        "i.e. at the earliest first-contact time?",
        "Which of {u}'s new contacts between {t1} and {t2} appeared earliest in that period?",
        "List the node(s) whose first contact with {u} in [{t1}, {t2}) came earliest, among contacts new in "
        "that period.",
    ),
)
def first_new_contacts(s: Sampler) -> Draft:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    steps = [
        step("s1", "neighborhood_evolution", {"uid": u, "t1": w["t_a"], "t2": w["t_b"], "limit": FULL}),
        step(
            "s2", "compute", {"fn": "min", "input": ref("s1.neighbors_gained"), "field": "first_seen"}, "s1"
        ),
        step(
            "s3",
            "compute",
            {
                "fn": "filter",
                "input": ref("s1.neighbors_gained"),
                "field": "first_seen",
                "cmp": "==",
                "value": ref("s2.value"),
                "limit": FULL,
            },
            "s1",
            "s2",
        ),
    ]
    params = {"u": u, **window_words(w, "t1", "t2")}
    return Draft(params, (u,), steps, "s3.rows[*].uid", key=(u, w["t_a"], w["t_b"]))


@template(
    "T4.resolved_events",
    kind="count",
    ops=("resolve_entities", "entity_history"),
    paraphrases=(
        "The source data lists a node as {name}. How many edge events involve that node?",
        "Resolve the node given as {name} in the original data, then count the edge events it takes part in.",
        "How many interactions (as sender or receiver) does the node known as {name} in the source "
        "data have?",
    ),
)
def resolved_events(s: Sampler) -> Draft:
    u = s.busy_uid() if s.rng.random() < 0.5 else s.active_uid()
    # SNAP uids are n<id>: the question gives the bare id; other datasets give the identifier itself
    name = u[1:] if u[:1] == "n" and u[1:].isdigit() else u
    steps = [
        step("s1", "resolve_entities", {"query": name}),
        step("s2", "entity_history", {"uid": ref("s1.rows[0].uid"), "include_edges": True}, "s1"),
    ]
    return Draft({"name": name}, (), steps, "s2.edges_total", key=(u,))
