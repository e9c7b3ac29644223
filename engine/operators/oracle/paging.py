"""The reference for what a page is.

A payload's *lists* are the keys ``L`` with a ``L_total`` companion (``rows`` and any secondary list). The
oracles return every list in full; the envelope layer cuts pages. One cursor pages every list of a payload
in lock-step (the same offset into each list), so following ``cursor`` reads all lists to the end.

- ``L`` becomes ``L[offset : offset + limit]``; ``L_total`` is unchanged (the full count).
- ``L_truncated`` (secondary lists only) is true iff the page is not the whole list
  (``len(page) < L_total``, which includes every page at ``offset > 0``).
- ``truncated`` is the OR of the ``rows`` test and every ``L_truncated``.
- ``cursor`` is the decimal offset of the next page (``str(offset + limit)``) when any list has rows
  beyond this page, else ``None``. The envelope may wrap it in an opaque token.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.errors import InvalidArgError, SchemaError

MAX_LIMIT = 10_000
DEFAULT_LIMIT = 100


def list_names(payload: dict[str, Any]) -> list[str]:
    """The pageable lists of a payload, ``rows`` first, then the others by name."""
    names = [k for k, v in payload.items() if isinstance(v, list) and f"{k}_total" in payload]
    return sorted(names, key=lambda k: (k != "rows", k))


def _check(limit: int, cursor_offset: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise SchemaError("limit must be an integer", field="limit", value=limit)
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgError(f"limit must be an integer in [1, {MAX_LIMIT}]", field="limit", value=limit)
    if isinstance(cursor_offset, bool) or not isinstance(cursor_offset, int) or cursor_offset < 0:
        raise InvalidArgError(
            "cursor offset must be a non-negative integer", field="cursor", value=cursor_offset
        )


def paginate(payload: dict[str, Any], list_name: str, limit: int, cursor_offset: int = 0) -> dict[str, Any]:
    """Cut one list of ``payload`` to the page ``[cursor_offset, cursor_offset + limit)``.

    Returns a new payload; updates ``truncated`` (OR-ed with any value already there) and, for a secondary
    list, ``<list>_truncated``. The ``cursor`` is left to :func:`page`, which sees every list.
    """
    _check(limit, cursor_offset)
    if list_name not in payload or f"{list_name}_total" not in payload:
        raise InvalidArgError(f"payload has no pageable list {list_name!r}", field="list_name")
    out = dict(payload)
    full = payload[list_name]
    cut = full[cursor_offset : cursor_offset + limit]
    out[list_name] = cut
    was_cut = len(cut) < payload[f"{list_name}_total"]
    if list_name != "rows":
        out[f"{list_name}_truncated"] = was_cut
    out["truncated"] = bool(payload.get("truncated", False)) or was_cut
    return out


def page(payload: dict[str, Any], limit: int = DEFAULT_LIMIT, cursor_offset: int = 0) -> dict[str, Any]:
    """Cut every list of ``payload`` at the same offset; set ``truncated`` and ``cursor``."""
    _check(limit, cursor_offset)
    names = list_names(payload)
    out = dict(payload)
    out["truncated"] = False
    more = False
    for name in names:
        out = paginate(out, name, limit, cursor_offset)
        more = more or cursor_offset + limit < payload[f"{name}_total"]
    out["cursor"] = str(cursor_offset + limit) if more else None
    return out
