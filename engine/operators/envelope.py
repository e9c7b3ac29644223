"""Calling an operator: validate, price, run, page, canonicalize, digest.

The result envelope::

    {"op": NAME, "args_echo": {...all args, defaults filled...}, "dataset_extent": {...},
     "payload": {...declared outputs...}, "result_digest": SHA-256 of the canonical payload only}

Paging: one cursor pages every list of a payload in lock-step (the same offset into each list;
``docs/operators.md`` §1). The cursor is an opaque token ``"<offset>.<args-hash>"`` bound to the call's
other arguments, so a cursor from a different query is refused (``E_INVALID_ARG``) instead of silently
returning someone else's page.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from engine.canonical import canonicalize, digest, dumps_canonical, sha256_hex
from engine.errors import InvalidArgError
from engine.operators.base import parse_args
from engine.operators.context import OpContext
from engine.operators.cost import DEFAULT_BUDGET_S, check_budget, profile
from engine.operators.registry import OperatorSpec, get_operator


def _args_key(args_echo: dict[str, Any]) -> str:
    core = {k: v for k, v in args_echo.items() if k not in ("cursor", "limit")}
    return sha256_hex(dumps_canonical(core))[:12]


def decode_cursor(cursor: str | None, key: str) -> int:
    if cursor is None:
        return 0
    off, _, bound = cursor.partition(".")
    if not off.isdigit() or bound != key:
        raise InvalidArgError(
            "bad cursor: not a cursor returned by this call (with these arguments)",
            field="cursor",
            value=cursor,
        )
    return int(off)


def page_payload(
    spec: OperatorSpec, payload: dict[str, Any], limit: int, offset: int, key: str
) -> dict[str, Any]:
    out = dict(payload)
    truncated = False
    more = False
    for name in spec.lists:
        full = payload[name]
        total = payload[f"{name}_total"]
        cut = full[offset : offset + limit]
        out[name] = cut
        was_cut = len(cut) < total
        if name != "rows":
            out[f"{name}_truncated"] = was_cut
        truncated = truncated or was_cut
        more = more or offset + limit < total
    if spec.lists:
        out["truncated"] = truncated or bool(payload.get("truncated", False))
        out["cursor"] = f"{offset + limit}.{key}" if more else None
    return out


@dataclass(frozen=True)
class CallResult:
    envelope: dict[str, Any]
    estimate_s: float
    wall_s: float


def call(
    ctx: OpContext,
    op: str,
    raw_args: dict[str, Any],
    *,
    budget_s: float | None = None,
    check_cost: bool = True,
) -> dict[str, Any]:
    """Run one operator call and return its envelope (raises a TGMSError on refusal or bad input).

    The envelope is deterministic: the same store state and arguments give the same bytes."""
    return run_call(ctx, op, raw_args, budget_s=budget_s, check_cost=check_cost).envelope


def run_call(
    ctx: OpContext,
    op: str,
    raw_args: dict[str, Any],
    *,
    budget_s: float | None = None,
    check_cost: bool = True,
) -> CallResult:
    """:func:`call` plus the cost estimate and the measured wall time (for traces and calibration)."""
    spec = get_operator(op)
    args = parse_args(spec.args, raw_args, op)
    args_echo = canonicalize(args.model_dump(mode="json"))
    key = _args_key(args_echo)
    offset = decode_cursor(getattr(args, "cursor", None), key)
    as_of = getattr(args, "as_of_tt", None)
    if spec.edge_arrays:
        ctx.edges(as_of)  # loaded anyway by the call: the profile then derives from it
    prof = profile(ctx, as_of)
    est = spec.cost(prof, args)
    if check_cost:
        check_budget(op, est, budget_s)
    t0 = time.perf_counter()
    # the budget a budgeted implementation re-checks mid-call (None: an unguarded call is not rechecked)
    budget = (DEFAULT_BUDGET_S if budget_s is None else budget_s) if check_cost else None
    payload = spec.impl(ctx, args, budget_s=budget) if spec.budgeted else spec.impl(ctx, args)
    payload = page_payload(spec, payload, getattr(args, "limit", 100), offset, key)
    payload = canonicalize(payload)
    wall = time.perf_counter() - t0
    envelope = {
        "op": op,
        "args_echo": args_echo,
        "dataset_extent": {"vt_min": prof.vt_min, "vt_max": prof.vt_max},
        "payload": payload,
        "result_digest": digest(payload),
    }
    return CallResult(envelope, est.seconds, wall)
