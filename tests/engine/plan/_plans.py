"""Plan builders and verifier helpers shared by the verifier tests."""

from __future__ import annotations

import json
from typing import Any

from tgms.engine.operators.context import OpContext
from tgms.engine.operators.registry import load_all
from tgms.engine.plan.model import Violation
from tgms.engine.plan.verifier import Report, VerifierConfig, verify

load_all()
W = {"t_a": 1000, "t_b": 2000}
TASK = VerifierConfig(task_uids=frozenset({"a", "b"}))


def step(sid: str, op: str, deps: tuple[str, ...] = (), **args: Any) -> dict[str, Any]:
    return {"id": sid, "op": op, "args": args, "depends_on": list(deps)}


def plan(*steps: dict[str, Any], answer: dict[str, Any] | None = None, q: str = "q?") -> dict[str, Any]:
    raw: dict[str, Any] = {"plan_id": "p", "question": q, "steps": list(steps)}
    if answer is not None:
        raw["answer_spec"] = answer
    return raw


def ref(text: str) -> dict[str, str]:
    return {"$ref": text}


def reach(sid: str = "s1", deps: tuple[str, ...] = (), **args: Any) -> dict[str, Any]:
    return step(sid, "temporal_reachability", deps, **({"src": "a", "window": dict(W)} | args))


def resolve_c(sid: str = "s1") -> dict[str, Any]:
    return step(sid, "resolve_entities", query="Node C")


def motifs(window: dict[str, int] | None = None, **args: Any) -> dict[str, Any]:
    base = {"motif": "M_triangle_cyclic", "delta": 100, "window": window or dict(W)}
    return step("s1", "count_temporal_motifs", **(base | args))


def check(raw: dict[str, Any], ctx: OpContext | None, config: VerifierConfig | None = TASK) -> Report:
    report = verify(raw, ctx, config)
    json.dumps(report.to_dict())  # the report is JSON as it is
    return report


def only(report: Report, code: str) -> Violation:
    """The report's single violation, which must have ``code``."""
    assert [v.code for v in report.violations] == [code], [v.to_dict() for v in report.violations]
    return report.violations[0]


def one(
    raw: dict[str, Any], ctx: OpContext | None, code: str, config: VerifierConfig | None = TASK
) -> Violation:
    return only(check(raw, ctx, config), code)
