"""Calling an operator: validate, price, run, page, canonicalize, digest.

The result envelope::

    {"op": NAME, "args_echo": {...all args, defaults filled...}, "dataset_extent": {...},
     "payload": {...declared outputs...}, "result_digest": SHA-256 of the canonical payload only}

Paging: one cursor pages every list of a payload in lock-step (the same offset into each list;
``docs/operators.md`` §1). The cursor is an opaque token ``"<offset>.<tag>"`` whose tag authenticates the
offset together with the call's other arguments and the store's belief state (last applied batch and its
``tt``, equal on every backend), so a cursor from a different query, from before a write, or with an edited
offset is refused (``E_INVALID_ARG``) instead of silently returning someone else's (or an empty) page.
"""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from tgms.engine.canonical import Dumped, canonicalize, check_depth, digest, dumps_canonical, sha256_hex
from tgms.engine.errors import InvalidArgError
from tgms.engine.operators.base import parse_args
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import DEFAULT_BUDGET_S, check_budget, profile
from tgms.engine.operators.registry import OperatorSpec, get_operator


def _args_key(args_echo: dict[str, Any], state: str = "", dumped: Dumped | None = None) -> str:
    """What a cursor is bound to: the query (every argument but ``cursor`` and ``limit``, which may change
    from page to page) and the store's belief state (``Store.state_token``)."""
    core = {k: v for k, v in args_echo.items() if k not in ("cursor", "limit")}
    text = dumps_canonical(core) if dumped is None else dumped.text_of(core, canonical=True)
    return sha256_hex(text + "\n" + state)


def _belief_state(ctx: OpContext, as_of_tt: int | None) -> str:
    """The store state a result depends on: the current one, unless the call is pinned to a past
    transaction time (a pinned result never changes with later writes, DESIGN §3.2 invariant 2)."""
    token = ctx.store.state_token()  # "<last seq>@<last tt>"
    if as_of_tt is not None and as_of_tt <= int(token.rpartition("@")[2]):
        return "pinned"
    return token


def _cursor_tag(key: str, offset: int) -> str:
    return sha256_hex(f"{key}:{offset}")[:16]


#: a cursor's key, or a function computing it: hashing the canonical JSON of 10^6 echoed input elements
#: costs ~0.1 s, so a call that neither reads nor issues a cursor never computes it
Key = str | Callable[[], str]


def _key(key: Key) -> str:
    return key if isinstance(key, str) else key()


def encode_cursor(offset: int, key: Key) -> str:
    """``"<offset>.<tag>"``: the tag authenticates the offset together with the query and store state."""
    return f"{offset}.{_cursor_tag(_key(key), offset)}"


#: characters of a bad cursor echoed back in its error
CURSOR_ECHO = 64


def decode_cursor(cursor: str | None, key: Key) -> int:
    """The offset of a cursor this query issued on this store state; anything else is ``E_INVALID_ARG``
    (a cursor of another query, one issued before the store changed, or an edited offset)."""
    if cursor is None:
        return 0
    off, _, tag = cursor.partition(".")
    if not (off.isascii() and off.isdigit()) or len(off) > 19 or tag != _cursor_tag(_key(key), int(off)):
        raise InvalidArgError(
            "bad cursor: not a cursor returned by this call (same arguments, same store state); "
            "start again without a cursor",
            field="cursor",
            # a cursor is ~40 characters: a longer value is echoed by its head and length only
            value=cursor if len(cursor) <= CURSOR_ECHO else cursor[:CURSOR_ECHO] + "…",
            length=len(cursor),
        )
    return int(off)


def page_payload(
    spec: OperatorSpec, payload: dict[str, Any], limit: int, offset: int, key: Key
) -> dict[str, Any]:
    out = dict(payload)
    truncated = False
    more = False
    totals = [payload[f"{name}_total"] for name in spec.lists]
    if offset and offset >= max(totals, default=0):
        # A cursor is only issued while rows remain, so its offset is below some list's total.
        raise InvalidArgError(
            "bad cursor: it points past the end of the result", field="cursor", offset=offset, totals=totals
        )
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
        out["cursor"] = encode_cursor(offset + limit, key) if more else None
    return out


@dataclass(frozen=True)
class CallResult:
    envelope: dict[str, Any]
    estimate_s: float
    wall_s: float
    #: the operator's whole payload before paging (not canonicalized): the executor keeps it for a later
    #: step that reads past the page (``Traits.full_input``), so that reading it costs no second call
    full: dict[str, Any] | None = field(default=None, repr=False, compare=False)


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


