"""T5 over per-entity event sequences (``next_event``, issue 27): how long an account takes to answer.

For each message another account sent to ``u`` in the window, the reply is ``u``'s next message back to
that sender (at any later time); the answer is the median delay over the answered messages. A draw is kept
only when at least two messages were answered, so the median is of a sequence, not one delay.
"""

from __future__ import annotations

from tgms.engine.api import call
from tgms.pipeline.tasks.model import Draft, one_step, template
from tgms.pipeline.tasks.sampler import MONTH, WEEK, Sampler, window_words
from tgms.pipeline.tasks.templates.t5 import NO_SELF_LOOPS

#: b answers a: b goes from a's recipient back to a's sender
REPLY = [{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}]


@template(
    "T5.reply_delay",
    kind="value",
    ops=("next_event",),
    paraphrases=(
        "For each message {u} received from another account between {t_a} and {t_b}, take the time until "
        "{u}'s next message back to that sender (at any later time). Over the messages that got such a "
        "reply, what is the median delay in microseconds?",
        "How long does {u} take to answer? Over the messages other accounts sent to {u} in [{t_a}, {t_b}) "
        "that {u} later answered with a message back to the sender, give the median time to the first "
        "answer, in µs.",
        "What is {u}'s median reply delay (µs): for every message {u} received from someone else between "
        "{t_a} and {t_b}, the gap until {u} next wrote to that person, counting only answered messages?",
    ),
)
def reply_delay(s: Sampler) -> Draft | None:
    u = s.busy_uid()
    w = s.window(s.choice([WEEK, 2 * WEEK, MONTH]))
    args = {
        "a": {"window": w, "dst": u, "where": [NO_SELF_LOOPS]},
        "b": {"src": u},
        "match": REPLY,
        "limit": 1,
    }
    if call(s.ctx, "next_event", args, check_cost=False)["payload"]["n_matched"] < 2:
        return None
    params = {"u": u, **window_words(w)}
    return one_step("next_event", args, "delay_median", params, (u,), key=(u, w["t_a"], w["t_b"]))
