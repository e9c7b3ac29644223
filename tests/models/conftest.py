"""Fixtures for the model-client tests: scripted servers (a test double) on 127.0.0.1 and client configs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.config import EndpointConfig
from models.testing.scripted_server import ScriptedServer, last_user_message


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


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You answer."}, {"role": "user", "content": text}]
