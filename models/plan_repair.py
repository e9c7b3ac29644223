"""The planner's repair turn, and the seeded fallback for a reply that repeats (issue 25, item 1).

Measured before this module (Qwen2.5-Coder-1.5B and SmolLM2, temperature 0): 14 of 14 repair replies were
byte-identical to the bad reply before them. The old repair replayed the bad reply as the model's own
assistant turn; a greedy model then continues "its" text and writes the same plan again. So:

- **The bad plan is quoted as data, not replayed.** A repair request is the first request with one user
  turn: the task's message followed by the repair section, in which the previous plan (or, when the reply
  held no plan, the reply's head) is fenced like any other stored string (``<data name="previous_plan">``,
  docs/security.md) beside the fenced problems. No assistant turn is sent, so there is nothing for the
  model to continue; the static prefix and the task's message stay a byte-identical prefix of the request
  (a server reuses its cached prefix for the repair too).
- **Only what is wrong is repaired.** The section names the failing steps and fields, each problem with
  the verifier's ``legal`` alternatives, and lists the steps to keep as they are (``targets``, fenced:
  step ids are the model's own strings).
- **An argument the operator does not take names the operators that do.** Qwen2.5-Coder-1.5B wrote
  ``diff_snapshots`` with a ``uid`` for "contacts gained by n42" and, shown only diff_snapshots' legal
  arguments, repeated it; the operator it needed (``neighborhood_evolution``) takes ``uid``, ``t1`` and
  ``t2``. So an ``arg_name`` problem lists up to three operators that take the argument, those sharing
  most of the step's other arguments first (:func:`operators_taking`).
- **A repeat is re-asked without the failing steps, constrained, with seeded sampling.** When a reply's
  plan (canonical JSON) equals an earlier attempt's plan, or the raw reply is byte-identical to an earlier
  one, the repair is sent again with the failing steps left out of the quoted plan (the model cannot copy
  what it is not shown; it is told to write them anew; a plan whose every step fails is quoted whole), with
  the per-operator schema as the response format (``PlannerConfig.repeat_schema``: an argument the
  operator does not take, or a string where a number goes, cannot be written again), at
  ``temperature > 0`` rising with each repeat
  (:func:`repeat_temperature`; at 0.7 the 1.5B model still repeated 4 of 8 sampled retries when shown its
  whole plan) and a seed derived from the task id and the attempt number (:func:`repeat_seed`). The seed
  makes the sampled request one fixed request: the response cache keys on it, so a rerun gets the same
  sampled reply and stays deterministic.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from engine.api import operator_schemas
from models.config import Sampling
from models.manual import COMMON_ARGS
from models.prompting import fence, fence_json

__all__ = ["Sampling", "operators_taking", "repair_messages", "repeat_seed", "repeat_temperature"]

#: caps that keep a repair turn bounded (characters of escaped data)
REPLY_ECHO_LIMIT = 1500
PLAN_ECHO_LIMIT = 3000
LEGAL_LIMIT = 400
VIOLATIONS_LIMIT = 1500
#: sampling temperature of the first repeated repair: enough to leave the greedy path, low enough to stay
#: a plan; each further repeat adds REPEAT_STEP, up to REPEAT_TEMPERATURE_MAX
REPEAT_TEMPERATURE = 0.7
REPEAT_STEP = 0.3
REPEAT_TEMPERATURE_MAX = 1.3
#: temperature of the repairs after the greedy ones (PlannerConfig.greedy_repairs): cooler than a repeat's
#: retry, which must move away from a plan already refused
REPAIR_TEMPERATURE = 0.5
#: operators named beside an argument its operator does not take
OTHER_OPERATORS = 3
#: the plan keys the task fills in (the model is never asked to write them, so they are not quoted back)
TASK_KEYS = ("plan_id", "question")


def repeat_seed(task_id: str, attempt: int) -> int:
    """The sampling seed of attempt ``attempt`` of task ``task_id``: a 31-bit integer from SHA-256, so it is
    the same on every machine and run (Python's ``hash`` is salted per process) and fits every server's
    seed field."""
    digest = hashlib.sha256(f"tgms-repair\x00{task_id}\x00{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def repeat_temperature(repeats: int, base: float = REPEAT_TEMPERATURE) -> float:
    """The temperature of the retry after the ``repeats``-th repeated reply of a task (1, 2, ...)."""
    return round(min(base + REPEAT_STEP * max(repeats - 1, 0), max(base, REPEAT_TEMPERATURE_MAX)), 3)


def operators_taking(arg: str, step_args: set[str], op: str | None) -> list[str]:
    """Operators other than ``op`` that take ``arg``: those taking most of the step's other args first,
    then by name; at most :data:`OTHER_OPERATORS`."""
    wanted = step_args - set(COMMON_ARGS)  # every operator takes these: they say nothing about the fit
    found = []
    for name, schema in operator_schemas().items():
        takes = set((schema.get("args") or {}).get("properties") or {})
        if name != op and arg in takes:
            found.append((-len(wanted & takes), name))
    return [name for _, name in sorted(found)[:OTHER_OPERATORS]]


def _step(plan: dict[str, Any] | None, sid: Any) -> dict[str, Any] | None:
    steps = plan.get("steps") if isinstance(plan, dict) else None
    for s in steps if isinstance(steps, list) else []:
        if isinstance(s, dict) and s.get("id") == sid:
            return s
    return None


def _other_operators(v: dict[str, Any], plan: dict[str, Any] | None) -> str | None:
    """For an arg_name problem: the line naming operators that do take the argument."""
    fld = _field_of(v) or ""
    step = _step(plan, v.get("step"))
    if v.get("code") != "arg_name" or not fld.startswith("args.") or step is None:
        return None
    arg = fld.split(".", 2)[1]
    args = step.get("args") if isinstance(step.get("args"), dict) else {}
    op = step.get("op") if isinstance(step.get("op"), str) else None
    others = operators_taking(arg, set(args), op)
    return f"  operators that take {arg}: {', '.join(others)}" if others else None


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _legal(value: Any) -> str:
    text = value if isinstance(value, str) else _compact(value)
    return text if len(text) <= LEGAL_LIMIT else text[:LEGAL_LIMIT] + " …"


def describe(violations: list[dict[str, Any]], plan: dict[str, Any] | None = None) -> str:
    """One line per problem (code, where, message) with what would be legal instead (and, for an argument
    the operator does not take, the operators that take it)."""
    lines = []
    for v in violations:
        where = " ".join(str(x) for x in (v.get("step"), v.get("field")) if x)
        lines.append(
            f"- [{v.get('code') or v.get('error')}] {where}: {v.get('message', '')}".replace(" :", ":")
        )
        if v.get("legal") is not None:
            lines.append(f"  legal: {_legal(v['legal'])}")
        details = v.get("details") or {}
        for key in ("suggestions", "legal", "allowed"):
            if details.get(key):
                lines.append(f"  {key}: {_legal(details[key])}")
        other = _other_operators(v, plan)
        if other:
            lines.append(other)
    return "\n".join(lines)


def _field_of(problem: dict[str, Any]) -> str | None:
    f = problem.get("field") or (problem.get("details") or {}).get("field")
    return str(f) if f else None


def targets(problems: list[dict[str, Any]], plan: dict[str, Any] | None) -> dict[str, list[str]]:
    """What to change (``step.field``, a whole step, or ``answer_spec``) and which steps to keep as they are.

    A problem without a step (a schema error of the whole plan, an unreadable reply) names no target: the
    model then rewrites the plan, and ``keep`` is empty.
    """
    change: list[str] = []
    failing: set[str] = set()
    whole_plan = False
    for p in problems:
        step, fld = p.get("step"), _field_of(p)
        if fld and fld.startswith("answer_spec"):
            target = fld  # the answer's ref, not the step it names
        elif step:
            failing.add(str(step))
            target = f"{step}.{fld}" if fld else str(step)
        elif fld:
            target = fld
        else:
            whole_plan = True
            continue
        if target not in change:
            change.append(target)
    steps = plan.get("steps") if isinstance(plan, dict) else None
    ids = (
        [str(s.get("id")) for s in steps if isinstance(s, dict) and s.get("id")]
        if isinstance(steps, list)
        else []
    )
    keep = [] if whole_plan else [i for i in ids if i not in failing]
    return {"change": change, "keep": keep}


def quoted(reply: str, plan: dict[str, Any] | None, left_out: frozenset[str] = frozenset()) -> str:
    """The previous attempt as data: its plan as compact JSON (without the keys the task fills in and the
    steps in ``left_out``), or the raw reply's head when it held no plan. Fenced, so whatever it quotes
    (stored values the model echoed, text that looks like instructions) is read as data."""
    if plan is None:
        return fence(reply, "previous_reply", REPLY_ECHO_LIMIT)
    shown = {k: v for k, v in plan.items() if k not in TASK_KEYS}
    if left_out and isinstance(shown.get("steps"), list):
        shown["steps"] = [s for s in shown["steps"] if not (isinstance(s, dict) and s.get("id") in left_out)]
    try:
        text = _compact(shown)
    except (TypeError, ValueError):  # not JSON-serializable: quote the reply itself
        return fence(reply, "previous_reply", REPLY_ECHO_LIMIT)
    return fence(text, "previous_plan", PLAN_ECHO_LIMIT)


def failing_steps(problems: list[dict[str, Any]], plan: dict[str, Any] | None) -> frozenset[str]:
    """The ids of the plan's steps a problem names (what a repeat's repair leaves out of the quote). None
    when that would leave no step: an empty quote lost even the plan's shape (Qwen2.5-Coder-1.5B then wrote
    step keys at the plan's top level)."""
    named = {str(p.get("step")) for p in problems if p.get("step")}
    failing = frozenset(sid for sid in named if _step(plan, sid) is not None)
    steps = plan.get("steps") if isinstance(plan, dict) else None
    total = sum(1 for st in steps if isinstance(st, dict)) if isinstance(steps, list) else 0
    return failing if len(failing) < total else frozenset()


