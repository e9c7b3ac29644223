"""The paired bootstrap against closed-form cases, its determinism and its refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tgms.pipeline.scoring import bootstrap
from tgms.pipeline.scoring.bootstrap import all_pairs, paired_bootstrap, resampled_means

Z975 = 1.959963984540054  # the standard normal 0.975 quantile


def test_identical_systems() -> None:
    a = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    r = paired_bootstrap(a, list(a))
    assert r["diff"] == 0.0
    assert (r["ci_low"], r["ci_high"]) == (0.0, 0.0)
    assert r["se"] == 0.0
    assert r["mean_a"] == r["mean_b"] == pytest.approx(4 / 7)
    assert (r["n"], r["resamples"], r["seed"]) == (7, 10_000, 0)


@pytest.mark.parametrize("d", [0.25, -0.5, 1.0])
def test_constant_difference(d: float) -> None:
    rng = np.random.default_rng(7)
    b = rng.random(50)
    r = paired_bootstrap(list(b + d), list(b))
    assert r["diff"] == pytest.approx(d, abs=1e-12)
    assert r["ci_low"] == pytest.approx(d, abs=1e-12)
    assert r["ci_high"] == pytest.approx(d, abs=1e-12)


def test_zero_one_difference_matches_closed_form() -> None:
    """For a 0/1 difference vector with a fraction p of ones, the bootstrap mean has standard deviation
    sqrt(p(1-p)/n); the percentile CI is close to the normal approximation p ± z sd."""
    n, ones = 400, 120
    p = ones / n
    a = [1.0] * ones + [0.0] * (n - ones)
    r = paired_bootstrap(a, [0.0] * n)
    sd = math.sqrt(p * (1 - p) / n)
    assert r["diff"] == pytest.approx(p)
    assert r["se"] == pytest.approx(sd, rel=0.05)
    assert r["ci_low"] == pytest.approx(p - Z975 * sd, abs=0.15 * sd)
    assert r["ci_high"] == pytest.approx(p + Z975 * sd, abs=0.15 * sd)


def test_paired_win_loss_tie_matches_closed_form() -> None:
    """Per-task differences in {-1, 0, 1}: sd of the bootstrap mean is the population sd of d / sqrt(n)."""
    rng = np.random.default_rng(3)
    a = (rng.random(300) < 0.6).astype(float)
    b = (rng.random(300) < 0.4).astype(float)
    r = paired_bootstrap(list(a), list(b))
    d = a - b
    assert r["diff"] == pytest.approx(d.mean())
    assert r["se"] == pytest.approx(d.std() / math.sqrt(len(d)), rel=0.05)
    assert r["ci_low"] < r["diff"] < r["ci_high"]


def test_deterministic_for_a_seed() -> None:
    rng = np.random.default_rng(11)
    a, b = list(rng.random(60)), list(rng.random(60))
    assert paired_bootstrap(a, b, seed=5) == paired_bootstrap(a, b, seed=5)
    other = paired_bootstrap(a, b, seed=6)
    first = paired_bootstrap(a, b, seed=5)
    assert (other["ci_low"], other["ci_high"]) != (first["ci_low"], first["ci_high"])
    assert other["diff"] == first["diff"]  # the point estimate does not depend on the seed


def test_chunking_keeps_the_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing in small chunks gives the same resample stream as drawing at once."""
    values = np.arange(10, dtype=np.float64)
    whole = resampled_means(values, resamples=1_000, seed=2)
    monkeypatch.setattr(bootstrap, "MAX_CELLS", 37)  # 3 rows per chunk
    chunked = resampled_means(values, resamples=1_000, seed=2)
    assert np.array_equal(whole, chunked)


def test_alpha_and_resamples() -> None:
    a = [1.0, 0.0] * 20
    b = [0.0] * 40
    wide = paired_bootstrap(a, b, alpha=0.01, resamples=2_000)
    narrow = paired_bootstrap(a, b, alpha=0.5, resamples=2_000)
    assert wide["ci_low"] <= narrow["ci_low"] <= narrow["ci_high"] <= wide["ci_high"]
    assert wide["resamples"] == 2_000
    assert wide["alpha"] == 0.01


@pytest.mark.parametrize(
    ("a", "b", "kw", "match"),
    [
        ([1.0, 0.0], [1.0], {}, "same tasks"),
        ([], [], {}, "empty"),
        ([1.0], [], {}, "empty"),
        ([[1.0]], [[1.0]], {}, "one-dimensional"),
        ([float("nan")], [0.0], {}, "NaN"),
        ([1.0], [0.0], {"resamples": 0}, "resamples"),
        ([1.0], [0.0], {"alpha": 0.0}, "alpha"),
        ([1.0], [0.0], {"alpha": 1.5}, "alpha"),
    ],
)
def test_refusals(a: list, b: list, kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        paired_bootstrap(a, b, **kw)


def test_all_pairs() -> None:
    scores = {"tgms": [1.0, 1.0, 0.0, 1.0], "rag": [0.0, 1.0, 0.0, 0.0], "cypher": [0.0, 0.0, 1.0, 0.0]}
    pairs = all_pairs(scores, resamples=500, seed=1)
    assert [(p["a"], p["b"]) for p in pairs] == [("cypher", "rag"), ("cypher", "tgms"), ("rag", "tgms")]
    rag_tgms = pairs[2]
    assert rag_tgms["diff"] == pytest.approx(0.25 - 0.75)
    assert rag_tgms == {
        "a": "rag",
        "b": "tgms",
        **paired_bootstrap(scores["rag"], scores["tgms"], resamples=500, seed=1),
    }
    assert all_pairs({"only": [1.0]}) == []
    with pytest.raises(ValueError, match="same tasks"):
        all_pairs({"x": [1.0], "y": [1.0, 0.0]})
