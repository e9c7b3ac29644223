"""A module-scoped DuckDB store with the claims history (tests only read it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tgms.engine.execute.executor import Trace
from tgms.engine.operators.context import OpContext
from tgms.engine.store import Store

from ._support import base_plan, build_store, run


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    s = build_store(tmp_path_factory.mktemp("claims") / "store")
    yield s
    s.close()


@pytest.fixture
def ctx(store: Store) -> OpContext:
    return OpContext(store)


@pytest.fixture(scope="module")
def base(store: Store) -> Trace:
    """:func:`base_plan` run on the store (statuses pinned by ``test_base_trace_outcomes``)."""
    return run(OpContext(store), base_plan())
