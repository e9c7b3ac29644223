"""The change a round makes to the arrival sets, located in time (``arrival_sets._changed``), against sets of
integers: the rounds skip every arc outside the range it gives, so a range that missed a changed time
would go unnoticed by them until a path came out wrong."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tgms.engine.operators.arrival_sets import Pack, Spans, _changed


def _rows(sets: dict[int, set[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint maximal intervals per node, sorted by (node, lo)."""
    node: list[int] = []
    lo: list[int] = []
    hi: list[int] = []
    for u in sorted(sets):
        ts = sorted(sets[u])
        for i, t in enumerate(ts):
            if i == 0 or t != ts[i - 1] + 1:
                node.append(u)
                lo.append(t)
                hi.append(t)
            else:
                hi[-1] = t
    return tuple(np.array(c, np.int64) for c in (node, lo, hi))  # type: ignore[return-value]


def _random_set(rng: random.Random) -> set[int]:
    return {t for t in range(0, 40) if rng.random() < 0.6}


@pytest.mark.parametrize("pack", [(-1, 42), None], ids=["packed-keys", "rank-keys"])
def test_changed_nodes_and_ranges_hold_every_changed_time(pack: Pack) -> None:
    rng = random.Random(28)
    narrow = 0
    for _ in range(300):
        n = rng.randint(1, 6)
        old = {u: _random_set(rng) for u in range(n) if rng.random() < 0.8}
        flagged = [u for u in range(n) if rng.random() < 0.6]
        new = dict(old)
        for u in flagged:  # often a small edit (one time off an end), sometimes a new set
            cur = set(old.get(u, set()))
            if cur and rng.random() < 0.6:
                cur.discard(rng.choice([min(cur), max(cur)]))
            elif rng.random() < 0.5:
                cur = _random_set(rng)
            new[u] = cur
        sp = Spans(*_rows(old), pack)
        nodes = np.zeros(n, bool)
        nodes[flagged] = True
        fresh = _rows({u: new[u] for u in flagged})
        diff, first, last = _changed(sp, fresh, nodes, n)
        for u in range(n):
            moved = old.get(u, set()) ^ new.get(u, set())
            assert bool(diff[u]) == (u in flagged and bool(moved)), (u, old.get(u), new.get(u))
            if moved:
                assert first[u] <= min(moved) and max(moved) <= last[u], (u, old.get(u), new.get(u))
                narrow += int(last[u]) - int(first[u]) < 40  # python ints: "every time" spans int64
    assert narrow > 50  # the ranges are not all "every time"
