"""The one exception tree of TGMS.

Every error that leaves the engine is a :class:`TGMSError` and serializes to one JSON shape::

    {"error": CODE, "message": "...", "details": {...}}

::

    TGMSError                      (base; never raised directly)
    ├── SchemaError         E_SCHEMA       malformed request / record / plan shape
    ├── InvalidArgError     E_INVALID_ARG  well-formed but semantically invalid value
    ├── NotFoundError       E_NOT_FOUND    unknown identity, uid, operator, file
    ├── GroundingError      E_GROUNDING    identifier not grounded in the task input
    ├── CostError           E_COST         refused by the cost guard (estimate, budget, suggestions)
    ├── LimitError          E_LIMIT        a size limit (rows, steps, batch) was exceeded
    ├── UpstreamError       E_UPSTREAM     a dependency (a prior step, an endpoint) failed
    ├── CorruptError        E_CORRUPT      the event log or store is damaged; refuses to open
    ├── ConflictError       E_CONFLICT     the store is locked by another writer, or read-only
    └── BackendError        E_BACKEND      a storage driver failed; raw driver exceptions are mapped
                                           to this at the adapter boundary

The first seven codes are DESIGN §3.4's. ``E_CORRUPT``, ``E_CONFLICT`` and ``E_BACKEND`` are the store's
own: a damaged log, a second writer and a driver fault are not argument errors and a caller must be able
to tell them apart.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

#: every error class by its code, filled as each class is declared (``class X(TGMSError, code="E_X")``)
ERROR_CLASSES: dict[str, type[TGMSError]] = {}


class TGMSError(Exception):
    """Base of every structured TGMS error."""

    code: ClassVar[str] = "E_INTERNAL"

    def __init_subclass__(cls, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            if code in ERROR_CLASSES:
                raise RuntimeError(f"error code {code} declared twice")
            cls.code = code
            ERROR_CLASSES[code] = cls

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, "details": _jsonable(self.details)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, allow_nan=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}: {self.message!r}, details={self.details!r})"


class SchemaError(TGMSError, code="E_SCHEMA"):
    """A malformed request, record or plan shape."""


class InvalidArgError(TGMSError, code="E_INVALID_ARG"):
    """A well-formed but semantically invalid value."""


class NotFoundError(TGMSError, code="E_NOT_FOUND"):
    """An unknown identity, uid, operator or file."""


class GroundingError(TGMSError, code="E_GROUNDING"):
    """An identifier not grounded in the task input."""


class CostError(TGMSError, code="E_COST"):
    """Refused by the cost guard (estimate, budget, suggestions)."""


class LimitError(TGMSError, code="E_LIMIT"):
    """A size limit (rows, steps, batch) was exceeded."""


class UpstreamError(TGMSError, code="E_UPSTREAM"):
    """A dependency (a prior step, an endpoint) failed."""


class CorruptError(TGMSError, code="E_CORRUPT"):
    """The event log or store is damaged; it refuses to open."""


class ConflictError(TGMSError, code="E_CONFLICT"):
    """The store is locked by another writer, or read-only."""


class BackendError(TGMSError, code="E_BACKEND"):
    """A storage driver failed (raw driver exceptions are mapped to this at the adapter boundary)."""


class StoreWarning(UserWarning):
    """A store is usable but its event log needs attention: a torn tail was trimmed, or a read-only open
    found a pending batch or a torn tail it left alone (``tgms check --store DIR --repair``)."""


def error_from_dict(d: dict[str, Any]) -> TGMSError:
    """Rebuild an error from its JSON shape (used when replaying recorded failures)."""
    cls = ERROR_CLASSES.get(str(d.get("error")), TGMSError)
    return cls(str(d.get("message", "")), **dict(d.get("details") or {}))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return repr(value)  # the error itself must stay strict JSON
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)
