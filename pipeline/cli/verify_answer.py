"""Verify an answer object against the trace it cites: ``tgms verify-answer ANSWER.json --trace TRACE.json
--store DIR`` prints ``{verdicts, gate, coverage}`` as JSON.

ANSWER.json is an answer object ``{text, answer?, claims}`` (or a ``tgms plan run`` output, whose
``answer`` is taken); TRACE.json is a trace (or a ``tgms plan run`` output, whose ``trace`` is taken).
Cited results are loaded from the trace's embedded envelopes or the result store (``--results``, default
``DIR/results``) and authenticated by digest. A trace recorded on another store state is refused.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.api import InvalidArgError, OpContext, SchemaError
from pipeline.cli._common import add_results, add_store, print_json, read_store, results_for_reading
from pipeline.cli.inputs import read_json

HELP = "verify an answer's claims: `tgms verify-answer ANSWER.json --trace TRACE.json --store DIR`"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("answer", metavar="ANSWER.json", help="the answer object")
    p.add_argument("--trace", required=True, metavar="TRACE.json", help="the trace the answer cites")
    add_store(p)
    add_results(p, "result store (default: where `tgms plan run` put them)")
    p.add_argument("--no-taint", action="store_true", help="ignore evidence completeness (ablation)")
    p.add_argument(
        "--gated-types",
        default="count,value,entity,ordering",
        metavar="T,T",
        help="claim types the gate may drop (default count,value,entity,ordering)",
    )
    p.add_argument("--any-store", action="store_true", help="skip the store-digest check of the trace")


def _answer_object(raw: Any) -> Any:
    if isinstance(raw, dict) and "claims" not in raw and isinstance(raw.get("answer"), dict):
        return raw["answer"]
    return raw


def _trace_object(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict) and isinstance(raw.get("trace"), dict):
        raw = raw["trace"]
    if not isinstance(raw, dict) or not isinstance(raw.get("steps"), list):
        raise SchemaError("TRACE.json is not a trace (no steps list)", field="trace")
    problems = [p for p in _trace_problems(raw)]
    if problems:
        raise SchemaError(f"TRACE.json is not a trace: {problems[0]}", field="trace", problems=problems[:20])
    return raw


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
    if isinstance(value, bool) and bool not in types:
        return f"{where} has the wrong type"
    return None if isinstance(value, types) else f"{where} has the wrong type"


def _trace_problems(raw: dict[str, Any]) -> list[str]:
    """What keeps ``raw`` from being rebuilt as a trace (the executor's own reader trusts its input)."""
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
    return out


def run(args: argparse.Namespace) -> int:
    from engine.api import (
        GateConfig,
        ResultStore,
        VerifyConfig,
        coverage,
        gate,
        parse_answer,
        trace_from_dict,
        verify_claims,
    )

    answer = parse_answer(_answer_object(read_json(args.answer, "answer")))
    trace_raw = _trace_object(read_json(args.trace, "trace"))
    results = ResultStore(args.results) if args.results else results_for_reading(args.store)
    trace = trace_from_dict(trace_raw, results)
    with read_store(args) as store:
        if trace.store_digest and not args.any_store:
            here = store.digest()
            if here != trace.store_digest:
                raise InvalidArgError(
                    "the trace was recorded on another store state; verify it against that store "
                    "(or pass --any-store)",
                    trace_store=trace.store_digest,
                    store=here,
                )
        ctx = OpContext(store)
        verdicts = verify_claims(answer, trace, ctx, VerifyConfig(taint=not args.no_taint))
        gated = gate(
            answer, verdicts, GateConfig(gated_types=tuple(t for t in args.gated_types.split(",") if t))
        )
        print_json(
            {
                "verdicts": [v.to_dict() for v in verdicts],
                "gate": gated,
                "coverage": coverage(answer, ctx.nid_index()),
            }
        )
    return 0
