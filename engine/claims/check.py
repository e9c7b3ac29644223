"""One answer checked against its trace on a store: the verdicts, the gate's decision and the coverage.

``tgms verify-answer`` and the MCP ``verify_answer`` tool both answer this question; the check lives here so
the two cannot drift (the same refusal of a trace from another store state, the same result shape).
"""

from __future__ import annotations

from typing import Any

from tgms.engine.claims.answer import Answer
from tgms.engine.claims.gate import GateConfig, coverage, gate
from tgms.engine.claims.verifier import VerifyConfig, verify_claims
from tgms.engine.errors import InvalidArgError
from tgms.engine.execute.executor import Trace
from tgms.engine.operators.context import OpContext


def require_trace_store(trace: Trace, here: str, override: str) -> None:
    """Refuse a trace recorded on another store state (its evidence would be checked against the wrong
    facts); ``override`` names the option that skips the check, for the message."""
    if trace.store_digest and here != trace.store_digest:
        raise InvalidArgError(
            "the trace was recorded on another store state; verify it against that store "
            f"(or pass {override})",
            trace_store=trace.store_digest,
            store=here,
        )


def check_answer(
    answer: Answer,
    trace: Trace,
    ctx: OpContext,
    *,
    taint: bool = True,
    gated_types: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """``{verdicts, gate, coverage}`` of ``answer`` against ``trace`` on the store behind ``ctx``."""
    verdicts = verify_claims(answer, trace, ctx, VerifyConfig(taint=taint))
    config = GateConfig() if gated_types is None else GateConfig(gated_types=gated_types)
    return {
        "verdicts": [v.to_dict() for v in verdicts],
        "gate": gate(answer, verdicts, config),
        "coverage": coverage(answer, ctx.nid_index()),
    }
