"""entity_history, snapshot_subgraph, diff_snapshots: fast path == brute-force oracle on random stores."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, random_store, sample_args
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.oracle import OracleStore

OPS = ("entity_history", "snapshot_subgraph", "diff_snapshots")
STORES = 5


@pytest.mark.parametrize("op", OPS)
def test_history_ops_match_oracle(tmp_path, backend, op):
    outcomes: Counter[str] = Counter()
    per_store = -(-N_CASES // STORES)
    for s in range(STORES):
        store, tts = random_store(tmp_path / f"s{s}", backend, seed=100 + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            uids = [f"u{i}" for i in range(8)]
            rng = random.Random(s)
            for _ in range(per_store):
                outcomes[compare(ctx, oracle, op, sample_args(op, rng, uids, tts))] += 1
        finally:
            store.close()
    assert sum(outcomes.values()) >= N_CASES
    assert outcomes["ok"] >= N_CASES // 2, outcomes  # most cases exercise real payloads, not errors
