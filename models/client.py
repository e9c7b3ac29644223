"""``ChatClient``: one client for OpenAI-compatible ``/v1/chat/completions`` endpoints (vLLM, llama.cpp).

Sync and thread-safe: one client is shared by a thread pool, and the pool's per-replica semaphores keep
at most ``concurrency`` requests in flight on each replica (a vLLM replica batches what it holds).
Sampling is temperature 0 with a fixed seed by default. A reply is looked up in the content-addressed
cache first (a hit sends no request). Connection errors, timeouts, 429 and 5xx are retried with capped
exponential backoff, jittered deterministically from the request hash (the same request waits the same
times on every run), honouring a server's Retry-After; a retry goes to another live replica when there is
one, and a replica that refuses connections is marked down in the pool. A 4xx other than 429 is the
request's fault and raises :class:`~models.errors.ResponseError` at once (a 400 that says the prompt
exceeds the context window as :class:`~models.errors.ContextLengthError`).

A timeout while connecting is always retried (the server never saw the request). A timeout while waiting
for the reply is retried only when ``retry_read_timeouts`` is on: a one-request-at-a-time local server is
still computing the reply (measured: a 300 s timeout expired during one slow prefill, and the re-sent
request made the server do the whole prefill twice), so its endpoint turns it off and the timeout is
raised at once, with ``details.retried = False``.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from tgms.models.cache import ResponseCache, request_key
from tgms.models.config import EndpointConfig, Sampling
from tgms.models.errors import (
    BadReplyError,
    ContextLengthError,
    EndpointConnectError,
    EndpointTimeoutError,
    InfraError,
    RateLimitedError,
    ResponseError,
    RetriesExhaustedError,
    ServerError,
)
from tgms.models.pool import EndpointPool
from tgms.models.structured import response_format_for


@dataclass(frozen=True)
class Completion:
    """One chat completion and how it was obtained."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None  # None when the server reported no usage
    completion_tokens: int | None
    latency_s: float  # wall time of the successful attempt (0.0 for a cache hit)
    attempts: int  # HTTP requests sent (0 for a cache hit)
    endpoint: str | None  # the replica that answered (the original one for a cache hit)
    cached: bool
    request_hash: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ChatClient:
    """Chat completions against one model's replicas, with cache, retries and a concurrency limit."""

    def __init__(
        self,
        config: EndpointConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = config
        self._sleep = sleep
        headers = dict(config.extra_headers)
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        slots = config.concurrency * len(config.base_urls)
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(config.timeout_s),
            limits=httpx.Limits(max_connections=slots + 4, max_keepalive_connections=slots + 4),
            transport=transport,
        )
        self.pool = EndpointPool(config.base_urls, config.concurrency, config.health_cooldown_s, self._http)
        self.cache = ResponseCache(config.cache_dir) if config.cache_dir is not None else None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request_body(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        sampling: Sampling | None = None,
    ) -> dict[str, Any]:
        """The JSON body sent for these messages (exposed so callers can hash or log it)."""
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            **self._sampling(max_tokens, sampling),
        }
        if schema is not None:
            body["response_format"] = response_format_for(self.config.flavour, schema)
        return body

    def _sampling(self, max_tokens: int | None, sampling: Sampling | None = None) -> dict[str, Any]:
        return {
            "temperature": sampling.temperature if sampling is not None else self.config.temperature,
            "seed": sampling.seed if sampling is not None else self.config.seed,
            "max_tokens": max_tokens if max_tokens is not None else self.config.max_tokens,
        }

    def complete(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        sampling: Sampling | None = None,
    ) -> Completion:
        """One chat completion: from the cache, or from a live replica with retries.

        ``sampling`` overrides the endpoint's temperature and seed for this request (and is part of its
        cache key). Raises :class:`~models.errors.InfraError` (never a wrong answer) or
        :class:`~models.errors.ResponseError`.
        """
        body = self.request_body(messages, schema, max_tokens, sampling)
        key = request_key(
            body["model"], messages, self._sampling(max_tokens, sampling), body.get("response_format")
        )
        if self.cache is not None:
            hit = self._from_cache(key)
            if hit is not None:
                return hit
        completion = self._send_with_retries(body, key)
        if self.cache is not None:
            stored = completion.to_dict()
            for transient in ("latency_s", "attempts", "cached", "request_hash"):
                stored.pop(transient)
            self.cache.put(key, stored)
        return completion

    def _from_cache(self, key: str) -> Completion | None:
        """The cached completion, or None (an entry that parses but lacks a field is a miss too)."""
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None:
            return None
        try:
            return Completion(**{**hit, "latency_s": 0.0, "attempts": 0, "cached": True, "request_hash": key})
        except TypeError:
            return None

    def _send_with_retries(self, body: dict[str, Any], key: str) -> Completion:
        avoid: frozenset[str] = frozenset()
        errors: list[InfraError] = []
        for attempt in range(1, self.config.max_retries + 2):
            try:
                with self.pool.acquire(avoid) as url:
                    return self._send_once(url, body, key, attempt)
            except InfraError as err:
                errors.append(err)
                failed_url = err.details.get("endpoint")
                if isinstance(err, EndpointConnectError) and failed_url:
                    self.pool.mark_down(failed_url, err.code)
                if failed_url:
                    avoid = frozenset({failed_url})
                if err.code == "E_INFRA_NO_REPLICA" or attempt > self.config.max_retries:
                    break
                if err.details.get("phase") == "read" and not self.config.retry_read_timeouts:
                    # the server may still be working on it: never queue the same request twice
                    err.details["retried"] = False
                    raise err
                self._sleep(self._delay(err, key, attempt))
        last = errors[-1]
        if last.code == "E_INFRA_NO_REPLICA":
            raise last
        raise RetriesExhaustedError(
            f"{len(errors)} attempts failed; last: {last.message}",
            attempts=len(errors),
            codes=[e.code for e in errors],
            last=last.to_dict(),
            request_hash=key,
        )

    def _delay(self, err: InfraError, key: str, attempt: int) -> float:
        """Capped exponential backoff with deterministic jitter in [50%, 100%]; Retry-After wins if longer."""
        cfg = self.config
        u = int.from_bytes(hashlib.sha256(f"{key}:{attempt}".encode()).digest()[:8], "big") / 2**64
        delay = min(cfg.backoff_cap_s, cfg.backoff_base_s * 2 ** (attempt - 1)) * (0.5 + 0.5 * u)
        retry_after = err.details.get("retry_after_s")
        if isinstance(retry_after, (int, float)):
            delay = max(delay, min(float(retry_after), cfg.retry_after_cap_s))
        return delay

    def _send_once(self, url: str, body: dict[str, Any], key: str, attempt: int) -> Completion:
        where = {"endpoint": url, "attempt": attempt, "request_hash": key}
        start = time.perf_counter()
        try:
            resp = self._http.post(url + "/v1/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            # a connect (or pool) timeout never reached the server; a read/write timeout may be in its work
            phase = "connect" if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)) else "read"
            raise EndpointTimeoutError(
                f"no reply within {self.config.timeout_s} s", phase=phase, **where
            ) from exc
        except httpx.TransportError as exc:
            raise EndpointConnectError(f"cannot reach the endpoint: {exc}", **where) from exc
        latency = time.perf_counter() - start
        status = resp.status_code
        if status == 429:
            raise RateLimitedError(
                "rate limited (HTTP 429)", status=status, retry_after_s=_retry_after(resp), **where
            )
        if status >= 500:
            raise ServerError(
                f"server error (HTTP {status})",
                status=status,
                retry_after_s=_retry_after(resp),
                body=resp.text[:500],
                **where,
            )
        if status >= 400:
            if status in (400, 413) and _CONTEXT.search(resp.text):
                raise ContextLengthError(
                    f"the prompt does not fit the model's context window (HTTP {status})",
                    status=status,
                    body=resp.text[:2000],
                    **where,
                )
            raise ResponseError(
                f"request rejected (HTTP {status}) by {url}/v1/chat/completions",
                status=status,
                body=resp.text[:2000],
                **where,
            )
        return _parse(resp, where, latency, attempt)


#: how servers word a prompt over the window: vLLM ("maximum context length is 8192 tokens"), llama.cpp's
#: server ("exceed_context_size_error", "exceeds the available context size"), llama-cpp-python
#: ("Requested tokens (9000) exceed context window of 8192"), OpenAI ("context_length_exceeded")
_CONTEXT = re.compile(
    r"context[ _]length|context window|context[ _]size|maximum context|n_ctx", re.IGNORECASE
)


def _retry_after(resp: httpx.Response) -> float | None:
    """Retry-After in seconds (the delta-seconds form; an HTTP date is ignored)."""
    value = resp.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _parse(resp: httpx.Response, where: dict[str, Any], latency: float, attempt: int) -> Completion:
    try:
        data = resp.json()
        choice = data["choices"][0]
        text = choice["message"]["content"]
        if not isinstance(text, str):
            raise TypeError("message content is not a string")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise BadReplyError(f"not a chat completion: {exc}", body=resp.text[:500], **where) from exc
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return Completion(
        text=text,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
        latency_s=latency,
        attempts=attempt,
        endpoint=where["endpoint"],
        cached=False,
        request_hash=where["request_hash"],
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
