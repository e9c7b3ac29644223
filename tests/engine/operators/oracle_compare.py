"""Comparing a fast-path call with the oracle: same canonical payload, or the same error code."""

from __future__ import annotations

from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.errors import TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import ORACLES, OracleStore, page


def _strip_cursor(payload: dict[str, Any]) -> dict[str, Any]:
    out = dict(payload)
    if out.get("cursor") is not None:
        out["cursor"] = out["cursor"].split(".", 1)[0]
    return out


def _limit(args: dict[str, Any]) -> Any:
    return 100 if args.get("limit") is None else args["limit"]  # null = the default, as for every arg


def compare(ctx: OpContext, oracle_store: OracleStore, op: str, args: dict[str, Any]) -> str:
    """Assert agreement; return "ok" or the shared error code."""
    try:
        want = canonicalize(page(ORACLES[op](oracle_store, dict(args)), _limit(args), 0))
        want_err = None
    except TGMSError as exc:
        want, want_err = None, exc.code
    try:
        got = _strip_cursor(call(ctx, op, dict(args), check_cost=False)["payload"])
        got_err = None
    except TGMSError as exc:
        got, got_err = None, exc.code
    assert got_err == want_err, f"{op} {args}: fast path error {got_err}, oracle error {want_err}"
    if want_err is None:
        if op == "count_temporal_motifs":
            want = {k: v for k, v in want.items() if k not in ("truncated", "cursor")}
        assert got == want, _diff(op, args, got, want)
    return want_err or "ok"


def _diff(op: str, args: dict[str, Any], got: Any, want: Any) -> str:
    lines = [f"{op} {args}: payload differs from the oracle"]
    for k in sorted(set(got) | set(want)):
        if got.get(k) != want.get(k):
            lines.append(
                f"  {k}: fast={str(got.get(k))[:400]}\n  {' ' * len(k)}  oracle={str(want.get(k))[:400]}"
            )
    return "\n".join(lines)