#: a list argument at least this long is echoed by ``canonicalize`` alone (see :func:`echo_args`)
BIG_LIST = 1000


def echo_args(
    args: BaseModel, raw: dict[str, Any] | None = None, dumped: Dumped | None = None
) -> dict[str, Any]:
    """The validated arguments as a call spells them: pydantic's JSON dump by alias, canonical.

    A long list of plain JSON values (compute's 10^6-element ``input``) is taken as it is and only
    canonicalized: its JSON dump would be one more full pass giving the same values (~24 ms for 10^6 ints,
    ~360 ms for 10^6 rows {src, t}). A list ``canonicalize`` refuses (a model, a NaN, ...) goes through the
    dump like any other value, so the echo is the dump's, canonical, either way (tested). When validation
    kept the raw list's very elements, the raw list is what is canonicalized (the call's depth check has
    found its element types already); when it is one ``dumped`` holds (an executor's whole read), the echo
    holds that list itself, so the envelope splices its text in."""
    fields = type(args).model_fields
    big: dict[str, Any] = {}
    for name in fields:
        value = getattr(args, name)
        if type(value) is list and len(value) >= BIG_LIST:
            given = _given(fields[name], name, raw)
            if _same_elements(value, given, fields[name].annotation):
                if dumped is not None and dumped.known(given) is not None:
                    big[name] = given
                    continue
                value = given  # the raw list: the call's depth check found its element types already
            try:
                big[name] = canonicalize(value)
            except InvalidArgError:
                continue
    rest = canonicalize(args.model_dump(mode="json", by_alias=True, exclude=set(big)))
    if not big:
        return rest
    out: dict[str, Any] = {}
    for name, info in fields.items():  # the dump's key order: the fields' order
        key = info.serialization_alias or info.alias or name
        if name in big:
            out[key] = big[name]
        elif key in rest:
            out[key] = rest[key]
    return out | rest


def _given(info: Any, name: str, raw: dict[str, Any] | None) -> Any:
    """The raw value a field was validated from (by its alias, as a call spells it)."""
    if raw is None:
        return None
    return raw.get(info.alias or name, raw.get(name))


#: field annotations whose validation copies a list and keeps each element as given (pinned by
#: tests/engine/operators/test_echo_args.py), so no pass over 10^6 elements needs to confirm it
_KEEPS_ELEMENTS = (list[Any], list[Any] | None)


def _same_elements(value: list[Any], given: Any, annotation: Any = None) -> bool:
    """Whether a validated list holds the very objects of the raw list (pydantic copies the list, not a
    plain element), so the two have one canonical text."""
    if type(given) is not list or len(given) != len(value):
        return False
    return annotation in _KEEPS_ELEMENTS or all(map(operator.is_, value, given))


def run_call(
    ctx: OpContext,
    op: str,
    raw_args: dict[str, Any],
    *,
    budget_s: float | None = None,
    check_cost: bool = True,
    dumped: Dumped | None = None,
) -> CallResult:
    """:func:`call` plus the cost estimate and the measured wall time (for traces and calibration).
    ``dumped``: texts of large canonical values in ``raw_args`` already dumped (an executor's whole
    reads), spliced into the echo's digests instead of dumped again; while the call runs it also
    remembers what passes over its long lists find (:meth:`Dumped.active`)."""
    dumped = Dumped() if dumped is None else dumped
    with dumped.active():
        return _run_call(ctx, op, raw_args, budget_s, check_cost, dumped)


def _run_call(
    ctx: OpContext,
    op: str,
    raw_args: dict[str, Any],
    budget_s: float | None,
    check_cost: bool,
    dumped: Dumped,
) -> CallResult:
    spec = get_operator(op)
    check_depth(raw_args, f"{op} args")  # before the recursive walks of validation and dumping
    args = parse_args(spec.args, raw_args, op)
    args_echo = echo_args(args, raw_args, dumped)  # as a call spells them
    state = _belief_state(ctx, getattr(args, "as_of_tt", None))
    key = functools.cache(lambda: _args_key(args_echo, state, dumped))  # only when a cursor is read or issued
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
    full = spec.impl(ctx, args, budget_s=budget) if spec.budgeted else spec.impl(ctx, args)
    payload = page_payload(spec, full, getattr(args, "limit", 100), offset, key)
    payload = canonicalize(payload)
    wall = time.perf_counter() - t0
    envelope = {
        "op": op,
        "args_echo": args_echo,
        "dataset_extent": {"vt_min": prof.vt_min, "vt_max": prof.vt_max},
        "payload": payload,
        "result_digest": digest(payload),
    }
    return CallResult(envelope, est.seconds, wall, full)
