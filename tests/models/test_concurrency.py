"""Concurrent requests from a thread pool stay concurrent at the server, up to the per-endpoint limit."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.models.conftest import config, user
from tgms.models.client import ChatClient
from tgms.models.testing.scripted_server import ScriptedServer


@pytest.mark.parametrize(("n", "limit", "expected"), [(6, 8, 6), (6, 2, 2), (4, 1, 1)])
def test_in_flight_high_water_mark(server: ScriptedServer, n: int, limit: int, expected: int) -> None:
    server.delay_s = 0.4  # slow replies, so concurrent requests overlap at the server
    with ChatClient(config(server.url, concurrency=limit)) as client, ThreadPoolExecutor(n) as ex:
        results = list(ex.map(lambda i: client.complete(user(f"t{i}")), range(n)))
    assert [c.text for c in results] == [f"re: t{i}" for i in range(n)]
    assert server.log.chat_count == n
    assert server.log.high_water == expected
    # the handler leaves its in-flight count after the reply is written: the client may see the reply first
    deadline = time.monotonic() + 5
    while server.log.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.log.in_flight == 0
