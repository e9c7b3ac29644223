"""The T5 template over an aggregate's own ``where`` (``pipeline/tasks/templates/t5_filters.py``): the
night share of each sender from one ``aggregate_events`` call, asked only where the share (not the count
of night messages) decides, and its gold confirmed by the brute-force oracles."""

from __future__ import annotations

from typing import Any

from tests.pipeline.tasks.test_t5 import T0, _draws, _edge
from tests.pipeline.tasks.test_t5_issue27 import _golds
from tgms.pipeline.tasks.model import all_templates
from tgms.pipeline.tasks.sampler import HOUR, MINUTE
from tgms.pipeline.tasks.templates import t5_filters

NIGHT = T0 - 8 * HOUR + 30 * MINUTE  # 00:30 UTC of T0's day


def _store(make_store: Any, plan: dict[str, tuple[int, int]], name: str = "s") -> Any:
    """Each sender's (night messages, day messages), to one recipient, one minute apart."""
    store = make_store(name)
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in [*plan, "z"]])
    edges = []
    for i, (u, (night, day)) in enumerate(plan.items()):
        edges += [_edge(u, "z", NIGHT + (i * 40 + k) * MINUTE) for k in range(night)]
        edges += [_edge(u, "z", T0 + (i * 40 + k) * MINUTE) for k in range(day)]
    store.write(edges)
    return store


def test_the_template_uses_the_aggregates_own_where_and_sorts_last() -> None:
    (mine,) = [t for t in all_templates() if t.name == "T5.zz.night_share"]
    assert mine.family == "T5" and mine.kind == "entity" and set(mine.ops) == {"aggregate_events", "compute"}
    # the other templates' seeds do not move (T5.zzz. came later still: test_t5_reach.py)
    assert max(t.name for t in all_templates() if not t.name.startswith(("T5.zzz.", "T5.zzzz."))) == mine.name


def test_night_share_is_the_largest_share_not_the_most_night_messages(make_store: Any) -> None:
    # u1: 4 of 10 at night (the most night messages), u2: 3 of 5 (the largest share), u3: 1 of 6, u4: 0 of 5
    store = _store(make_store, {"u1": (4, 6), "u2": (3, 2), "u3": (1, 5), "u4": (0, 5)})
    drafts = [d for d in _draws(store, t5_filters.night_share, 24) if d is not None]
    assert drafts and {d.params["m"] for d in drafts} == {5}  # at 10 or 20 messages fewer than 3 qualify
    assert drafts[0].steps[0]["args"]["aggregates"][1]["where"] == t5_filters.NIGHT
    assert _golds(store, "T5.zz.night_share", drafts) == ["u2"] * len(drafts)
    # the share and the count of night messages agree (u1 leads both): not asked
    same = _store(make_store, {"u1": (4, 1), "u2": (3, 2), "u3": (1, 5), "u4": (0, 5)}, "same")
    assert _draws(same, t5_filters.night_share, 12) == [None] * 12
    # a tie at the top share: not asked
    tie = _store(make_store, {"u1": (4, 6), "u2": (3, 2), "u3": (3, 2), "u4": (0, 5)}, "tie")
    assert _draws(tie, t5_filters.night_share, 12) == [None] * 12
