"""The T5 template over reachability from a list of sources (``pipeline/tasks/templates/t5_reach.py``):
every sender's strict reach from one ``temporal_reachability`` call, asked only where the reach (not the
number of messages) decides, and its gold confirmed by the brute-force oracles."""

from __future__ import annotations

from typing import Any

from tests.pipeline.tasks.test_t5 import _draws, _store
from tests.pipeline.tasks.test_t5_issue27 import _golds
from tgms.pipeline.tasks.model import all_templates
from tgms.pipeline.tasks.templates import t5_reach

# minutes after T0: u1 writes most (four messages, to z and y only); u2 starts a relay a -> b -> c; u3 one
# message to a after the relay passed it (reaches a, b? no: b heard from a before)
RELAY = [
    ("u1", "z", 0), ("u1", "z", 1), ("u1", "y", 2), ("u1", "z", 3),
    ("u2", "a", 4), ("a", "b", 5), ("b", "c", 6), ("c", "d", 7),
    ("u3", "a", 8),
]  # fmt: skip


def test_the_template_walks_from_every_sender_and_sorts_last() -> None:
    (mine,) = [t for t in all_templates() if t.name == "T5.zzz.widest_reach"]
    assert mine.family == "T5" and mine.kind == "entity"
    assert set(mine.ops) == {"aggregate_events", "temporal_reachability", "compute"}
    # the other templates' seeds do not move (T5.zzzz.: test_t5_spans.py, appended after)
    assert max(t.name for t in all_templates() if not t.name.startswith("T5.zzzz.")) == mine.name


def test_the_widest_reach_is_not_the_busiest_sender(make_store: Any) -> None:
    # reach: u1 2 (z, y), u2 4 (a, b, c, d), a 3, b 2, c 1, u3 1 (a; the relay left a before): u2, while u1
    # sent the most
    store = _store(make_store, RELAY)
    drafts = [d for d in _draws(store, t5_reach.widest_reach, 12) if d is not None]
    assert drafts
    walks = drafts[0].steps[1]
    assert walks["op"] == "temporal_reachability" and walks["args"]["src"] == {"$ref": "s1.rows[*].src"}
    assert walks["args"]["strict"] is True
    assert _golds(store, "T5.zzz.widest_reach", drafts) == ["u2"] * len(drafts)


def test_not_asked_when_the_busiest_sender_also_reaches_the_most(make_store: Any) -> None:
    busy = [*RELAY, ("u2", "e", 9), ("u2", "f", 10), ("u2", "g", 11)]  # u2 now sends the most too
    store = _store(make_store, busy, "busy")
    assert _draws(store, t5_reach.widest_reach, 12) == [None] * 12
