"""Fixtures for the model-client tests: scripted servers (a test double) on 127.0.0.1 and client configs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import collegemsg_head
from tgms.engine.api import Store, build_store
from tgms.models.client import ChatClient
from tgms.models.config import EndpointConfig
from tgms.models.testing.scripted_server import ScriptedServer, last_user_message
from tgms.models.testing.smoke_rule import smoke_reply


def echo(body: dict[str, Any]) -> str:
    """A rule that answers ``re: <last user message>`` so each prompt has its own, checkable reply."""
    return "re: " + last_user_message(body)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(echo) as s:
        yield s


@pytest.fixture
def second_server() -> Iterator[ScriptedServer]:
    with ScriptedServer(echo) as s:
        yield s


@pytest.fixture
def dead_url() -> str:
    """The URL of a server that was started and stopped: its port refuses connections."""
    s = ScriptedServer(echo).start()
    url = s.url
    s.stop()
    return url


def config(*urls: str, cache_dir: Path | None = None, **overrides: Any) -> EndpointConfig:
    """A config with short timeouts and backoff, so retry tests run in well under a second."""
    base: dict[str, Any] = {
        "base_urls": tuple(urls),
        "model": "scripted",
        "timeout_s": 5.0,
        "max_retries": 3,
        "backoff_base_s": 0.01,
        "backoff_cap_s": 0.05,
        "cache_dir": cache_dir,
    }
    return EndpointConfig(**{**base, **overrides})


#: the first events of CollegeMsg the planner and reporter tests run on, and their valid-time extent
HEAD_EVENTS = 3000
HEAD_T_A, HEAD_T_B = 1082040961000000, 1083198015000001


@pytest.fixture(scope="session")
def head_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A read-only store of the first :data:`HEAD_EVENTS` events of ``../shared/data/CollegeMsg.txt``."""
    root = tmp_path_factory.mktemp("head_store")
    build_store("collegemsg", root / "store", source=collegemsg_head(root, HEAD_EVENTS)).close()
    with Store.open(root / "store", read_only=True) as st:
        yield st


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You answer."}, {"role": "user", "content": text}]


Rule = Callable[[dict[str, Any]], str]


@pytest.fixture
def scripted_client() -> Iterator[Callable[..., tuple[ScriptedServer, ChatClient]]]:
    """``make(rule=smoke_reply, cache=None) -> (server, client)``: a scripted server answering by ``rule``
    and a client of it (with a response cache at ``cache``); all are stopped after the test."""
    opened: list[tuple[ScriptedServer, ChatClient]] = []

    def make(rule: Rule = smoke_reply, cache: Path | None = None) -> tuple[ScriptedServer, ChatClient]:
        server = ScriptedServer(rule).start()
        client = ChatClient(config(server.url, cache_dir=cache))
        opened.append((server, client))
        return server, client

    yield make
    for server, client in opened:
        client.close()
        server.stop()