def repair_section(
    reply: str,
    plan: dict[str, Any] | None,
    problems: list[dict[str, Any]],
    runtime: bool,
    n: int = 1,
    of: int = 1,
    repeated: bool = False,
) -> str:
    """The repair section after attempt ``n`` of ``of`` (appended to the task's user message).
    ``repeated``: the reply repeated an earlier one, so its failing steps are left out of the quote."""
    left_out = failing_steps(problems, plan) if repeated else frozenset()
    if plan is None:
        what = "could not be read as a plan. Your reply is quoted below as data"
    elif runtime:
        what = "passed the verifier, but running it failed. Your plan is quoted below as data"
    else:
        what = "was rejected by the verifier. Your plan is quoted below as data"
    if left_out:
        what += (
            f" without the failing steps ({', '.join(sorted(left_out))}): you sent the same plan again, so "
            "write those steps anew, differently (another operator or other arguments)"
        )
    aim = targets(problems, plan)
    lines = [
        f"REPAIR. Your attempt {n} of {of} {what}:",
        quoted(reply, plan, left_out),
        "Problems, each with what is legal instead:",
        fence(describe(problems, plan), "problems", VIOLATIONS_LIMIT),
    ]
    if aim["change"]:
        lines += [
            "Change only what the problems name (change); copy every step listed under keep, and the rest of "
            "the plan, exactly as quoted:",
            fence_json(aim, "targets"),
        ]
    lines.append("Reply with the whole corrected plan JSON object only.")
    return "\n".join(lines)


def repair_messages(
    base: list[dict[str, Any]],
    reply: str,
    plan: dict[str, Any] | None,
    problems: list[dict[str, Any]],
    runtime: bool,
    n: int,
    of: int,
    repeated: bool = False,
) -> list[dict[str, Any]]:
    """A repair request: the first request's system message, and its user message with the repair section
    after it. One user turn and no assistant turn (see the module docstring)."""
    *head, task = base
    section = repair_section(reply, plan, problems, runtime, n, of, repeated)
    return [*head, {**task, "content": f"{task['content']}\n\n{section}"}]
