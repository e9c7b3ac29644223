"""The command line's boundary: every exception becomes the one structured error on stderr.

Commands raise :class:`~engine.errors.TGMSError` for what they refuse. What else can escape is mapped here
by kind, so a user never sees a traceback: a file-system refusal (a read-only or full disk, a permission)
is ``E_CONFLICT``/``E_BACKEND`` naming the path; nesting too deep for Python is ``E_LIMIT``; anything left is
``E_INTERNAL`` (a defect of ours: the tests drive every command to make sure none is reached).
"""

from __future__ import annotations

import errno
import json
import sys
from typing import Any

from tgms.engine.api import BackendError, ConflictError, LimitError, SchemaError, TGMSError

# exit codes: 2 for a request the user can fix by changing it, 1 for a refusal of the store or the data
_USAGE_CODES = ("E_SCHEMA", "E_INVALID_ARG", "E_NOT_FOUND")
INTERNAL = "E_INTERNAL"


class InternalError(TGMSError):
    code = INTERNAL


def structured(exc: BaseException) -> TGMSError:
    if isinstance(exc, TGMSError):
        return exc
    if isinstance(exc, OSError):
        return _os_error(exc)
    if isinstance(exc, RecursionError):
        return LimitError("input is nested too deeply to process", detail=str(exc))
    if isinstance(exc, MemoryError):
        return LimitError("input is too large to process in memory")
    if isinstance(exc, UnicodeError):
        return SchemaError(f"text is not valid UTF-8: {exc}")
    return InternalError(f"internal error: {type(exc).__name__}: {exc}", type=type(exc).__name__)


def _os_error(exc: OSError) -> TGMSError:
    where = {"path": exc.filename} if exc.filename else {}
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ConflictError(f"not permitted to write or read here: {reason}", reason=reason, **where)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return LimitError(f"the disk is full: {reason}", reason=reason, **where)
    return BackendError(f"file system error: {reason}", reason=reason, errno=exc.errno, **where)


def exit_code(err: TGMSError) -> int:
    if err.code == INTERNAL:
        return 70  # EX_SOFTWARE
    return 2 if err.code in _USAGE_CODES else 1


def write_error(err: TGMSError) -> None:
    """One line of JSON on stderr (ASCII-escaped if the terminal cannot encode a character of it)."""
    try:
        text = err.to_json()
        sys.stderr.write(text + "\n")
    except UnicodeEncodeError:
        sys.stderr.write(json.dumps(err.to_dict(), sort_keys=True, ensure_ascii=True) + "\n")
    sys.stderr.flush()


def validation_problems(err: Any, limit: int | None = None, root: str = "") -> list[str]:
    """A pydantic ``ValidationError`` as ``"<dotted field>: <message>"`` lines (the first ``limit``; a
    problem of the whole value is named ``root``): the ``problems`` detail of the error that reports it."""
    return [f"{'.'.join(map(str, e['loc'])) or root}: {e['msg']}" for e in err.errors()[:limit]]
