"""A module-scoped DuckDB store with the shared history, for tests that only read it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tgms.engine.operators.context import OpContext
from tgms.engine.store import Store

from ._support import history_store


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    store = history_store(tmp_path_factory.mktemp("history") / "store", "duckdb")
    yield store
    store.close()


@pytest.fixture
def ctx(history: Store) -> OpContext:
    return OpContext(history)
