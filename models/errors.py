"""The errors of the model client, in the project's one error shape.

Every error raised by :mod:`models` is a :class:`ModelError`, a subclass of the engine's public
:class:`engine.api.TGMSError`, so it serializes to ``{"error": CODE, "message": "...", "details": {...}}``
with the same ``to_dict``/``to_json`` and rebuilds with ``engine.api.error_from_dict`` (a recorded failure
replays as the same class). Subclassing keeps one shape and one registry of codes across the project;
the codes below are the client's own, distinct from the engine's.

::

    ModelError                       E_MODEL            (base; never raised directly)
    ├── InfraError                   E_INFRA            the infrastructure failed: never a wrong answer
    │   ├── EndpointConnectError     E_INFRA_CONNECT    connection refused / reset / DNS
    │   ├── EndpointTimeoutError     E_INFRA_TIMEOUT    no reply within the configured timeout
    │   ├── RateLimitedError         E_INFRA_RATE_LIMIT HTTP 429
    │   ├── ServerError              E_INFRA_SERVER     HTTP 5xx
    │   ├── BadReplyError            E_INFRA_BAD_REPLY  a 2xx whose body is not a chat completion
    │   ├── RetriesExhaustedError    E_INFRA_RETRIES    every attempt failed with one of the above
    │   └── NoLiveReplicaError       E_INFRA_NO_REPLICA every replica of the pool is down
    └── ResponseError                E_RESPONSE         a 4xx (not 429): the request itself is at fault

A caller scores a task only when no :class:`InfraError` was raised; an :class:`InfraError` is recorded
with its code and the task is labelled unscored.
"""

from __future__ import annotations

from engine.api import TGMSError


class ModelError(TGMSError, code="E_MODEL"):
    """Base of every model-client error."""


class InfraError(ModelError, code="E_INFRA"):
    """The model infrastructure failed (connection, timeout, 429, 5xx, all replicas down)."""


class EndpointConnectError(InfraError, code="E_INFRA_CONNECT"):
    """The endpoint could not be reached (connection refused, reset, name resolution)."""


class EndpointTimeoutError(InfraError, code="E_INFRA_TIMEOUT"):
    """The endpoint did not answer within the configured timeout."""


class RateLimitedError(InfraError, code="E_INFRA_RATE_LIMIT"):
    """The endpoint answered HTTP 429 (``details.retry_after_s`` when it sent Retry-After)."""


class ServerError(InfraError, code="E_INFRA_SERVER"):
    """The endpoint answered HTTP 5xx."""


class BadReplyError(InfraError, code="E_INFRA_BAD_REPLY"):
    """The endpoint answered 2xx with a body that is not an OpenAI chat completion."""


class RetriesExhaustedError(InfraError, code="E_INFRA_RETRIES"):
    """Every attempt failed with an infrastructure error (``details.last`` is the last one's shape)."""


class NoLiveReplicaError(InfraError, code="E_INFRA_NO_REPLICA"):
    """Every replica of the pool is marked down."""


class ResponseError(ModelError, code="E_RESPONSE"):
    """HTTP 4xx other than 429: the request is at fault and retrying it would not help."""
