"""Shared fixture of the system tests: a small CollegeMsg store and its suite (built once per session).

The store holds the first :data:`PREFIX_LINES` events of ``../shared/data/CollegeMsg.txt`` (real data, so
the suite's templates, probes and gold are the real ones); building it and its suite takes a few seconds,
where the whole file takes ~40 s. The suite's probe corrections are written into the store, so the latest
state the baselines read includes corrected versions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine.api import build_store
from pipeline.tasks.build import build_suite
from tests.conftest import SHARED_DATA

PREFIX_LINES = 1500


@dataclass(frozen=True)
class SmallSuite:
    store_dir: Path
    suite: dict[str, Any]

    @property
    def dev(self) -> list[dict[str, Any]]:
        return self.suite["splits"]["dev"]


@pytest.fixture(scope="session")
def cm_small(tmp_path_factory: pytest.TempPathFactory) -> SmallSuite:
    source = SHARED_DATA / "CollegeMsg.txt"
    if not source.is_file():
        pytest.skip(f"shared data not found: {source}")
    base = tmp_path_factory.mktemp("cm_small")
    prefix = base / "CollegeMsg.prefix.txt"
    with source.open() as f:
        prefix.write_text("".join(line for _, line in zip(range(PREFIX_LINES), f, strict=False)))
    build_store("collegemsg", base / "store", source=prefix).close()
    suite = build_suite(base / "store", "collegemsg", 0)
    return SmallSuite(base / "store", suite)
