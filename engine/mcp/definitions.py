"""The MCP tool list: a tool per operator, generated from the registry, plus the plan, claim and write tools.

Operator tools are exactly :func:`engine.operators.schemas.tool_definitions` (what ``tgms schema`` prints):
name, the manual entry as description, the args model's JSON Schema as ``inputSchema`` and the payload's
as ``outputSchema``. The other tools are not operators: their arguments are declared here as strict models
(validated like an operator's, ``E_SCHEMA``/``E_INVALID_ARG``) and their schemas generated from them:

- ``verify_plan``: the static verifier's report (every violation at once);
- ``run_plan``: verify, execute, and return the trace digest, the mechanical answer and the trace;
- ``verify_answer``: each claim's verdict against a trace, the gate's decision and the text coverage;
- ``write_batch`` (only when writes are enabled): one batch of assert/retract/correct ops, logged in the
  store's event log before it is applied, like every write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field

from tgms.engine.claims.answer import CLAIM_TYPES
from tgms.engine.claims.gate import GATED_TYPES
from tgms.engine.operators.base import Model, OneOf
from tgms.engine.operators.schemas import model_schema, tool_definitions
from tgms.engine.plan.verifier import CHECKS

VERIFY_PLAN = "verify_plan"
RUN_PLAN = "run_plan"
VERIFY_ANSWER = "verify_answer"
WRITE_BATCH = "write_batch"

Check = Annotated[str, OneOf(CHECKS)]
ClaimType = Annotated[str, OneOf(CLAIM_TYPES)]


class VerifyPlanArgs(Model):
    plan: dict[str, Any] = Field(
        description="the plan: {plan_id, question, steps: [{id, op, args, depends_on}], answer_spec: "
        '{kind, from}}; an argument may be {"$ref": "sN.field..."} into a step named in depends_on'
    )
    task_uids: list[str] | None = Field(
        None, description="uids given in the task input (default: the store uids the question mentions)"
    )
    without: list[Check] = Field([], description="verifier checks to switch off (ablations)")


class RunPlanArgs(VerifyPlanArgs):
    no_verify: bool = Field(False, description="run the plan even if static verification fails")
    embed: bool = Field(False, description="embed every step's result envelope in the returned trace")


class VerifyAnswerArgs(Model):
    answer: dict[str, Any] = Field(
        description="the answer object {text, answer?, claims} (or a run_plan result)"
    )
    trace: dict[str, Any] = Field(
        description="the trace the answer cites (or the run_plan result holding it)"
    )
    no_taint: bool = Field(False, description="ignore evidence completeness (ablation)")
    gated_types: list[ClaimType] = Field(list(GATED_TYPES), description="claim types the gate may drop")
    any_store: bool = Field(
        False, description="skip the check that the trace was recorded on this store state"
    )


class WriteBatchArgs(Model):
    ops: list[dict[str, Any]] = Field(
        min_length=1, description="the batch: its ops are applied all together or not at all"
    )


@dataclass(frozen=True)
class ExtraTool:
    """A tool that is not an operator: its name, description and arguments model."""

    name: str
    description: str
    args: type[BaseModel]

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": model_schema(self.args)}


EXTRA_TOOLS: tuple[ExtraTool, ...] = (
    ExtraTool(
        VERIFY_PLAN,
        "Statically verify a plan against the store without running it: returns {valid, violations, "
        "checks, estimates_s, task_uids}. Every violation is reported at once, each naming its step and "
        "field and what would be legal instead (declared outputs, argument names, the dataset extent, a "
        "narrowing that passes the cost guard).",
        VerifyPlanArgs,
    ),
    ExtraTool(
        RUN_PLAN,
        "Verify a plan, then execute it: returns {status, trace_digest, answer, verification, trace}. The "
        "answer is the mechanical one the trace determines, with its claims; the trace lists each step's "
        "status, result digest, rows and truncation taint. Step results are kept by digest on the server, "
        "so the trace can be passed to verify_answer. A plan that fails verification is refused "
        "(E_INVALID_ARG listing the violations) unless no_verify is set.",
        RunPlanArgs,
    ),
    ExtraTool(
        VERIFY_ANSWER,
        "Verify an answer's claims against the trace they cite: returns {verdicts, gate, coverage}. Each "
        "claim is rated supported / weakly_supported / unsupported / unverifiable; the gate drops "
        "unsupported claims and abstains when nothing supported is left. A trace recorded on another store "
        "state is refused unless any_store is set.",
        VerifyAnswerArgs,
    ),
)

WRITE_TOOLS: tuple[ExtraTool, ...] = (
    ExtraTool(
        WRITE_BATCH,
        "Write one batch of ops to the store (listed only when the server runs with --allow-writes). Ops: "
        "assert_node {uid, label?, props?, vt_s, vt_e?}, assert_edge {src, dst, rel_type, disc?, props?, "
        "vt_s, vt_e?}, retract {ref, t}, correct {ref, props, vt_s?, vt_e?}; a ref is {uid}, {src, dst, "
        "rel_type, disc?}, {eid} or {vid}. Times are int epoch microseconds (UTC). The batch is fsynced to "
        "the store's event log before it is applied; a batch that fails is logged as failed, changes "
        "nothing and comes back as the structured error. Returns {seq, tt, status, stats}.",
        WriteBatchArgs,
    ),
)

#: names of the tools that are not operators (an operator may not take one of these names)
EXTRA_TOOL_NAMES = frozenset(t.name for t in EXTRA_TOOLS + WRITE_TOOLS)


def tool_list(*, allow_writes: bool = False) -> list[dict[str, Any]]:
    """Every tool the server lists: the operators (registry order), then the plan and claim tools, then
    the write tools when writes are enabled. Fresh dicts: a caller may change them freely."""
    tools = tool_definitions()
    clash = EXTRA_TOOL_NAMES & {t["name"] for t in tools}
    if clash:  # a registry change must not silently shadow a tool
        raise RuntimeError(f"operator names clash with MCP tool names: {sorted(clash)}")
    extra = EXTRA_TOOLS + (WRITE_TOOLS if allow_writes else ())
    return tools + [t.definition() for t in extra]
