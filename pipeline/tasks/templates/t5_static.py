"""T5 over the static graph of a window (``connected_components``, ``hop_distance``): the questions an
analyst asks of the aggregated message graph, where time only chooses which messages count.

The distance question names a node the source reaches in the window (ignoring direction), preferring one
two or more hops away, so the answer is a distance, not "unreachable".
"""

from __future__ import annotations

from tgms.engine.api import call
from tgms.pipeline.tasks.model import Draft, one_step, template
from tgms.pipeline.tasks.sampler import DAY, MONTH, WEEK, Sampler, window_words
from tgms.pipeline.tasks.templates.t5 import sender_in


@template(
    "T5.largest_component",
    kind="count",
    ops=("connected_components",),
    paraphrases=(
        "Counting two accounts as connected when either messaged the other between {t_a} and {t_b}, how "
        "many accounts are in the largest connected group?",
        "In the message graph of [{t_a}, {t_b}) (direction ignored), how many accounts does the largest "
        "connected component hold?",
        "Join every pair of accounts that exchanged a message in the window from {t_a} to {t_b}, in either "
        "direction: how big is the biggest group of accounts linked this way?",
    ),
)
def largest_component(s: Sampler) -> Draft | None:
    w = s.window(s.choice([DAY, WEEK, MONTH]))
    args = {"window": w, "limit": 1}
    if call(s.ctx, "connected_components", args, check_cost=False)["payload"]["largest"] == 0:
        return None
    return one_step("connected_components", args, "largest", window_words(w), key=(w["t_a"], w["t_b"]))


@template(
    "T5.hop_distance",
    kind="count",
    ops=("hop_distance",),
    paraphrases=(
        "Ignoring the direction and the order of messages, how few messages separate {u} from {v} in the "
        "message graph of [{t_a}, {t_b})?",
        "Between {t_a} and {t_b}, treating every message as a link in both directions, what is the "
        "shortest number of hops from {u} to {v}?",
        "In the graph of who messaged whom from {t_a} to {t_b} (direction and timing ignored), how many "
        "links long is the shortest chain from {u} to {v}?",
    ),
)
def hop_distance(s: Sampler) -> Draft | None:
    w = s.window(s.choice([WEEK, MONTH]))
    u = sender_in(s, w)
    if u is None:
        return None
    reach = {"src": u, "window": w, "direction": "both", "limit": 10_000}
    rows = call(s.ctx, "hop_distance", reach, check_cost=False)["payload"]["rows"]
    far = [r for r in rows if r["hops"] >= 2] or rows
    if not far:
        return None
    v = far[int(s.rng.integers(0, len(far)))]["uid"]
    args = {"src": u, "dst": v, "window": w, "direction": "both", "limit": 1}
    params = {"u": u, "v": v, **window_words(w)}
    return one_step("hop_distance", args, "hops", params, (u, v), key=(u, v, w["t_a"], w["t_b"]))
