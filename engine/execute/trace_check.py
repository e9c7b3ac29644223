"""Checking a trace that came from outside (a file, an MCP client) before it is rebuilt.

:func:`engine.execute.executor.trace_from_dict` trusts its input (the executor wrote it); a trace handed in
by a user or an agent may be anything. :func:`trace_object` accepts a trace, or a ``plan run`` output whose
``trace`` it takes, and refuses anything that would not rebuild (``E_SCHEMA`` listing the problems), so a
malformed trace is a structured error instead of a ``TypeError`` deep inside the claim verifier.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.errors import SchemaError

_STR, _INT, _NUM, _BOOL, _DICT, _LIST = (str,), (int,), (int, float), (bool,), (dict,), (list,)
_STEP_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {  # name -> (types, may be null)
    "id": (_STR, False),
    "op": (_STR, False),
    "depends_on": (_LIST, False),
    "status": (_STR, False),
    "error": (_DICT, True),
    "args_digest": (_STR, True),
    "result_digest": (_STR, True),
    "envelope_digest": (_STR, True),
    "rows": (_INT, True),
    "rows_total": (_INT, True),
    "truncated": (_BOOL, False),
    "upstream_truncated": (_BOOL, False),
    "reads": (_LIST, False),
    "ref_cuts": (_LIST, False),
    "estimate_s": (_NUM, True),
    "wall_ms": (_NUM, True),
}
_TRACE_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {
    "plan_id": (_STR, False),
    "plan_digest": (_STR, False),
    "question": (_STR, False),
    "answer_spec": (_DICT, True),
    "config": (_DICT, False),
    "store_digest": (_STR, True),
    "plan": (_DICT, True),
    "envelopes": (_DICT, True),
    "resolved_args": (_DICT, True),
}


def _type_problem(where: str, value: Any, types: tuple[type, ...], nullable: bool) -> str | None:
    if value is None and nullable:
        return None
    if isinstance(value, bool) and bool not in types:  # bool is an int to Python, not to JSON
        return f"{where} has the wrong type"
    return None if isinstance(value, types) else f"{where} has the wrong type"


def trace_problems(raw: dict[str, Any]) -> list[str]:
    """What keeps ``raw`` (a dict with a ``steps`` list) from being rebuilt as a trace."""
    out = []
    for name, (types, nullable) in _TRACE_FIELDS.items():
        if name in raw and (p := _type_problem(name, raw[name], types, nullable)):
            out.append(p)
    for name in ("envelopes", "resolved_args"):
        if isinstance(raw.get(name), dict) and not all(
            v is None or isinstance(v, dict) for v in raw[name].values()
        ):
            out.append(f"{name} must map digests to objects")
    for i, step in enumerate(raw["steps"]):
        if not isinstance(step, dict):
            out.append(f"steps[{i}] is not an object")
            continue
        for name in ("id", "op", "depends_on"):
            if name not in step:
                out.append(f"steps[{i}] has no {name!r}")
        for name, (types, nullable) in _STEP_FIELDS.items():
            if name in step and (p := _type_problem(f"steps[{i}].{name}", step[name], types, nullable)):
                out.append(p)
        if isinstance(step.get("depends_on"), list) and not all(
            isinstance(d, str) for d in step["depends_on"]
        ):
            out.append(f"steps[{i}].depends_on must list step ids")
        for name in ("reads", "ref_cuts"):
            if isinstance(step.get(name), list) and not all(isinstance(r, dict) for r in step[name]):
                out.append(f"steps[{i}].{name} must list objects")
        for j, read in enumerate(step.get("reads") or []):
            if isinstance(read, dict) and "full" in read and not _full_read(read["full"]):
                out.append(f"steps[{i}].reads[{j}].full must be {{items: int, digest: str}}")
    return out


def _full_read(full: Any) -> bool:
    """What a read past a producer's cut page records: how many elements it read and their digest."""
    return (
        isinstance(full, dict)
        and set(full) == {"items", "digest"}
        and isinstance(full["items"], int)
        and not isinstance(full["items"], bool)
        and isinstance(full["digest"], str)
    )


def trace_object(raw: Any, name: str = "TRACE.json") -> dict[str, Any]:
    """The trace in ``raw`` (a trace, or a ``plan run`` output holding one), checked to rebuild."""
    if isinstance(raw, dict) and isinstance(raw.get("trace"), dict):
        raw = raw["trace"]
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list):
        raise SchemaError(f"{name} is not a trace (no steps list)", field="trace")
    problems = trace_problems(raw)
    if problems:
        raise SchemaError(f"{name} is not a trace: {problems[0]}", field="trace", problems=problems[:20])
    return raw


def answer_object(raw: Any) -> Any:
    """The answer object in ``raw``: itself, or the ``answer`` of a ``plan run`` output."""
    if isinstance(raw, dict) and "claims" not in raw and isinstance(raw.get("answer"), dict):
        return raw["answer"]
    return raw
