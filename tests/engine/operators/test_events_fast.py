"""list_events, aggregate_events: fast path == brute-force oracle on random bi-temporal stores (both
backends), with mixed-type properties, corrections, retractions, past as_of_tt, empty windows and ties."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.engine.operators.event_sampling import EVENT_OPS, event_store, sample_event_args
from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES
from tgms.engine.operators import event_groups
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.oracle import OracleStore

STORES = 4


@pytest.fixture(params=["default", "sorted_groups", "lexsorted"])
def kernel_path(request, monkeypatch):
    """Run the grouping kernels down each of their paths: dense bincount codes (what small stores
    take), sorted combined codes, and the lexicographic fallbacks for keys that overflow int64."""
    if request.param != "default":
        monkeypatch.setattr(event_groups, "_DENSE_MAX", 0)
    if request.param == "lexsorted":
        monkeypatch.setattr(event_groups, "_COMBINE_MAX", 0.0)
    return request.param


@pytest.mark.parametrize("op", EVENT_OPS)
def test_event_ops_match_oracle(tmp_path, backend, op, kernel_path):
    if kernel_path != "default" and op == "list_events":
        pytest.skip("list_events does not group")
    outcomes: Counter[str] = Counter()
    per_store = -(-N_CASES * 2 // STORES)
    for s in range(STORES):
        store, tts = event_store(tmp_path / f"s{s}", backend, seed=300 + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            uids = [f"u{i}" for i in range(8)]
            rng = random.Random(s)
            for _ in range(per_store):
                outcomes[compare(ctx, oracle, op, sample_event_args(op, rng, uids, tts))] += 1
        finally:
            store.close()
    assert sum(outcomes.values()) >= N_CASES
    assert outcomes["ok"] >= N_CASES, outcomes  # most cases exercise real payloads, not errors
