"""McNemar's exact test beside each paired bootstrap CI (as lm-eval's ``significance.py`` reports a p-value
next to each paired comparison).

Two systems scored right/wrong on the same tasks differ only on the *discordant* tasks: ``only_a`` (a right,
b wrong) and ``only_b``. Under the null hypothesis that neither is better, each discordant task is a fair
coin, so ``only_a`` is Binomial(only_a + only_b, 1/2); the exact two-sided p-value is twice the smaller
tail, capped at 1. Exact (no continuity correction, no normal approximation): campaigns here compare 5 to
a few hundred tasks, where the chi-squared approximation is poor. Scores other than 0 and 1 (a partial
credit) are not right/wrong outcomes and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb
from typing import Any


def mcnemar_exact(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """``{only_a, only_b, discordant, mcnemar_p}`` for two systems' 0/1 scores on the same tasks in the
    same order; ``ValueError`` for unequal lengths or a score that is not 0 or 1."""
    if len(a) != len(b):
        raise ValueError(f"McNemar needs the same tasks for both systems: {len(a)} vs {len(b)} scores")
    for x in (*a, *b):
        if x not in (0, 1):
            raise ValueError(f"McNemar takes right/wrong scores (0 or 1), got {x!r}")
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x == 1 and y == 0)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if x == 0 and y == 1)
    n = only_a + only_b
    if n == 0:
        p = 1.0
    else:
        tail = sum(comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n
        p = min(1.0, 2 * tail)
    return {"only_a": only_a, "only_b": only_b, "discordant": n, "mcnemar_p": p}
