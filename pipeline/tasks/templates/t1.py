"""T1: single-operator questions (ten templates, one per operator of the historical-state, traversal,
pattern and grounding families)."""

from __future__ import annotations

from tgms.pipeline.tasks.model import Draft, one_step, template
from tgms.pipeline.tasks.sampler import DAY, HOUR, MINUTE, WEEK, Sampler, fmt_duration, fmt_time, window_words

MAX_HOPS = 3  # the brute-force oracle enumerates simple paths: keep them short

MOTIFS = ("M_triangle_cyclic", "M_triangle_acyclic_1", "M_2node_pingpong", "M_star_out_3", "M_path_3")
MOTIF_WORDS = {
    "M_triangle_cyclic": "cyclic triangles (u→v, v→w, w→u)",
    "M_triangle_acyclic_1": "acyclic triangles (u→v, u→w, v→w)",
    "M_2node_pingpong": "ping-pong exchanges (u→v, v→u, u→v)",
    "M_star_out_3": "out-stars (u→a, u→b, u→c)",
    "M_path_3": "three-edge paths (u→v, v→w, w→x)",
}


@template(
    "T1.event_count",
    kind="count",
    ops=("entity_history",),
    paraphrases=(
        "How many edge events involve {u}, as sender or receiver, over the whole record?",
        "Count the believed edge versions that touch node {u} (either endpoint), across all time.",
        "In total, how many interactions is {u} an endpoint of?",
    ),
)
def event_count(s: Sampler) -> Draft:
    u = s.busy_uid() if s.rng.random() < 0.5 else s.active_uid()
    args = {"uid": u, "include_edges": True}
    return one_step("entity_history", args, "edges_total", {"u": u}, (u,), key=(u,))


@template(
    "T1.present_at",
    kind="entity_set",
    ops=("snapshot_subgraph",),
    paraphrases=(
        "Which of the nodes {nodes} were already present in the graph at {t}?",
        "At {t}, which of {nodes} existed as nodes of the network?",
        "Of the nodes {nodes}, list those present in the snapshot at {t}.",
    ),
)
def present_at(s: Sampler) -> Draft:
    t = s.time(margin=WEEK)
    seeds = s.some_uids(6)
    args = {"seeds": seeds, "t_valid": t, "hops": 0}
    params = {"nodes": ", ".join(seeds), "t": fmt_time(t)}
    return one_step("snapshot_subgraph", args, "nodes[*].uid", params, tuple(seeds), key=(tuple(seeds), t))


@template(
    "T1.reach_count",
    kind="count",
    ops=("temporal_reachability",),
    paraphrases=(
        "How many nodes can {u} reach by time-respecting paths between {t_a} and {t_b}?",
        "Starting at {u} at {t_a}, how many distinct nodes can be reached along time-respecting paths before "
        "{t_b}?",
        "Count the nodes reachable from {u} by a time-respecting walk in the window [{t_a}, {t_b}).",
    ),
)
def reach_count(s: Sampler) -> Draft:
    u = s.busy_uid()
    w = s.window(s.choice([DAY, 3 * DAY, WEEK]))
    params = {"u": u, **window_words(w)}
    args = {"src": u, "window": w}
    return one_step("temporal_reachability", args, "rows_total", params, (u,), key=(u, w["t_a"], w["t_b"]))


@template(
    "T1.path_arrival",
    kind="value",
    ops=("temporal_paths",),
    paraphrases=(
        "Leaving {u} at {t_a}, at what time (µs) does the earliest-arriving time-respecting path of "
        "at most {h} "
        "edges reach {v} before {t_b}?",
        "What is the earliest arrival time at {v} of a time-respecting path from {u} with at most {h} edges "
        "inside [{t_a}, {t_b})? Answer in microseconds.",
        "When, at the earliest, can a time-respecting path of at most {h} edges that starts at {u} at {t_a} "
        "arrive at {v} (before {t_b})? Give epoch microseconds.",
    ),
)
def path_arrival(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([6 * HOUR, DAY]))
    targets = s.reachable(u, w)
    if not targets:
        return None
    v = s.choice(targets)
    args = {"src": u, "dst": v, "window": w, "k": 1, "max_hops": MAX_HOPS}
    params = {"u": u, "v": v, "h": MAX_HOPS, **window_words(w)}
    return one_step("temporal_paths", args, "rows[0].arrival", params, (u, v), key=(u, v, w["t_a"]))


@template(
    "T1.motif_count",
    kind="count",
    ops=("count_temporal_motifs",),
    paraphrases=(
        "How many δ-temporal {motif_words} with δ = {delta} occur between {t_a} and {t_b}?",
        "Count the {motif_words} completed within {delta} whose events all start in [{t_a}, {t_b}).",
        "Between {t_a} and {t_b}, how many instances of the motif {motif_words} span at most {delta}?",
    ),
)
def motif_count(s: Sampler) -> Draft:
    return _motif_draft(s, "count_temporal_motifs", "count", list(MOTIFS), [6 * HOUR, DAY])


