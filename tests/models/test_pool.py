"""EndpointPool through the client: a dead replica is skipped, every replica down is an InfraError, a
replica that recovers rejoins after its cool-down, and requests spread over live replicas."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.models.conftest import config, user
from tgms.models.client import ChatClient
from tgms.models.errors import InfraError, NoLiveReplicaError
from tgms.models.testing.scripted_server import ScriptedServer


def test_a_dead_replica_is_skipped_and_its_requests_complete_on_the_other(
    server: ScriptedServer, dead_url: str
) -> None:
    with ChatClient(config(dead_url, server.url)) as client:
        results = [client.complete(user(f"q{i}")) for i in range(6)]
        assert client.pool.live() == [server.url]
    assert [c.text for c in results] == [f"re: q{i}" for i in range(6)]
    assert {c.endpoint for c in results} == {server.url}
    assert sum(c.attempts for c in results) == 7  # one refused connection, then the dead one is down
    assert server.log.chat_count == 6


def test_all_replicas_down_raise_infra_error_in_the_one_shape(dead_url: str) -> None:
    other = ScriptedServer().start()
    other_url = other.url
    other.stop()
    with ChatClient(config(dead_url, other_url)) as client, pytest.raises(NoLiveReplicaError) as exc:
        client.complete(user("nobody home"))
    assert isinstance(exc.value, InfraError)
    shape = exc.value.to_dict()
    assert shape["error"] == "E_INFRA_NO_REPLICA"
    assert set(shape["details"]["replicas"]) == {dead_url, other_url}
    assert set(shape) == {"error", "message", "details"}


def test_a_down_replica_rejoins_after_its_cool_down_when_healthy(server: ScriptedServer) -> None:
    with ChatClient(config(server.url, health_cooldown_s=0.1)) as client:
        client.pool.mark_down(server.url, "test")
        with pytest.raises(NoLiveReplicaError):  # cool-down not over: not even probed
            client.complete(user("a"))
        server.healthy = False
        time.sleep(0.15)
        with pytest.raises(NoLiveReplicaError):  # probed, /health and /v1/models fail: stays down
            client.complete(user("a"))
        probes = [r["path"] for r in server.log.requests if r["method"] == "GET"]
        assert probes == ["/health", "/v1/models"]
        server.healthy = True
        time.sleep(0.15)
        assert client.complete(user("a")).text == "re: a"
    assert server.log.chat_count == 1


def test_requests_spread_over_live_replicas(server: ScriptedServer, second_server: ScriptedServer) -> None:
    server.delay_s = second_server.delay_s = 0.3
    with (
        ChatClient(config(server.url, second_server.url, concurrency=2)) as client,
        ThreadPoolExecutor(8) as ex,
    ):
        results = list(ex.map(lambda i: client.complete(user(f"q{i}")), range(8)))
    assert [c.text for c in results] == [f"re: q{i}" for i in range(8)]
    assert server.log.chat_count == second_server.log.chat_count == 4
    assert server.log.high_water == second_server.log.high_water == 2
