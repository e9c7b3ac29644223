import numpy as np
import pytest

from tgms.engine.operators.sorting import stable_order


@pytest.mark.parametrize("bound", [1, 2, 300, 65_536, 65_537, 5_000_000, 2**33])
def test_stable_order_matches_a_stable_argsort(bound):
    rng = np.random.default_rng(bound % 1000)
    v = rng.integers(0, bound, 5_000)
    v[::7] = v[0]  # many ties: stability is observable
    assert np.array_equal(stable_order(v, bound), np.argsort(v, kind="stable"))


def test_stable_order_rejects_negative_values_and_handles_empty():
    assert stable_order(np.zeros(0, np.int64), 10).tolist() == []
    with pytest.raises(ValueError):
        stable_order(np.array([3, -1]), 10)