@template(
    "T1.first_motif",
    kind="value",
    ops=("find_temporal_motif_instances",),
    paraphrases=(
        "When (µs) does the first of the {motif_words} completed within {delta} and starting in [{t_a}, "
        "{t_b}) begin?",
        "Between {t_a} and {t_b}, at what time does the earliest instance of {motif_words} spanning at most "
        "{delta} start? Answer in microseconds.",
        "Give the start time, in epoch microseconds, of the first instance of {motif_words} within {delta} "
        "inside [{t_a}, {t_b}).",
    ),
)
def first_motif(s: Sampler) -> Draft:
    # ping-pongs need a pair to interact twice; rating data (bitcoin-otc) has one edge per pair, so the
    # cyclic triangle is drawn as well
    motifs = ["M_2node_pingpong", "M_triangle_cyclic"]
    return _motif_draft(
        s, "find_temporal_motif_instances", "rows[0].edges[0].t", motifs, [6 * HOUR, DAY, 3 * DAY], limit=1
    )


def _motif_draft(
    s: Sampler, op: str, answer: str, motifs: list[str], lengths: list[int], **extra: int
) -> Draft:
    """One motif of ``motifs`` within a δ of 10 minutes or an hour in a window of one of ``lengths``: δ and
    windows small enough that the brute-force oracle can recount the gold."""
    motif = s.choice(motifs)
    delta = s.span(s.choice([10 * MINUTE, HOUR]))
    w = s.window(s.choice(lengths))
    args = {"motif": motif, "delta": delta, "window": w, **extra}
    params = {"motif_words": MOTIF_WORDS[motif], "delta": fmt_duration(delta), **window_words(w)}
    return one_step(op, args, answer, params, key=(motif, delta, w["t_a"], w["t_b"]))


@template(
    "T1.day_events",
    kind="count",
    ops=("graph_metric_timeseries",),
    paraphrases=(
        "How many edge events start during the period from {t_a} to {t_b}?",
        "Count the events whose start time falls in [{t_a}, {t_b}).",
        "Between {t_a} and {t_b}, how many edge events occurred?",
    ),
)
def day_events(s: Sampler) -> Draft:
    w = s.window(DAY)
    args = {"metric": "edge_event_count", "window": w, "stride": w["t_b"] - w["t_a"]}
    return one_step("graph_metric_timeseries", args, "rows[0].value", window_words(w), key=(w["t_a"],))


@template(
    "T1.burst_days",
    kind="count",
    ops=("burst_detection",),
    paraphrases=(
        "Scoring each day against the previous 7 days (z-score ≥ {z}), how many days in [{t_a}, {t_b}) are "
        "bursts of edge events?",
        "How many daily buckets between {t_a} and {t_b} have an event count at least {z} standard deviations "
        "above their trailing 7-day mean?",
        "With daily buckets, a 7-day trailing window and a z-score threshold of {z}, count the burst days in "
        "[{t_a}, {t_b}).",
    ),
)
def burst_days(s: Sampler) -> Draft:
    w = s.window(s.choice([3 * WEEK, 4 * WEEK, 6 * WEEK, 8 * WEEK]))
    z = s.choice([1.5, 2, 2.5])
    args = {"target": "global", "window": w, "stride": DAY, "params": {"w": 7, "threshold": z}}
    params = {**window_words(w), "z": z}
    return one_step("burst_detection", args, "rows_total", params, key=(w["t_a"], w["t_b"], z))


@template(
    "T1.before_pairs",
    kind="count",
    ops=("co_active",),
    paraphrases=(
        "Between {t_a} and {t_b}, how many pairs (an event sent by {u}, an event sent by {v}) have "
        "{u}'s event "
        "entirely before {v}'s?",
        "Count the pairs of events in [{t_a}, {t_b}) where {u} sends the first, {v} sends the "
        "second, and the "
        "first ends before the second starts.",
        "How many (event from {u}, event from {v}) pairs inside [{t_a}, {t_b}) stand in the Allen relation "
        "'before'?",
    ),
)
def before_pairs(s: Sampler) -> Draft | None:
    u, v = s.busy_uid(), s.busy_uid()
    if u == v:
        return None
    w = s.window(WEEK)
    args = {"a_spec": {"src": u, "window": w}, "b_spec": {"src": v, "window": w}, "allen_relation": "before"}
    params = {"u": u, "v": v, **window_words(w)}
    return one_step("co_active", args, "rows_total", params, (u, v), key=(u, v, w["t_a"]))


@template(
    "T1.resolve_id",
    kind="entity",
    ops=("resolve_entities",),
    datasets=("collegemsg", "bitcoin-otc", "email-eu"),  # SNAP ids: uid n<id>
    paraphrases=(
        "Which node identifier does the source data's node number {digits} correspond to?",
        "Resolve the dataset's node id {digits} to its TGMS uid.",
        "What is the uid of the node listed as {digits} in the original data?",
    ),
)
def resolve_id(s: Sampler) -> Draft | None:
    u = s.active_uid()
    digits = u[1:]
    if not digits.isdigit():
        return None
    return one_step("resolve_entities", {"query": digits}, "rows[0].uid", {"digits": digits}, key=(digits,))
