"""The errors of the model client, in the project's one error shape.

Every error raised by :mod:`models` is a :class:`ModelError`, a subclass of the engine's public
:class:`engine.api.TGMSError`, so it serializes to ``{"error": CODE, "message": "...", "details": {...}}``
with the same ``to_dict``/``to_json`` and rebuilds with ``engine.api.error_from_dict`` (a recorded failure
replays as the same class, via :func:`model_error_from_dict`). Subclassing keeps one shape across the
project. The codes are set as class attributes, not with the engine's ``code=`` class keyword, so they stay
out of the engine's own registry (which holds exactly the engine's codes); :data:`MODEL_ERROR_CLASSES` is
this module's registry.

::

    ModelError                       E_MODEL            (base; never raised directly)
    ├── InfraError                   E_INFRA            the infrastructure failed: never a wrong answer
    │   ├── EndpointConnectError     E_INFRA_CONNECT    connection refused / reset / DNS
    │   ├── EndpointTimeoutError     E_INFRA_TIMEOUT    no reply within the configured timeout
    │   ├── RateLimitedError         E_INFRA_RATE_LIMIT HTTP 429
    │   ├── ServerError              E_INFRA_SERVER     HTTP 5xx
    │   ├── BadReplyError            E_INFRA_BAD_REPLY  a 2xx whose body is not a chat completion
    │   ├── RetriesExhaustedError    E_INFRA_RETRIES    every attempt failed with one of the above
    │   ├── NoLiveReplicaError       E_INFRA_NO_REPLICA every replica of the pool is down
    │   └── LocalServerError         E_INFRA_LOCAL_SERVER a local model server could not be set up or started
    │       └── ModelFileError       E_INFRA_MODEL_FILE a model file is missing, or not the configured one
    ├── ResponseError                E_RESPONSE         a 4xx (not 429): the request itself is at fault
    │   └── ContextLengthError       E_RESPONSE_CONTEXT the prompt exceeds the model's context window
    └── ModelOutputError             E_MODEL_OUTPUT     the model answered, but not in the form asked for
                                                        (no JSON, wrong schema): the model's failure, scored

A caller scores a task only when no :class:`InfraError` was raised; an :class:`InfraError` is recorded
with its code and the task is labelled unscored.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.api import TGMSError, error_from_dict


class ModelError(TGMSError):
    """Base of every model-client error."""

    code = "E_MODEL"


class InfraError(ModelError):
    """The model infrastructure failed (connection, timeout, 429, 5xx, all replicas down)."""

    code = "E_INFRA"


class EndpointConnectError(InfraError):
    """The endpoint could not be reached (connection refused, reset, name resolution)."""

    code = "E_INFRA_CONNECT"


class EndpointTimeoutError(InfraError):
    """The endpoint did not answer within the configured timeout."""

    code = "E_INFRA_TIMEOUT"


class RateLimitedError(InfraError):
    """The endpoint answered HTTP 429 (``details.retry_after_s`` when it sent Retry-After)."""

    code = "E_INFRA_RATE_LIMIT"


class ServerError(InfraError):
    """The endpoint answered HTTP 5xx."""

    code = "E_INFRA_SERVER"


class BadReplyError(InfraError):
    """The endpoint answered 2xx with a body that is not an OpenAI chat completion."""

    code = "E_INFRA_BAD_REPLY"


class RetriesExhaustedError(InfraError):
    """Every attempt failed with an infrastructure error (``details.last`` is the last one's shape)."""

    code = "E_INFRA_RETRIES"


class NoLiveReplicaError(InfraError):
    """Every replica of the pool is marked down."""

    code = "E_INFRA_NO_REPLICA"


class LocalServerError(InfraError):
    """A local model server (:mod:`models.local`) could not be provisioned, started or made ready.

    ``details.reason`` says which: ``missing_package`` (names the extra to install), ``exited`` (with the
    exit code and ``log_tail``), ``timeout``, ``provision`` (a setup step failed), ``bad_config``.
    """

    code = "E_INFRA_LOCAL_SERVER"


class ModelFileError(LocalServerError):
    """A local model file is missing, could not be fetched or assembled, or is not the configured one.

    Raised before any server starts (:mod:`models.local.weights`). ``details.reason``: ``missing``,
    ``size_mismatch``, ``sha256_mismatch`` (with ``sha256`` and ``expected_sha256``), ``hub``,
    ``download``, ``bad_part``, ``missing_package``, ``bad_config``.
    """

    code = "E_INFRA_MODEL_FILE"


class ResponseError(ModelError):
    """HTTP 4xx other than 429: the request is at fault and retrying it would not help."""

    code = "E_RESPONSE"


class ContextLengthError(ResponseError):
    """The server refused the prompt as longer than its context window (an HTTP 400 saying so): the task is
    recorded ``refused``, like a prompt the system measured as too long before asking."""

    code = "E_RESPONSE_CONTEXT"


class ModelOutputError(ModelError):
    """The model's reply is unusable (not JSON, or not the schema asked for): a model failure, not infra."""

    code = "E_MODEL_OUTPUT"


def _subclasses(cls: type[ModelError]) -> list[type[ModelError]]:
    return [cls, *(c for sub in cls.__subclasses__() for c in _subclasses(sub))]


#: every model-client error class by its code
MODEL_ERROR_CLASSES: dict[str, type[ModelError]] = {c.code: c for c in _subclasses(ModelError)}


def model_error_from_dict(d: dict[str, Any]) -> TGMSError:
    """Rebuild an error from its JSON shape: a model-client code as its class, any other via the engine."""
    cls = MODEL_ERROR_CLASSES.get(str(d.get("error")))
    if cls is None:
        return error_from_dict(d)
    return cls(str(d.get("message", "")), **dict(d.get("details") or {}))
