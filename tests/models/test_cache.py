"""The response cache: a second identical run sends no request; the key covers model, messages, sampling
and response format; a corrupt entry is a miss and is rewritten."""

from __future__ import annotations

import json
from pathlib import Path

from tests.models.conftest import config, user
from tgms.models.cache import ResponseCache, request_key
from tgms.models.client import ChatClient
from tgms.models.testing.scripted_server import ScriptedServer

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


def _run(url: str, cache_dir: Path) -> list:
    with ChatClient(config(url, cache_dir=cache_dir)) as client:
        return [client.complete(user(f"q{i}"), schema=SCHEMA if i % 2 else None) for i in range(5)]


def test_a_second_identical_run_sends_zero_requests(server: ScriptedServer, tmp_path: Path) -> None:
    first = _run(server.url, tmp_path / "cache")
    assert server.log.chat_count == 5
    second = _run(server.url, tmp_path / "cache")
    assert server.log.chat_count == 5  # all five from the cache
    assert [c.text for c in second] == [c.text for c in first]
    assert all(c.cached and c.attempts == 0 for c in second)
    assert [c.request_hash for c in second] == [c.request_hash for c in first]
    assert [(c.prompt_tokens, c.completion_tokens, c.endpoint) for c in second] == [
        (c.prompt_tokens, c.completion_tokens, c.endpoint) for c in first
    ]


def test_the_key_covers_every_input() -> None:
    msgs = user("q")
    sampling = {"temperature": 0.0, "seed": 0, "max_tokens": 10}
    base = request_key("m", msgs, sampling, None)
    assert base == request_key("m", [dict(m) for m in msgs], dict(sampling), None)
    assert base != request_key("m2", msgs, sampling, None)
    assert base != request_key("m", user("q "), sampling, None)
    assert base != request_key("m", msgs, {**sampling, "seed": 1}, None)
    assert base != request_key("m", msgs, sampling, {"type": "json_object", "schema": SCHEMA})


def test_different_schema_or_max_tokens_is_a_miss(server: ScriptedServer, tmp_path: Path) -> None:
    with ChatClient(config(server.url, cache_dir=tmp_path)) as client:
        client.complete(user("q"))
        client.complete(user("q"), schema=SCHEMA)
        client.complete(user("q"), max_tokens=7)
        client.complete(user("q"), max_tokens=7)
    assert server.log.chat_count == 3


def test_a_corrupt_entry_is_ignored_and_rewritten(server: ScriptedServer, tmp_path: Path) -> None:
    with ChatClient(config(server.url, cache_dir=tmp_path)) as client:
        key = client.complete(user("q")).request_hash
        entry = tmp_path / key[:2] / f"{key}.json"
        entry.write_text('{"key": "' + key + '", "reply": {"te')  # torn write
        again = client.complete(user("q"))
        assert (again.cached, again.text) == (False, "re: q")
        assert server.log.chat_count == 2
        assert json.loads(entry.read_text())["key"] == key  # rewritten whole
        assert client.complete(user("q")).cached
    assert server.log.chat_count == 2
    assert not list(tmp_path.rglob("*.tmp"))  # no temporary files left behind


def test_an_entry_under_the_wrong_name_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("ab" * 32, {"text": "x"})
    (tmp_path / "cd").mkdir()
    (tmp_path / "ab" / ("ab" * 32 + ".json")).rename(tmp_path / "cd" / ("cd" * 32 + ".json"))
    assert cache.get("cd" * 32) is None


def test_an_entry_missing_fields_is_a_miss(server: ScriptedServer, tmp_path: Path) -> None:
    with ChatClient(config(server.url, cache_dir=tmp_path)) as client:
        key = client.complete(user("q")).request_hash
        ResponseCache(tmp_path).put(key, {"text": "stale"})  # parses, but is not a whole completion
        again = client.complete(user("q"))
        assert client.complete(user("q")).cached  # rewritten whole
    assert (again.cached, again.text) == (False, "re: q")
    assert server.log.chat_count == 2
