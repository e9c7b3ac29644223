"""``models.config.ModelConfig``: the flat YAML keys land in the right part, unknown keys are refused, and
the client's ``EndpointConfig`` is made from it by one mapping."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from tgms.models.config import (
    EndpointConfig,
    GenerationConfig,
    ModelConfig,
    ServingConfig,
    endpoint_config,
    with_generation,
)

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"


def test_flat_keys_go_to_their_part() -> None:
    m = ModelConfig.model_validate(
        {"name": "qwen", "served_name": "Qwen/Qwen2.5-7B", "temperature": 0.3, "max_tokens": 99,
         "api_base": ["http://gpu01:8000"], "timeout_s": 7, "kind": "endpoint", "params_b": 7.6}
    )  # fmt: skip
    assert m.name == m.generation.model == "qwen" and m.generation.served == "Qwen/Qwen2.5-7B"
    assert (m.generation.temperature, m.generation.max_tokens) == (0.3, 99)
    assert m.serving.api_base == ["http://gpu01:8000"] and m.serving.timeout_s == 7.0
    assert m.params_b == 7.6
    nested = ModelConfig.model_validate(m.model_dump())
    assert nested == m, "the nested form (a dump) reads back as the same config"


def test_every_shipped_model_file_validates_and_splits_whole() -> None:
    for path in sorted(CONF.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        m = ModelConfig.model_validate(raw)
        dumped = {**m.generation.model_dump(), **m.serving.model_dump(), "params_b": m.params_b}
        dumped["name"] = dumped.pop("model")
        for key, value in raw.items():  # every key the file sets is in one part, with its value
            got = dumped[key]
            if isinstance(value, dict):  # a nested model (model_file): the keys the file sets
                got = {k: got[k] for k in value}
            assert got == value, (path.name, key)


@pytest.mark.parametrize("key", ["temprature", "seed", "context_window"])
def test_unknown_keys_are_refused_under_their_own_name(key: str) -> None:
    with pytest.raises(ValidationError) as err:
        ModelConfig.model_validate({"name": "m", key: 1})
    assert [e["loc"] for e in err.value.errors()] == [(key,)]


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValidationError):
        ModelConfig.model_validate({"name": "m", "temperature": 3.0})
    with pytest.raises(ValidationError):
        ModelConfig.model_validate({"name": "m", "concurrency": 0})
    with pytest.raises(ValidationError):  # frozen: a config is shared by threads and actors
        GenerationConfig(model="m").temperature = 1.0  # type: ignore[misc]


def test_the_endpoint_is_made_from_both_parts() -> None:
    gen = GenerationConfig(model="qwen", served_name="q7", temperature=0.2, max_tokens=64, flavour="openai")
    serving = ServingConfig(timeout_s=9.0, concurrency=3)
    ep = endpoint_config(gen, serving, ("http://a:1/v1",), api_key="k", backoff_base_s=0.1)
    assert ep == EndpointConfig(
        base_urls=("http://a:1",), model="q7", api_key="k", max_tokens=64, temperature=0.2, seed=0,
        timeout_s=9.0, concurrency=3, flavour="openai", backoff_base_s=0.1,
    )  # fmt: skip
    cell = with_generation(ep, gen.model_copy(update={"seed": 5}))
    assert cell.seed == 5 and cell.base_urls == ep.base_urls and cell.timeout_s == 9.0
    assert (cell.model, cell.temperature, cell.max_tokens) == ("q7", 0.2, 64)


def test_one_default_timeout_and_concurrency() -> None:
    ep = EndpointConfig(base_urls=("http://a:1",), model="m")
    serving = ServingConfig()
    assert (ep.timeout_s, ep.concurrency) == (serving.timeout_s, serving.concurrency) == (300.0, 8)
