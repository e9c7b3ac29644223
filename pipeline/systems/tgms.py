"""The ``tgms`` system: planner → verifier → repair → executor → reporter → claim verifier → gate (DESIGN §4).

Per task: the planner (:func:`models.planner.plan_and_run`) writes a plan for the question, the static
verifier checks it against the store with the task's input uids as the grounding set, the executor runs it
(results kept by digest in a :class:`~engine.api.ResultStore` under the work directory), and violations or
repairable runtime errors go back to the model up to ``repair_budget`` times. The LLM reporter
(:func:`models.reporter.report`) writes the answer object from a summary of the trace; the claim verifier
rates its claims against the trace; the gate drops unsupported claims and abstains when nothing supported
backs the typed answer.

Ablations (:class:`TgmsConfig`, the paper's switches): ``contracts=False`` turns off the verifier's
declared-output check, ``units=False`` its units check (issue 24), ``taint=False`` turns off truncation taint
in the executor and the claim verifier, ``gating=False`` emits the reporter's answer as is (the verdicts and
the gate's decision are still recorded), ``plan_schema`` picks the structured-output format of the planner
(``"generic"``: the plan outline with free args; ``"per_operator"``: a union over operators, each with its
own args, so a constrained model cannot invent keys; ``"none"``, the default: free generation;
``constrained=True`` is the older spelling of ``"generic"``), ``memory=True`` (off by default) builds the
store's weekly memory notes when the system is built and puts the notes of each question's weeks in its
planner prompt (:mod:`pipeline.systems.tgms_memory`, docs/memory.md).

The record: every plan attempt (``attempts``, ``first_emission_valid``, ``repeat_replies``), the trace
digest and status, the reporter's source, the claim verdicts and the gate's decision; ``answer`` is what
was emitted (None when the gate abstained) and ``extras["reporter_answer"]`` the reporter's answer before
gating. A model that never produced a usable plan ends the task as ``model_error`` (raised to
:func:`~pipeline.systems.base.run_task`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from tgms.engine.api import (
    ExecConfig,
    OpContext,
    ResultStore,
    Trace,
    VerifyConfig,
    build_plan,
    error_from_dict,
    execute,
    gate,
    parse_answer,
    verify_claims,
)
from tgms.models.errors import ModelOutputError
from tgms.models.plan_prompt import shown_examples
from tgms.models.planner import PlannerConfig, PlanOutcome, PlanTask, PromptLayout, plan_and_run
from tgms.models.reporter import report
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import RecordDraft, Runner, SystemConfig, SystemEnv, system
from tgms.pipeline.systems.card import dataset_card
from tgms.pipeline.systems.record import Attempt
from tgms.pipeline.systems.tgms_memory import TaskMemory


class TgmsConfig(SystemConfig):
    contracts: bool = True  # the verifier's declared-output-field check
    units: bool = True  # the verifier's units check (a sum of time points, a count from a time)
    taint: bool = True  # truncation taint (executor and claim verifier)
    gating: bool = True  # drop unsupported claims / abstain
    constrained: bool = False  # the generic plan schema as the response format (= plan_schema "generic")
    #: the planner's response format (models.planner.PlannerConfig.schema); its default is in every cell
    #: spec like any knob's (pipeline.campaign.cell_spec)
    plan_schema: Literal["none", "generic", "per_operator"] = "none"
    #: the operators a per-operator schema offers: those the task's prompt documents, or all 17
    #: (models.planner.PlannerConfig.schema_scope)
    schema_scope: Literal["shown", "all"] = "shown"
    memory: bool = False  # evolution memory: weekly notes of the question's window in the planner prompt
    memory_k: int = Field(3, ge=1, le=10)  # notes per prompt at most
    #: worked plans: "fixed" (two in the static prefix) or "retrieved" (the k nearest of the suite's
    #: train split in the task's message; pipeline.systems.worked_plans). Retrieved is the default: it took
    #: Qwen2.5-Coder-0.5B from 0/12 to 9/12 on the same dev tasks (docs/benchmarks.md)
    examples: Literal["fixed", "retrieved"] = "retrieved"
    examples_k: int = Field(2, ge=1, le=8)  # worked plans retrieved per question
    #: what retrieval embeds question shapes with: the real all-MiniLM-L6-v2, or feature hashing (no model
    #: to load: for pipeline checks against a test double, ``experiment=smoke``; never a reported figure)
    examples_embedder: Literal["minilm", "hashing"] = "minilm"
    #: the operator manual: "full" (every block in the prefix) or "retrieved" (the blocks of the worked
    #: plans' operators in the task's message; needs examples="retrieved")
    manual: Literal["full", "retrieved"] = "retrieved"
    time_names: bool = True  # the question's µs numbers as named constants T1, D1 a plan may write
    #: repairs sent greedy; later repairs are seeded samples (models.planner.PlannerConfig.greedy_repairs)
    greedy_repairs: int = Field(1, ge=0, le=16)
    #: a repeated reply is asked again at once without spending the repair budget, up to this many times a
    #: task (models.planner.PlannerConfig.repeat_redraws)
    repeat_redraws: int = Field(2, ge=0, le=8)


@system("tgms", config=TgmsConfig)
def tgms(config: TgmsConfig, env: SystemEnv) -> Runner:
    """Planner → verifier → repair → executor → reporter → claim verifier → gate."""
    card = dataset_card(env.store(), env.dataset)
    results = ResultStore(Path(env.work_dir) / "results")
    exec_config = ExecConfig(taint=config.taint)
    planner = PlannerConfig(
        repair_budget=env.settings.repair_budget,
        contracts=config.contracts,
        units=config.units,
        constrained=config.constrained,
        schema=config.plan_schema,
        schema_scope=config.schema_scope,
        greedy_repairs=config.greedy_repairs,
        repeat_redraws=config.repeat_redraws,
        layout=PromptLayout(config.examples, config.manual, config.time_names),
    )
    index = None
    if config.examples == "retrieved" and env.train:  # without a train split the fixed plans stand in
        from tgms.pipeline.systems.worked_plans import WorkedPlanIndex  # loads the embedder

        index = WorkedPlanIndex(env.train, embedder=config.examples_embedder)
    store_digest = env.store().digest()
    memory = TaskMemory(env, store_digest, config.memory_k) if config.memory else None
    local = threading.local()  # one OpContext per thread (its caches outlive a task), over env's store

    def context() -> OpContext:
        if getattr(local, "ctx", None) is None:
            local.ctx = OpContext(env.store())
        return local.ctx

    def run(task: Task, draft: RecordDraft) -> None:
        rec = draft.record
        ctx = context()

        def run_plan(plan: dict[str, Any]) -> Trace:
            return execute(build_plan(plan), ctx, results, exec_config, store_digest=store_digest)

        notes = ""
        if memory is not None:  # the question's own window, never the oracle plan's
            notes, rec.extras["memory"] = memory.for_task(ctx, task.question)
        ptask = PlanTask(
            task_id=task.id,
            question=task.question,
            input_uids=task.input_uids,
            kind=task.answer_kind,
            card=card,
            memory=notes,
            examples=(
                index.nearest(task.question, config.examples_k, names_uids=bool(task.input_uids))
                if index is not None
                else ()
            ),
        )
        if config.examples == "retrieved":  # the worked plans the task's message showed (train ids, fixed:N)
            rec.extras["worked_plans"] = [ex.source for ex in shown_examples(ptask, planner.layout)]
        outcome = PlanOutcome(attempts=[])
        try:
            plan_and_run(draft.calls.complete, ptask, ctx, run_plan, planner, outcome)
        finally:  # an endpoint failure part way keeps the attempts made so far in the record
            _record_plan(rec, outcome)
        draft.artifacts.update(plan=outcome.plan, trace=outcome.trace)
        last = outcome.attempts[-1] if outcome.attempts else None
        if outcome.trace is None and not outcome.exhausted and last and last.runtime_error:
            raise error_from_dict(last.runtime_error)  # not the model's doing (e.g. a backend failure)
        if outcome.exhausted or outcome.trace is None:
            raise ModelOutputError(
                f"no usable plan after {len(outcome.attempts)} attempts",
                attempts=len(outcome.attempts),
                last_violations=(last.violations if last else [])[:5],
                last_runtime_error=last.runtime_error if last else None,
            )
        trace = outcome.trace
        got = trace.answer()
        if got is None or "error" in got:  # a run that failed in a way no repair could fix
            rec.status = "abstained"
            rec.extras["no_answer"] = (got or {}).get("error", "the plan has no answer_spec")
            return
        reported = report(draft.calls.complete, task.question, trace)
        rec.reporter = reported.source
        if reported.bound:  # no claim from the model: its typed answer was bound to answer_spec.from
            rec.extras["answer_bound"] = True
        if reported.problems:
            rec.extras["reporter_problems"] = reported.problems
        if reported.answer is None:
            rec.status = "abstained"
            return
        answer = reported.answer
        rec.extras["reporter_answer"] = answer
        verdicts = verify_claims(answer, trace, ctx, VerifyConfig(taint=config.taint))
        decision = gate(parse_answer(answer), verdicts)
        rec.claim_verdicts = [v.to_dict() for v in verdicts]
        rec.gate = {k: v for k, v in decision.items() if k != "verdicts"}
        if not config.gating:
            rec.answer, rec.status = answer, "answered"
        elif decision["emitted"]:
            rec.answer = {k: decision[k] for k in ("text", "answer", "claims") if k in decision}
            rec.status = "answered"
        else:
            rec.answer, rec.status = None, "abstained"

    return run


def _record_plan(rec: Any, outcome: PlanOutcome) -> None:
    rec.attempts = [Attempt(**a.to_dict()) for a in outcome.attempts]
    rec.first_emission_valid = outcome.first_emission_valid
    rec.repeat_replies = outcome.repeat_replies if outcome.attempts else None
    if outcome.trace is not None:
        rec.trace_digest = outcome.trace.digest
        rec.trace_status = outcome.trace.status
        rec.extras["plan"] = outcome.plan
