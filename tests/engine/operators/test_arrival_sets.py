"""The incremental arrival-set rounds of longest_temporal_path's wait limit against plain set arithmetic.

:func:`engine.operators.arrival_sets.arrival_rounds` re-checks only the arcs whose head's set changed, drops
dead arcs (compacting its arrays) and keeps a witness first hop; each of those could go wrong on its own.
Here every round's sets are compared, node by node and time by time, with the definition computed over
Python sets of integers (small windows, so every time can be listed)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tgms.engine.operators.arrival_sets import Arcs, Spans, arrival_rounds


def _as_sets(sp: Spans, n: int) -> list[set[int]]:
    out: list[set[int]] = [set() for _ in range(n)]
    for node, lo, hi in zip(sp.node.tolist(), sp.lo.tolist(), sp.hi.tolist(), strict=True):
        out[node] |= set(range(lo, hi + 1))
    return out


def _reference(
    arcs: list[tuple[int, int, int, int]], n: int, t_a: int, t_b: int, delta: int, top: int, rounds: int
) -> list[list[set[int]]]:
    """A_0 .. A_rounds by the definition: α ∈ A_r(u) iff some arc u→v [s, e) is taken at τ = max(α + 1, s)
    with τ < e, τ < t_b, τ − α <= δ and τ ∈ A_{r−1}(v); every set within [t_a, top]."""
    heads = {v for _, v, _, _ in arcs}
    sets = [[set(range(t_a, top + 1)) if u in heads else set() for u in range(n)]]
    for _ in range(rounds):
        prev = sets[-1]
        cur: list[set[int]] = [set() for _ in range(n)]
        for u, v, s, e in arcs:
            for alpha in range(t_a, top + 1):
                tau = max(alpha + 1, s)
                if tau < e and tau < t_b and tau - alpha <= delta and tau in prev[v]:
                    cur[u].add(alpha)
        sets.append(cur)
    return sets


def _case(rng: random.Random) -> tuple[list[tuple[int, int, int, int]], int, int, int, int]:
    n = rng.randint(2, 6)
    t_a, t_b = rng.randint(0, 5), rng.randint(25, 45)
    arcs = []
    for _ in range(rng.randint(1, 30)):
        s = rng.randint(0, 40)
        e = s + 1 if rng.random() < 0.6 else s + rng.randint(2, 15)  # messages and intervals
        arcs.append((rng.randrange(n), rng.randrange(n), s, e))
    return arcs, n, t_a, t_b, rng.choice([0, 1, 2, 3, 5, 40])


@pytest.mark.parametrize("packed", [True, False], ids=["packed-keys", "rank-keys"])
def test_every_round_equals_the_definition(packed: bool) -> None:
    rng = random.Random(27)
    seen = {"capped": 0, "ended": 0}
    for _ in range(300):
        arcs, n, t_a, t_b, delta = _case(rng)
        max_hops = rng.randint(1, 12)
        # the caller's arrays: by head, then start (the order the rounds are fastest in)
        arcs.sort(key=lambda a: (a[1], a[2]))
        u, v, s, e = (np.array(c, np.int64) for c in zip(*arcs, strict=True))
        valid = [i for i, a in enumerate(arcs) if max(t_a, a[2]) < min(a[3], t_b)]
        first = np.array(valid, np.int64)
        tau0 = np.maximum(t_a, s[first])
        top = t_b - 1
        pack = (t_a - 1, top - t_a + 2) if packed else None
        tail_order = (
            None
            if rng.random() < 0.5
            else np.array(sorted(range(len(arcs)), key=lambda i: (arcs[i][0], arcs[i][2])), np.int64)
        )
        spans, capped, able = arrival_rounds(
            Arcs(u, v, s, e), v[first], tau0, n, (t_a, t_b), delta, max_hops, top, pack, tail_order
        )
        want = _reference(arcs, n, t_a, t_b, delta, top, max_hops)
        for r, sp in enumerate(spans[1:], start=1):
            assert _as_sets(sp, n) == want[r], (r, arcs, t_a, t_b, delta)
        # the length: the largest r <= max_hops + 1 some first hop can start (tau0 ∈ A_{r−1}(v))
        starts = list(zip(v[first].tolist(), tau0.tolist(), strict=True))
        can = [r for r in range(1, max_hops + 2) if any(t in want[r - 1][hv] for hv, t in starts)]
        longest = max(can, default=0)
        assert (len(spans) - 1, capped) == (min(longest, max_hops), longest > max_hops)
        if len(spans) > 1:  # the first hops that can start the longest are among those returned
            last = want[len(spans) - 2]
            needed = {i for i, (hv, t) in enumerate(starts) if t in last[hv]}
            assert needed <= set(able.tolist())
        seen["capped" if capped else "ended"] += 1
    assert min(seen.values()) >= 10, seen  # capped runs and runs that end both happen
