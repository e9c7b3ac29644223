"""The configuration of one model endpoint (one model served by one or more replicas)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.api import InvalidArgError

#: how a server accepts a JSON schema for structured output (they differ: :mod:`models.structured`)
Flavour = Literal["vllm", "llamacpp", "openai"]


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
    timeout_s: float = 120.0
    max_retries: int = 4  # attempts after the first
    #: re-send a request whose reply timed out. False for a one-request-at-a-time local server: it is still
    #: working on the request (a slow prefill), so a re-send would queue the same work behind it twice
    retry_read_timeouts: bool = True
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 20.0
    retry_after_cap_s: float = 60.0  # a server's Retry-After is honoured up to this
    concurrency: int = 8  # requests in flight per replica
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
