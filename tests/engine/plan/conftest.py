"""A small store for the plan verifier's data checks (extent, events, uids, cost).

Five nodes ``a`` .. ``e`` (named "Node A" ...) and nine instantaneous ``msg`` events: a burst of six
among a, b, c in [1000, 1051), then nothing until three events in [1900, 2000). So the valid-time extent
is [1000, 2000) (vt_max 1999) and the window [1100, 1800) holds no events.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import FakeClock
from tgms.engine.operators.context import OpContext
from tgms.engine.store import Store

UIDS = ("a", "b", "c", "d", "e")
EVENTS = (
    ("a", "b", 1000),
    ("b", "c", 1010),
    ("c", "a", 1020),
    ("a", "b", 1030),
    ("b", "a", 1040),
    ("a", "b", 1050),
    ("d", "e", 1900),
    ("e", "d", 1950),
    ("a", "c", 1999),
)
EXTENT = {"vt_min": 1000, "vt_max": 1999, "valid_until": 2000}


@pytest.fixture(scope="session")
def plan_ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpContext]:
    store = Store.create(tmp_path_factory.mktemp("plan") / "store", "duckdb", now=FakeClock())
    store.write(
        [{"op": "assert_node", "uid": u, "vt_s": 1000, "props": {"name": f"Node {u.upper()}"}} for u in UIDS]
    )
    store.write(
        [
            {"op": "assert_edge", "src": s, "dst": d, "rel_type": "msg", "vt_s": t, "vt_e": t + 1}
            for s, d, t in EVENTS
        ]
    )
    yield OpContext(store)
    store.close()
