"""Paired bootstrap confidence intervals for the difference between two systems (DESIGN §4: 10,000
resamples for every pair of systems).

Two systems answer the same tasks, so their per-task scores are paired: resampling task indices with
replacement and taking the mean of the per-task differences keeps the pairing (the variation that is
the tasks' own, shared by both systems, cancels) and needs no normality assumption. The CI is the
percentile interval of the resampled mean differences.

Deterministic: the index draws come from ``numpy.random.default_rng(seed)`` in row chunks whose size
depends only on ``n``, so a (scores, resamples, seed) triple always gives the same result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 10_000
#: most index cells drawn at once (rows × n): bounds memory for large n (2**22 int64 = 32 MiB)
MAX_CELLS = 1 << 22


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Paired bootstrap of ``mean(a) - mean(b)`` for two systems' per-task scores over the same tasks
    in the same order.

    Returns ``mean_a``, ``mean_b``, ``diff`` (``mean_a - mean_b``), ``ci_low`` and ``ci_high`` (the
    ``alpha/2`` and ``1 - alpha/2`` percentiles of the resampled mean differences), ``se`` (their
    standard deviation), ``resamples``, ``seed``, ``alpha`` and ``n``. Raises ``ValueError`` for empty or
    unequal-length input, non-finite scores, ``resamples < 1`` or ``alpha`` outside (0, 1).
    """
    xa, xb = _scores(a, "a"), _scores(b, "b")
    if len(xa) != len(xb):
        raise ValueError(
            f"paired bootstrap needs the same tasks for both systems: a has {len(xa)} scores, b has {len(xb)}"
        )
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    means = resampled_means(xa - xb, resamples=resamples, seed=seed)
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    mean_a, mean_b = float(xa.mean()), float(xb.mean())
    return {
        "mean_a": mean_a,
        "mean_b": mean_b,
        "diff": mean_a - mean_b,
        "ci_low": float(low),
        "ci_high": float(high),
        "se": float(means.std()),
        "resamples": resamples,
        "seed": seed,
        "alpha": alpha,
        "n": len(xa),
    }


def resampled_means(values: np.ndarray, *, resamples: int, seed: int) -> np.ndarray:
    """The means of ``resamples`` resamples (task indices drawn with replacement) of a 1-D array,
    vectorized in chunks of at most :data:`MAX_CELLS` drawn indices."""
    n = len(values)
    if n == 0:
        raise ValueError("cannot resample an empty score vector")
    rng = np.random.default_rng(seed)
    rows = max(1, MAX_CELLS // n)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = values[idx].mean(axis=1)
    return out


def all_pairs(
    scores: Mapping[str, Sequence[float]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    alpha: float = 0.05,
) -> list[dict[str, Any]]:
    """:func:`paired_bootstrap` for every pair of systems ``a < b`` (names sorted), each result with its
    ``a`` and ``b`` names. Every pair uses the same seed, hence the same task resamples."""
    names = sorted(scores)
    return [
        {
            "a": x,
            "b": y,
            **paired_bootstrap(scores[x], scores[y], resamples=resamples, seed=seed, alpha=alpha),
        }
        for i, x in enumerate(names)
        for y in names[i + 1 :]
    ]


def _scores(x: Sequence[float], name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"scores {name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"scores {name} are empty: a paired bootstrap needs at least one task")
    if not np.isfinite(arr).all():
        raise ValueError(f"scores {name} contain NaN or infinite values")
    return arr
