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
- **Only what is wrong is repaired, and what is wrong is not quoted.** The section names the failing steps
  and fields, each problem with the verifier's ``legal`` alternatives, and lists the steps to keep as they
  are (``targets``, fenced: step ids are the model's own strings). The step arguments and answer fields a
  problem names are left out of the quoted plan on every repair (:func:`failing_fields`): measured on 40
  analyst questions (Qwen2.5-Coder-1.5B), 16 of 147 repair replies were byte-identical to the reply before
  them, most after a first, greedy repair that quoted the whole plan, and a plan of one failing step was
  quoted whole even after a repeat. A model shown every value it wrote copies them; shown the plan without
  the refused values it has to write those anew.
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

from tgms.engine.api import operator_schemas
from tgms.models.config import Sampling
from tgms.models.manual import COMMON_ARGS
from tgms.models.prompting import fence, fence_json

__all__ = [
    "Sampling",
    "failing_fields",
    "operators_taking",
    "repair_messages",
    "repeat_seed",
    "repeat_temperature",
]

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
#: the keys a plan may have: a problem naming one of them is about its value (steps, answer_spec), not a
#: stray key to leave out of the quote
PLAN_SHAPE = (*TASK_KEYS, "steps", "answer_spec")


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
    step_args = step.get("args")
    args = step_args if isinstance(step_args, dict) else {}
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


#: the key of :func:`failing_fields` that names the answer's fields (never a step id: ids are ``s1``, ...,
#: and a step named so would only lose its quoted answer fields too)
ANSWER = "answer_spec"
#: its key for the plan's own unknown keys (a step's keys or arguments written at the top: the 1.5B model
#: copied such a reply back byte for byte when it was quoted whole)
TOP = "*plan*"


def _arg_named(fld: str, args: dict[str, Any]) -> str | None:
    """The key of ``args`` that field path ``fld`` is in: ``args.window.t_a`` → ``window``, ``args.src[0]``
    → ``src``; None for ``args`` as a whole or a key the step does not have. Matched against the step's own
    keys, not split on ``.``: a key the model wrote may hold dots or brackets itself."""
    for key in sorted((k for k in args if isinstance(k, str)), key=len, reverse=True):  # longest first
        head = f"args.{key}"
        if fld == head or fld.startswith((head + ".", head + "[")):
            return key
    return None


def failing_fields(problems: list[dict[str, Any]], plan: dict[str, Any] | None) -> dict[str, frozenset[str]]:
    """The quoted plan's values a problem names, left out of every repair's quote: per step id, the step
    arguments (``args.window.t_a`` leaves out ``window``), and under :data:`ANSWER` the answer_spec keys
    (``answer_spec.from`` leaves out ``from``), and under :data:`TOP` the plan's own unknown keys (a
    step's keys written at the top). A problem of a whole step, of ``args`` as a whole or of no field
    leaves nothing out: the step stays quoted, so the model keeps the plan's shape."""
    out: dict[str, set[str]] = {}
    spec = plan.get("answer_spec") if isinstance(plan, dict) else None
    for p in problems:
        fld = _field_of(p) or ""
        if not p.get("step") and isinstance(plan, dict) and fld in plan and fld not in PLAN_SHAPE:
            out.setdefault(TOP, set()).add(fld)  # an unknown key of the plan itself
            continue
        if fld.startswith("answer_spec.") and isinstance(spec, dict):
            key = next(
                (k for k in spec if fld == f"answer_spec.{k}" or fld.startswith(f"answer_spec.{k}.")), None
            )
            if key is not None:
                out.setdefault(ANSWER, set()).add(key)
            continue
        step = _step(plan, p.get("step")) if p.get("step") else None
        args = step.get("args") if step is not None else None
        name = _arg_named(fld, args) if isinstance(args, dict) else None
        if name is not None:
            out.setdefault(str(p["step"]), set()).add(name)
    return {k: frozenset(v) for k, v in out.items()}


def _without(
    plan: dict[str, Any], left_out: frozenset[str], fields: dict[str, frozenset[str]]
) -> dict[str, Any]:
    """The plan as quoted: without the task's keys, the steps in ``left_out`` and the ``fields``."""
    shown = {k: v for k, v in plan.items() if k not in TASK_KEYS and k not in fields.get(TOP, ())}
    steps = shown.get("steps")
    if isinstance(steps, list):
        kept = []
        for s in steps:
            if isinstance(s, dict) and s.get("id") in left_out:
                continue
            drop = fields.get(str(s.get("id"))) if isinstance(s, dict) else None
            if drop and isinstance(s.get("args"), dict):
                s = {**s, "args": {k: v for k, v in s["args"].items() if k not in drop}}
            kept.append(s)
        shown["steps"] = kept
    if fields.get(ANSWER) and isinstance(shown.get("answer_spec"), dict):
        shown["answer_spec"] = {k: v for k, v in shown["answer_spec"].items() if k not in fields[ANSWER]}
    return shown


def quoted(
    reply: str,
    plan: dict[str, Any] | None,
    left_out: frozenset[str] = frozenset(),
    fields: dict[str, frozenset[str]] | None = None,
) -> str:
    """The previous attempt as data: its plan as compact JSON (without the keys the task fills in, the
    steps in ``left_out`` and the failing ``fields``), or the raw reply's head when it held no plan.
    Fenced, so whatever it quotes (stored values the model echoed, text that looks like instructions) is
    read as data."""
    if plan is None:
        return fence(reply, "previous_reply", REPLY_ECHO_LIMIT)
    shown = _without(plan, left_out, fields or {})
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
    fields = failing_fields(problems, plan)
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
    if plan is not None:
        # said whether or not a value was left out: the text outside the fences never depends on what
        # the model wrote (tests/redteam/test_fences.py)
        what += "; a value a problem names is left out of the quote: write it anew"
    aim = targets(problems, plan)
    lines = [
        f"REPAIR. Your attempt {n} of {of} {what}:",
        quoted(reply, plan, left_out, fields),
        "Problems, each with what is legal instead:",
        fence(describe(problems, plan), "problems", VIOLATIONS_LIMIT),
    ]
    if aim["change"]:
        lines += [
            "Change only what the problems name (change), writing anew what the quote leaves out; copy every "
            "step listed under keep, and the rest of the plan, exactly as quoted:",
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
