"""Two slips of small models' plans put right before the verifier sees them: a bare step, and arguments
written beside ``op``.

On people's questions the 1.5B model's last replies were often not plans but one step (``{"id": "s1",
"op": ..., "args": ..., "depends_on": []}`` at the top, sometimes with ``answer_spec`` beside it), or a
step whose arguments stood next to ``op`` (``{"op": "aggregate_events", "aggregates": [...]}``); 6 of
the 18 of 40 tasks left unanswered ended in such shapes after every repair (2026-12-05). What the model
meant is not in doubt in either case, so :func:`reshape` restores the shape, and only that:

- an object with ``op`` and no ``steps`` becomes ``{"steps": [that step], "answer_spec": ...}`` (the
  top-level ``answer_spec`` kept, the step's keys moved into it);
- a key beside a step's ``op`` that the operator takes as an argument, and that ``args`` does not hold,
  moves into ``args``.

Nothing is invented: a missing ``answer_spec``, step id or argument stays missing and the verifier names
it; a key that is no argument of the operator stays where it is and is refused as before. The attempt
records the reply as the model wrote it; :func:`reshape` also says what it moved (for tests and callers).
"""

from __future__ import annotations

from typing import Any

from tgms.engine.api import TGMSError, get_operator

STEP_KEYS = ("id", "op", "args", "depends_on")
PLAN_ONLY = ("answer_spec", "plan_id", "question")  # kept at the plan's level when a bare step is wrapped


def _arg_names(op: Any) -> frozenset[str]:
    """The argument names an operator's call spells (aliases for Python keywords: compute's ``as``)."""
    if not isinstance(op, str):
        return frozenset()
    try:
        spec = get_operator(op)
    except (TGMSError, KeyError):
        return frozenset()
    return frozenset(f.alias or n for n, f in spec.args.model_fields.items())


def _step(raw: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    names = _arg_names(raw.get("op"))
    args = raw.get("args")
    if not names or not (args is None or isinstance(args, dict)):
        return raw
    loose = sorted(k for k in raw if k not in STEP_KEYS and k in names and k not in (args or {}))
    if not loose:
        return raw
    notes.append(f"{where}: moved {', '.join(loose)} into args")
    step = {k: v for k, v in raw.items() if k not in loose}
    step["args"] = {**(args or {}), **{k: raw[k] for k in loose}}
    return step


def reshape(raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The plan with a bare step wrapped and loose arguments moved (module docstring), and notes saying
    what was changed (none: the plan is returned as it was)."""
    notes: list[str] = []
    plan = raw
    if "steps" not in raw and "op" in raw:
        step = {k: v for k, v in raw.items() if k not in PLAN_ONLY}
        plan = {"steps": [step], **{k: raw[k] for k in PLAN_ONLY if k in raw}}
        notes.append("the reply was one step: wrapped in steps")
    steps = plan.get("steps")
    if isinstance(steps, list):
        fixed = [_step(s, f"steps[{i}]", notes) if isinstance(s, dict) else s for i, s in enumerate(steps)]
        if notes:
            plan = {**plan, "steps": fixed}
    return plan, notes
