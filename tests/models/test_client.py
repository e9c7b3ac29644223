"""ChatClient against the scripted server (a test double over real HTTP): replies, tokens and latency,
retries on 429/500/timeouts, infra failures in the one error shape, structured-output request bodies."""

from __future__ import annotations

import json

import pytest

from tests.models.conftest import config, user
from tgms.engine.api import InvalidArgError
from tgms.models.client import ChatClient
from tgms.models.config import EndpointConfig
from tgms.models.errors import (
    InfraError,
    ModelError,
    ResponseError,
    RetriesExhaustedError,
    model_error_from_dict,
)
from tgms.models.testing.scripted_server import ScriptedServer, prompt_hash


def test_reply_tokens_and_latency_are_recorded(server: ScriptedServer) -> None:
    server.slow_next(1, 0.2)
    with ChatClient(config(server.url)) as client:
        c = client.complete(user("how many edges"))
    assert c.text == "re: how many edges"
    assert c.finish_reason == "stop"
    assert (c.prompt_tokens, c.completion_tokens) == (2 + 3, 4)  # the double counts whitespace words
    assert c.latency_s >= 0.2
    assert (c.attempts, c.cached, c.endpoint) == (1, False, server.url)
    assert len(c.request_hash) == 64
    body = server.log.chat_bodies[0]
    assert (body["temperature"], body["seed"], body["max_tokens"], body["model"]) == (0.0, 0, 512, "scripted")
    assert "response_format" not in body


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/"])
def test_the_openai_sdk_base_url_spelling_reaches_the_same_endpoint(
    server: ScriptedServer, suffix: str
) -> None:
    # http://host:port/v1 (the OpenAI SDK's base_url) once went to /v1/v1/chat/completions: a 404
    with ChatClient(config(server.url + suffix)) as client:
        assert client.complete(user("how many edges")).text == "re: how many edges"
    assert EndpointConfig(base_urls=(server.url + suffix,), model="m").base_urls == (server.url,)


def test_a_rejected_request_names_the_url_it_went_to(server: ScriptedServer) -> None:
    with ChatClient(config(server.url + "/api")) as client, pytest.raises(ModelError) as err:
        client.complete(user("how many edges"))
    assert f"{server.url}/api/v1/chat/completions" in err.value.message and "HTTP 404" in err.value.message


def test_missing_usage_gives_none_tokens(server: ScriptedServer) -> None:
    server.usage = False
    with ChatClient(config(server.url)) as client:
        c = client.complete(user("x"))
    assert (c.prompt_tokens, c.completion_tokens) == (None, None)


def test_dict_rule_is_keyed_by_the_last_user_message_hash() -> None:
    with ScriptedServer({prompt_hash("q1"): "a1"}, default=None) as s, ChatClient(config(s.url)) as client:
        assert client.complete(user("q1")).text == "a1"
        with pytest.raises(ResponseError) as exc:  # no scripted reply: the double answers 404
            client.complete(user("q2"))
    assert exc.value.details["status"] == 404
    assert s.log.chat_count == 2  # a 4xx is the request's fault: not retried


def test_retries_survive_injected_429_and_500(server: ScriptedServer) -> None:
    server.fail_next(2, 429, retry_after=0.05)
    server.fail_next(1, 500)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)

    with ChatClient(config(server.url), sleep=sleep) as client:
        c = client.complete(user("retry me"))
    assert c.text == "re: retry me"
    assert c.attempts == 4
    assert server.log.chat_count == 4
    assert len(slept) == 3
    assert slept[0] >= 0.05 and slept[1] >= 0.05  # Retry-After honoured (backoff alone is <= 0.01, 0.02)
    assert slept[2] <= 0.05  # capped


def test_backoff_is_deterministic_per_request(server: ScriptedServer) -> None:
    runs: list[list[float]] = []
    for _ in range(2):
        server.fail_next(3, 500)
        slept: list[float] = []
        with ChatClient(
            config(server.url, backoff_base_s=0.001, backoff_cap_s=1.0), sleep=slept.append
        ) as client:
            client.complete(user("same"))
        runs.append(slept)
    assert runs[0] == runs[1]
    assert all(0.0005 * 2**i <= d <= 0.001 * 2**i for i, d in enumerate(runs[0]))


def test_a_hang_past_the_timeout_is_retried(server: ScriptedServer) -> None:
    server.hang_next(1, 5.0)
    with ChatClient(config(server.url, timeout_s=0.3)) as client:
        c = client.complete(user("slowpoke"))
    assert (c.text, c.attempts) == ("re: slowpoke", 2)


def test_retries_exhausted_raise_infra_error_in_the_one_shape(server: ScriptedServer) -> None:
    server.fail_next(10, 500)
    with ChatClient(config(server.url, max_retries=2)) as client, pytest.raises(RetriesExhaustedError) as exc:
        client.complete(user("doomed"))
    err = exc.value
    assert isinstance(err, InfraError) and isinstance(err, ModelError)
    assert server.log.chat_count == 3
    shape = json.loads(err.to_json())
    assert set(shape) == {"error", "message", "details"}
    assert shape["error"] == "E_INFRA_RETRIES"
    assert shape["details"]["codes"] == ["E_INFRA_SERVER"] * 3
    assert shape["details"]["last"]["details"]["status"] == 500
    assert (
        type(model_error_from_dict(shape)) is RetriesExhaustedError
    )  # a recorded failure replays as its class


def test_vllm_flavour_sends_the_json_schema_form(server: ScriptedServer) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    with ChatClient(config(server.url, flavour="vllm")) as client:
        client.complete(user("s"), schema=schema)
    rf = server.log.chat_bodies[0]["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["schema"] == schema
    assert "schema" not in rf


def test_llamacpp_flavour_sends_the_json_object_form(server: ScriptedServer) -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    with ChatClient(config(server.url, flavour="llamacpp")) as client:
        client.complete(user("s"), schema=schema, max_tokens=64)
    body = server.log.chat_bodies[0]
    assert body["response_format"] == {"type": "json_object", "schema": schema}
    assert body["max_tokens"] == 64


@pytest.mark.parametrize(
    "overrides",
    [{"base_urls": ()}, {"flavour": "tgi"}, {"concurrency": 0}, {"max_retries": -1}],
)
def test_bad_config_is_an_invalid_arg_error(overrides: dict) -> None:
    kwargs = {"base_urls": ("http://127.0.0.1:9",), "model": "m", **overrides}
    with pytest.raises(InvalidArgError) as exc:
        EndpointConfig(**kwargs)
    assert exc.value.to_dict()["error"] == "E_INVALID_ARG"
