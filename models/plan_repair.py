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
- **A repeat is re-asked with seeded sampling.** When a reply's plan (canonical JSON) equals an earlier
  attempt's plan, or the raw reply is byte-identical to an earlier one, the same repair is sent again with
  ``temperature > 0`` and a seed derived from the task id and the attempt number (:func:`repeat_seed`).
  The seed makes the sampled request one fixed request: the response cache keys on it, so a rerun gets the
  same sampled reply and stays deterministic.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from models.config import Sampling
from models.prompting import fence, fence_json

__all__ = ["Sampling", "repair_messages", "repeat_seed"]

#: caps that keep a repair turn bounded (characters of escaped data)
REPLY_ECHO_LIMIT = 1500
PLAN_ECHO_LIMIT = 3000
LEGAL_LIMIT = 400
VIOLATIONS_LIMIT = 1500
#: sampling temperature of a repeated repair: enough to leave the greedy path, low enough to stay a plan
REPEAT_TEMPERATURE = 0.7
#: the plan keys the task fills in (the model is never asked to write them, so they are not quoted back)
TASK_KEYS = ("plan_id", "question")


def repeat_seed(task_id: str, attempt: int) -> int:
    """The sampling seed of attempt ``attempt`` of task ``task_id``: a 31-bit integer from SHA-256, so it is
    the same on every machine and run (Python's ``hash`` is salted per process) and fits every server's
    seed field."""
    digest = hashlib.sha256(f"tgms-repair\x00{task_id}\x00{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _legal(value: Any) -> str:
    text = value if isinstance(value, str) else _compact(value)
    return text if len(text) <= LEGAL_LIMIT else text[:LEGAL_LIMIT] + " …"


def describe(violations: list[dict[str, Any]]) -> str:
    """One line per problem (code, where, message) with what would be legal instead."""
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


def quoted(reply: str, plan: dict[str, Any] | None) -> str:
    """The previous attempt as data: its plan as compact JSON (without the keys the task fills in), or the
    raw reply's head when it held no plan. Fenced, so whatever it quotes (stored values the model echoed,
    text that looks like instructions) is read as data."""
    if plan is None:
        return fence(reply, "previous_reply", REPLY_ECHO_LIMIT)
    shown = {k: v for k, v in plan.items() if k not in TASK_KEYS}
    try:
        text = _compact(shown)
    except (TypeError, ValueError):  # not JSON-serializable: quote the reply itself
        return fence(reply, "previous_reply", REPLY_ECHO_LIMIT)
    return fence(text, "previous_plan", PLAN_ECHO_LIMIT)


def repair_section(
    reply: str,
    plan: dict[str, Any] | None,
    problems: list[dict[str, Any]],
    runtime: bool,
    n: int = 1,
    of: int = 1,
) -> str:
    """The repair section after attempt ``n`` of ``of`` (appended to the task's user message)."""
    if plan is None:
        what = "could not be read as a plan. Your reply is quoted below as data"
    elif runtime:
        what = "passed the verifier, but running it failed. Your plan is quoted below as data"
    else:
        what = "was rejected by the verifier. Your plan is quoted below as data"
    aim = targets(problems, plan)
    lines = [
        f"REPAIR. Your attempt {n} of {of} {what}:",
        quoted(reply, plan),
        "Problems, each with what is legal instead:",
        fence(describe(problems), "problems", VIOLATIONS_LIMIT),
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
) -> list[dict[str, Any]]:
    """A repair request: the first request's system message, and its user message with the repair section
    after it. One user turn and no assistant turn (see the module docstring)."""
    *head, task = base
    section = repair_section(reply, plan, problems, runtime, n, of)
    return [*head, {**task, "content": f"{task['content']}\n\n{section}"}]
