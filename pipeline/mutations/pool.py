"""The mutation pool: claims known to verify ``supported`` against the trace they cite.

A mutation experiment only means something when the unmutated claim passes, so the pool is built from the
suite's oracle plans: each plan is executed, its mechanical answer taken, and the task kept only when every
claim verifies supported. Mechanical answers state counts, values and entities only, so each kept answer is
enriched with ordering claims (pairs of interval-shaped rows of a step, relation recomputed) and temporal
pattern claims (a burst step's ``rows_total`` re-executed), each kept only if it verifies supported.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tgms.engine.api import (
    ExecConfig,
    OpContext,
    TGMSError,
    Trace,
    VerifyConfig,
    allen_relation,
    as_interval,
    build_plan,
    execute,
    mechanical_answer,
    parse_answer,
    verify_claims,
)
from tgms.pipeline.scoring.suite import Task

#: list fields whose rows carry intervals an ordering claim may compare
INTERVAL_LISTS = ("edges", "rows")
PAIRS_PER_LIST = 2  # ordering claims per interval list and operand form (refs, literals)
MAX_ORDERINGS = 8  # per trace


@dataclass
class PoolItem:
    """One supported claim (``claim_id``) of an answer, with the task and trace it was verified on."""

    task: Task
    trace: Trace
    answer: dict[str, Any]
    claim_id: str
    ctx: OpContext = field(repr=False)
    #: executions shared by the pool's items (control and variant runs), keyed by what was run
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def claim(self) -> dict[str, Any]:
        return next(c for c in self.answer["claims"] if c["id"] == self.claim_id)

    @property
    def task_id(self) -> str:
        return self.task.id


@dataclass
class Pool:
    items: list[PoolItem] = field(default_factory=list)
    tasks_total: int = 0
    tasks_kept: int = 0

    def sizes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for it in self.items:
            out[it.claim["type"]] = out.get(it.claim["type"], 0) + 1
        return dict(sorted(out.items()))


def run_plan(raw_plan: dict[str, Any], ctx: OpContext, *, taint: bool = True) -> Trace:
    return execute(build_plan(raw_plan), ctx, config=ExecConfig(taint=taint))


def supported(claim: dict[str, Any], trace: Trace, ctx: OpContext, cfg: VerifyConfig | None = None) -> bool:
    return verdict(claim, trace, ctx, cfg) == "supported"


def verdict(claim: dict[str, Any], trace: Trace, ctx: OpContext, cfg: VerifyConfig | None = None) -> str:
    """The verdict on one claim (verified alone: claims are checked independently)."""
    try:
        ans = parse_answer({"text": "", "claims": [claim]})
    except TGMSError:
        return "malformed"
    return verify_claims(ans, trace, ctx, cfg or VerifyConfig())[0].verdict


def _next_id(answer: dict[str, Any]) -> str:
    return f"c{len(answer['claims']) + 1}"


def ordering_claims(trace: Trace, rng: random.Random) -> list[dict[str, Any]]:
    """Candidate ordering claims: pairs of interval-shaped rows of one step, as refs and as literals."""
    out: list[dict[str, Any]] = []
    for rec in trace.steps:
        payload = trace.payload(rec.id) if rec.ok else None
        if payload is None:
            continue
        for name in INTERVAL_LISTS:
            rows = payload.get(name)
            if not isinstance(rows, list):
                continue
            ivs = [
                (i, iv)
                for i, r in enumerate(rows)
                if (iv := as_interval(r)) is not None and isinstance(r, dict)
            ]
            if len(ivs) < 2:
                continue
            for literal in (False, True) * PAIRS_PER_LIST:
                (i, a), (j, b) = rng.sample(ivs, 2)
                cand = {
                    "type": "ordering",
                    "evidence": [rec.id],
                    "a": [a[0], a[1]] if literal else f"{rec.id}.{name}[{i}]",
                    "b": [b[0], b[1]] if literal else f"{rec.id}.{name}[{j}]",
                    "relation": allen_relation(a, b),
                }
                if cand not in out:
                    out.append(cand)
    return out[:MAX_ORDERINGS]


def pattern_claims(trace: Trace) -> list[dict[str, Any]]:
    """A temporal-pattern claim per successful burst step: re-executing it gives its ``rows_total``."""
    out = []
    for rec in trace.steps:
        if rec.op != "burst_detection" or not rec.ok or rec.rows_total is None:
            continue
        args = trace.resolved_args(rec.id)
        if args is None:
            continue
        out.append(
            {
                "type": "temporal_pattern",
                "evidence": [rec.id],
                "assertion": {"op": rec.op, "args": copy.deepcopy(args), "field": "rows_total",
                              "value": rec.rows_total},
            }
        )  # fmt: skip
    return out


def build_pool(tasks: Sequence[Task], ctx: OpContext, seed: int = 0) -> Pool:
    """The pool of ``tasks`` (in the given order), enriched and seeded by ``seed`` and the task id."""
    pool = Pool(tasks_total=len(tasks))
    cache: dict[str, Any] = {}
    for task in tasks:
        if task.oracle_plan is None:  # a user's question: no plan to mutate
            continue
        try:
            trace = run_plan(task.oracle_plan, ctx)
        except TGMSError:
            continue
        answer = mechanical_answer(trace)
        if not answer["claims"] or not all(supported(c, trace, ctx) for c in answer["claims"]):
            continue
        pool.tasks_kept += 1
        rng = random.Random(f"pool:{seed}:{task.id}")
        for extra in ordering_claims(trace, rng) + pattern_claims(trace):
            extra = {"id": _next_id(answer), **extra}
            if supported(extra, trace, ctx):
                answer["claims"].append(extra)
        pool.items += [PoolItem(task, trace, answer, c["id"], ctx, cache) for c in answer["claims"]]
    return pool
