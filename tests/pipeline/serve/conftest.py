"""A small real CollegeMsg store for the MCP server tests (built once per module that asks for it)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra (the dev extra has it)")

from tests.conftest import collegemsg_head
from tgms.engine.api import build_store

#: the first events of CollegeMsg: enough for multi-hop reachability, small enough to build in a second
EVENTS = 3_000


def build_collegemsg(root: Path, events: int = EVENTS) -> Path:
    store_dir = root / f"cm{events}"
    build_store("collegemsg", store_dir, source=collegemsg_head(root, events)).close()
    return store_dir


@pytest.fixture(scope="module")
def cm_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A read-only-used CollegeMsg store (tests that write make their own)."""
    return build_collegemsg(tmp_path_factory.mktemp("mcp"))
