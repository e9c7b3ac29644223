"""Gold for one draft: verify the oracle plan, execute it, take the mechanical answer, cross-check it.

A draft becomes a task only if every step holds:

1. its oracle plan passes the static verifier (grounded in the draft's input uids);
2. the executor runs every step (an ``E_COST`` refusal makes a *refused record*, kept in the suite);
3. the mechanical answer's claims all verify **supported** against the trace (so no gold rests on
   truncated evidence: a weakly supported claim drops the draw);
4. the gold is not empty (an empty set, null, a zero count);
5. an independent path agrees: the generator's manifest (T2), else the brute-force operator oracles
   run over the same plan (:mod:`pipeline.tasks.crosscheck`).

Every drop has a reason, counted per template in the suite file.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from tgms.engine.api import (
    ExecConfig,
    OpContext,
    OracleStore,
    VerifierConfig,
    build_plan,
    execute,
    mechanical_answer,
    verify_claims,
    verify_plan,
)
from tgms.pipeline.scoring.typed import score
from tgms.pipeline.tasks.crosscheck import GoldCheck, oracle_agrees
from tgms.pipeline.tasks.model import Draft, Template


@dataclass(frozen=True)
class Gold:
    status: str  # "ok" | "refused" | "dropped"
    reason: str = ""
    gold: Any = None
    answer_object: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


def is_empty(kind: str, value: Any) -> bool:
    return value is None or value == [] or value == "" or value == {} or (kind == "count" and value == 0)


def plan_json(task_id: str, question: str, tmpl: Template, draft: Draft) -> dict[str, Any]:
    return {
        "plan_id": task_id,
        "question": question,
        "steps": draft.steps,
        "answer_spec": {"kind": tmpl.kind, "from": draft.answer_from},
    }


def compute_gold(
    ctx: OpContext,
    ostore: OracleStore | None,
    tmpl: Template,
    draft: Draft,
    plan: dict[str, Any],
    config: ExecConfig | None = None,
    check: GoldCheck | None = None,
) -> Gold:
    """The draft's gold. The cross-check (step 5) runs the oracles on ``ostore`` in line, or asks ``check``
    when one is given (a speculative check answers at once and confirms later: :mod:`pipeline.tasks.checks`).
    """
    report = verify_plan(plan, ctx, VerifierConfig(task_uids=frozenset(draft.input_uids)))
    if not report.valid:
        return Gold("dropped", "verifier: " + ",".join(sorted({v.code for v in report.violations})))
    trace = execute(build_plan(plan), ctx, config=config)
    refused = [
        r
        for r in trace.steps
        if r.status == "refused" and r.error and r.error["error"] in ("E_COST", "E_LIMIT")
    ]
    if refused:
        return Gold("refused", f"{refused[0].id}: {refused[0].error['error']}", error=refused[0].error)  # type: ignore[index]
    if trace.status != "ok":
        bad = next(r for r in trace.steps if not r.ok)
        return Gold("dropped", f"execution: {bad.id} {bad.status} {(bad.error or {}).get('error')}")
    answer = mechanical_answer(trace)
    if "answer" not in answer:
        return Gold("dropped", "no answer: " + answer["text"])
    verdicts = verify_claims(answer, trace, ctx)
    if any(v.verdict != "supported" for v in verdicts):
        weak = [v for v in verdicts if v.verdict != "supported"]
        return Gold("dropped", f"gold not fully supported: {weak[0].verdict}")
    gold = answer["answer"]["value"]
    if is_empty(tmpl.kind, gold):
        return Gold("dropped", "degenerate: empty")
    if draft.manifest_gold is not None:
        if not score(tmpl.kind, draft.manifest_gold, gold):
            return Gold("dropped", "cross-check: the engine disagrees with the manifest")
    elif oracle_pairs(ctx, plan) > ORACLE_MAX_PAIRS:
        # dropped whether or not this build cross-checks: a suite is then the same with and without the
        # cross-check, which only confirms (a bundle built without it has the published test SHA)
        return Gold("dropped", "cross-check: too large for the brute-force oracle")
    elif ostore is not None or check is not None:
        if check is None:
            assert ostore is not None
            check = partial(oracle_agrees, ostore)
        if not check(plan, tmpl.kind, gold):
            return Gold("dropped", "cross-check: the brute-force oracles disagree")
    return Gold("ok", gold=gold, answer_object=answer)


#: the brute-force motif oracle examines every (e1, e2, e3) with t3 - t1 <= delta: its inner-loop count is
#: exactly sum_i C(c_i, 2) for c_i the events after e_i within delta. Draws past this are not cross-checked
#: (they are dropped, deterministically, instead of timing out).
ORACLE_MAX_PAIRS = 1_000_000


def oracle_pairs(ctx: OpContext, plan: dict[str, Any]) -> int:
    """The motif oracle's inner-loop count for the plan's motif steps (0 when it has none)."""
    from tgms.engine.api import profile

    total = 0
    for s in plan["steps"]:
        if s["op"] not in ("count_temporal_motifs", "find_temporal_motif_instances"):
            continue
        a = s["args"]
        w, delta = a.get("window"), a.get("delta")
        if not isinstance(w, dict) or not isinstance(delta, int):
            continue
        vt = profile(ctx, a.get("as_of_tt")).vt_sorted
        lo, hi = np.searchsorted(vt, [w["t_a"], w["t_b"]], "left")
        ev = vt[lo:hi]
        c = np.searchsorted(ev, ev + delta, "right") - np.arange(1, len(ev) + 1)
        total += int((c * (c - 1) // 2).sum())
    return total
