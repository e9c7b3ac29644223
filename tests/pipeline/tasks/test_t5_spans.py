"""The T5 templates over spans from the window's start and an account's median pause
(``pipeline/tasks/templates/t5_spans.py``): each is asked only where its capability changes the answer,
and the gold equals a count or median worked out here from the events, confirmed by the brute-force
oracles (``_golds``)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from tests.pipeline.tasks.test_t5 import T0, _draws, _store
from tests.pipeline.tasks.test_t5_issue27 import _golds
from tgms.pipeline.tasks.model import all_templates
from tgms.pipeline.tasks.sampler import DAY, MINUTE
from tgms.pipeline.tasks.templates import t5_spans

NEW = {"T5.zzzz.active_spans", "T5.zzzz.typical_pause"}


def test_the_templates_sort_last_and_use_the_new_capabilities() -> None:
    mine = {t.name: t for t in all_templates() if t.name in NEW}
    assert set(mine) == NEW and {t.family for t in mine.values()} == {"T5"}
    assert max(t.name for t in all_templates() if t.name not in NEW) < min(NEW)  # older seeds stay
    assert {op for t in mine.values() for op in t.ops} == {"aggregate_events"}


def _times(edges: list[tuple[str, str, int]], u: str, w: dict[str, int]) -> list[int]:
    """The times of ``u``'s sent messages inside window ``w`` (``_store`` puts edge k at T0 + k minutes)."""
    return sorted(t for s, _, k in edges if s == u and w["t_a"] <= (t := T0 + k * MINUTE) < w["t_b"])


def test_active_spans_counts_spans_from_the_window_start(make_store: Any) -> None:
    # u writes every 7 hours for two weeks (and is the busiest); v answers now and then
    edges = [("u", "v", k * 7 * 60) for k in range(48)] + [("v", "u", k * 600 + 5) for k in range(6)]
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_spans.active_spans, 24) if d is not None]
    assert drafts
    want = []
    for d in drafts:
        args = d.steps[0]["args"]
        w, width = args["window"], args["bucket"]["width"]
        assert args["group_by"] == ["bucket"] and "origin" not in args["bucket"]  # from the window's start
        want.append(len({(t - w["t_a"]) // width for t in _times(edges, d.input_uids[0], w)}))
    assert _golds(store, "T5.zzzz.active_spans", drafts) == want
    assert {d.steps[0]["args"]["bucket"]["width"] for d in drafts} <= {DAY, 3 * DAY, 7 * DAY}


def test_typical_pause_is_the_median_gap_where_it_is_not_the_mean(make_store: Any) -> None:
    # u's gaps 1, 2, 7, 1, 30 minutes, then again: the median and mean differ in every window that holds
    # several of u's messages
    gaps = [1, 2, 7, 1, 30] * 6
    ks = [sum(gaps[:i]) for i in range(len(gaps) + 1)]
    edges = [("u", "v", k) for k in ks] + [("v", "u", 3)]
    store = _store(make_store, edges)
    drafts = [d for d in _draws(store, t5_spans.typical_pause, 12) if d is not None]
    assert drafts
    want = []
    for d in drafts:
        ts = _times(edges, "u", d.steps[0]["args"]["window"])
        between = sorted(b - a for a, b in pairwise(ts))
        half = len(between) // 2
        mid = between[half] if len(between) % 2 else (between[half - 1] + between[half]) / 2
        want.append(int(mid) if mid == int(mid) else mid)
    assert _golds(store, "T5.zzzz.typical_pause", drafts) == want
    one = _store(make_store, [("u", "v", 0), ("v", "u", 1)], "one")  # one message each: no gap to ask
    assert _draws(one, t5_spans.typical_pause, 4) == [None] * 4
