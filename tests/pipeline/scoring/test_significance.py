"""McNemar's exact test (pipeline/scoring/significance.py) against values computed by hand and against a
brute-force enumeration of every outcome as extreme as the one seen."""

from __future__ import annotations

import itertools

import pytest

from tgms.pipeline.scoring.significance import mcnemar_exact


def _brute(only_a: int, only_b: int) -> float:
    """Two-sided exact p by enumerating the 2**n sign patterns of the discordant tasks."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    seen = min(only_a, only_b)
    extreme = sum(
        1 for signs in itertools.product((0, 1), repeat=n) if min(sum(signs), n - sum(signs)) <= seen
    )
    return min(1.0, extreme / 2**n)


@pytest.mark.parametrize(
    ("only_a", "only_b"), [(0, 0), (1, 0), (5, 0), (20, 1), (3, 3), (7, 2), (0, 9), (4, 10)]
)
def test_the_exact_p_matches_a_brute_force_count(only_a: int, only_b: int) -> None:
    a = [1] * only_a + [0] * only_b + [1, 0, 1]  # concordant tasks at the end do not matter
    b = [0] * only_a + [1] * only_b + [1, 0, 1]
    got = mcnemar_exact(a, b)
    assert (got["only_a"], got["only_b"], got["discordant"]) == (only_a, only_b, only_a + only_b)
    assert got["mcnemar_p"] == pytest.approx(_brute(only_a, only_b), abs=1e-12)


def test_known_values_and_refusals() -> None:
    # 20 vs 1 discordant (the 1.5B tgms vs vector-RAG run): 2 * (1 + 21) / 2**21
    assert mcnemar_exact([1] * 20 + [0], [0] * 20 + [1])["mcnemar_p"] == pytest.approx(44 / 2**21)
    with pytest.raises(ValueError, match="same tasks"):
        mcnemar_exact([1, 0], [1])
    with pytest.raises(ValueError, match="right/wrong"):
        mcnemar_exact([0.5], [1])
