"""The mechanical reporter: the answer object a trace and its ``answer_spec`` determine, built without an LLM.

It produces the gold answer objects of the task suites and is the oracle reporter the LLM reporter is
compared with. Per answer kind (the value ``answer_spec.from`` names):

==============  =====================================================================================
kind            typed answer value / claims
==============  =====================================================================================
count           the int (or the length of a named list) / a ``count`` claim ``from`` the field
value, boolean  the value / a ``value`` claim
rows            the list / a ``value`` claim
interval        ``[s, e]`` from ``[s, e]``, ``{vt_s, vt_e}``, ``{t_a, t_b}`` / a ``value`` claim
entity          the uid (a string, or an object's ``uid``) / an ``entity`` claim
entity_set      the sorted distinct uids (strings, or objects' ``uid``) / an ``entity`` claim; for an
                empty set, a ``count`` claim of 0 on the named list (there is nothing to name)
relation        the Allen relation / an ``ordering`` claim with the operands of the step that computed
                it (its operator's ``allen`` trait; refs stay refs, citing their steps), else a ``value``
                claim
==============  =====================================================================================

An answer whose ``from`` measures something its kind cannot be read from (a count from a time point; the
units of :mod:`engine.plan.units`) gets no claims, like a value of the wrong shape.

A count read from an output field the operator declares a pattern count (``Traits.pattern_counts``:
count_temporal_motifs' ``count``) also gets a ``temporal_pattern`` claim re-executing the call.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.claims.evidence import as_interval, uid_of
from tgms.engine.execute.executor import Trace
from tgms.engine.operators.registry import REGISTRY, load_all
from tgms.engine.operators.traits import NO_TRAITS, AllenCall, Traits
from tgms.engine.plan.refs import Ref, is_ref
from tgms.engine.plan.units import answer_unit_problem, plan_units, ref_units


def typed_value(kind: str, value: Any) -> Any:
    """The typed answer value of ``kind`` that a raw ``answer_spec.from`` value stands for; ``ValueError``
    naming the problem when it does not have the kind's shape."""
    if kind == "count":
        if isinstance(value, list):
            return len(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError("not an integer")
        return value
    if kind == "boolean" and not isinstance(value, bool):
        raise ValueError("not a boolean")
    if kind == "rows" and not isinstance(value, list):
        raise ValueError("not a list")
    if kind == "interval":
        iv = as_interval(value) if not isinstance(value, int) else None
        if iv is None:
            raise ValueError("not an interval")
        return [iv[0], iv[1]]
    if kind == "entity":
        uid = uid_of(value)
        if uid is None:
            raise ValueError("not a uid")
        return uid
    if kind == "entity_set":
        if not isinstance(value, list) or any(uid_of(v) is None for v in value):
            raise ValueError("not a list of uids")
        return sorted({uid_of(v) for v in value})
    if kind == "relation" and not isinstance(value, str):
        raise ValueError("not a relation name")
    return value


def _text(kind: str, value: Any) -> str:
    """A plain sentence that mentions only what the claims state (so its coverage is complete)."""
    if kind == "entity_set":
        return ("The entities are " + ", ".join(value) if value else "There are no such entities") + "."
    if kind == "interval":
        return f"The interval is [{value[0]}, {value[1]})."
    if kind == "relation":
        return f"The first interval {value.replace('_', ' ')} the second."
    return f"The answer is {value}."


def mechanical_answer(trace: Trace) -> dict[str, Any]:
    """The answer object for ``trace`` (``{text, answer, claims}``); ``claims`` is empty and ``text``
    says why when the answer step failed or its value does not have the kind's shape."""
    got = trace.answer()
    if got is None:
        return {"text": "no answer_spec", "claims": []}
    kind, src = got["kind"], got["from"]
    if "error" in got:
        return {"text": f"no answer: {got['error']}", "claims": []}
    value = got["value"]
    step = Ref.parse(src).step
    claims: list[dict[str, Any]] = []

    def claim(typ: str, **body: Any) -> None:
        ev = body.pop("evidence", [step])
        claims.append({"id": f"c{len(claims) + 1}", "type": typ, "evidence": ev, **body})

    def unusable(why: str) -> dict[str, Any]:
        return {"text": f"no answer: {src} is {why} for a {kind} answer", "claims": []}

    try:
        value = typed_value(kind, value)
    except ValueError as exc:
        return unusable(str(exc))
    # the verifier's units (engine.plan.units): a count read off a time point is not a count, whatever
    # its JSON type says
    measured = answer_unit_problem(kind, ref_units(plan_units(trace.plan), Ref.parse(src)))
    if measured is not None:
        return unusable(measured)
    rec = trace.record(step)
    traits = _traits(rec.op) if rec is not None else NO_TRAITS
    if kind == "count":
        claim("count", value=value, **{"from": src})
        field = Ref.parse(src)
        if rec is not None and not field.path and field.field in traits.pattern_counts:
            args = trace.resolved_args(step)
            if args is not None:
                claim(
                    "temporal_pattern",
                    assertion={"op": rec.op, "args": args, "field": field.field, "value": value},
                )
    elif kind in ("value", "boolean", "rows", "interval"):
        claim("value", value=value, **{"from": src})
    elif kind == "entity":
        claim("entity", uids=[value], **{"from": src})
    elif kind == "entity_set":
        if value:
            claim("entity", uids=value, **{"from": src})
        else:  # nothing to name: the claim is that there are none
            claim("count", value=0, **{"from": src})
    elif kind == "relation":
        args = trace.resolved_args(step) if rec is not None else None
        raw = _raw_args(trace, step)
        if traits.allen is not None and args and traits.computes_allen(args) and raw:
            a, b = _operands(traits.allen, raw)
            ea = [Ref.parse(x).step for x in (a, b) if isinstance(x, str)]
            claim(
                "ordering",
                a=a if a is not None else args.get("a"),
                b=b if b is not None else args.get("b"),
                relation=value,
                evidence=list(dict.fromkeys([step, *ea])),
                **{"from": src},
            )
        else:
            claim("value", value=value, **{"from": src})
    return {
        "text": _text(kind, value),
        "answer": {"kind": kind, "value": value},
        "claims": claims,
    }


def _raw_args(trace: Trace, sid: str) -> dict[str, Any] | None:
    """The step's arguments as planned (refs unresolved), kept by the trace's plan copy."""
    return trace.step_args.get(sid)


def _traits(op: str) -> Traits:
    load_all()
    spec = REGISTRY.get(op)
    return spec.traits if spec is not None else NO_TRAITS


def _operands(allen: AllenCall, raw: dict[str, Any]) -> tuple[Any, Any]:
    """``a`` and ``b`` of a step computing an Allen relation: a ref becomes its ref string, a literal
    stays."""
    a, b = raw.get(allen.a), raw.get(allen.b)
    pair = raw.get(allen.pair) if allen.pair else None
    if a is None and b is None and isinstance(pair, list) and len(pair) == 2:
        a, b = pair
    elif a is None and b is None and is_ref(pair) and "[*]" not in pair["$ref"]:
        return f"{pair['$ref']}[0]", f"{pair['$ref']}[1]"  # one ref to the [a, b] list
    return tuple(
        x["$ref"] if is_ref(x) and "[*]" not in x["$ref"] else None if is_ref(x) else x for x in (a, b)
    )  # type: ignore[return-value]
