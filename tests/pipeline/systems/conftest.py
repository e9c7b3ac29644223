"""Shared by the systems' tests: a small CollegeMsg store and its suite, built once per session.

The first :data:`EVENTS` events of ``../shared/data/CollegeMsg.txt`` (real data, so the suite's templates,
probes and gold are the real ones), the suite generated from it with seed 0 (probes written into the
store, so the latest state the baselines read includes corrected versions; the brute-force cross-check is
skipped to keep the build to a few seconds — the suite tests run it). The store is read-only for the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import collegemsg_head
from tests.models.conftest import config
from tgms.engine.api import build_store
from tgms.models.client import ChatClient
from tgms.models.config import GenerationConfig
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.pipeline.scoring.suite import Suite, Task
from tgms.pipeline.systems.base import RunSettings, SystemEnv, build_system
from tgms.pipeline.tasks.build import build_suite

Rule = Callable[[dict[str, Any]], Any]

EVENTS = 12_000


@dataclass(frozen=True)
class SmallSuite:
    store_dir: Path
    suite: Suite

    @property
    def dev(self) -> list[Task]:
        return list(self.suite.splits.dev)

    def __iter__(self) -> Iterator[Any]:  # ``store_dir, suite = cm_small``
        return iter((self.store_dir, self.suite))


@pytest.fixture(scope="session")
def cm_small(tmp_path_factory: pytest.TempPathFactory) -> SmallSuite:
    """The small CollegeMsg store and its suite."""
    root = tmp_path_factory.mktemp("cm_small")
    head = collegemsg_head(root, EVENTS)
    store_dir = root / "store"
    build_store("collegemsg", store_dir, source=head).close()
    return SmallSuite(store_dir, build_suite(store_dir, "collegemsg", 0, crosscheck=False))


@pytest.fixture(scope="module")
def dev(cm_small: SmallSuite) -> list[Task]:
    return list(cm_small.suite.splits.dev)


@pytest.fixture
def make_system(cm_small: SmallSuite, tmp_path: Path) -> Iterator[Callable[..., tuple[Any, ScriptedServer]]]:
    """``make(rule, **tgms_config) -> (system, server)``: the tgms system over a scripted server."""
    opened: list[tuple[ScriptedServer, ChatClient, SystemEnv]] = []

    def make(rule: Rule, train: list[Task] | None = None, **cfg: Any) -> tuple[Any, ScriptedServer]:
        server = ScriptedServer(rule).start()
        client = ChatClient(config(server.url))
        env = SystemEnv(
            cm_small.store_dir,
            client,
            RunSettings(generation=GenerationConfig(model="scripted")),
            tmp_path / f"work{len(opened)}",
            dataset="collegemsg",
            train=train,
        )
        opened.append((server, client, env))
        return build_system("tgms", env, cfg), server

    yield make
    for server, client, env in opened:
        env.close()
        client.close()
        server.stop()
