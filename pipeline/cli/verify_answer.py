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

from engine.errors import InvalidArgError, SchemaError
from engine.operators.context import OpContext
from engine.store import Store
from pipeline.cli._common import add_store, print_json, results_dir
from pipeline.cli.inputs import read_json

HELP = "verify an answer's claims: `tgms verify-answer ANSWER.json --trace TRACE.json --store DIR`"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("answer", metavar="ANSWER.json", help="the answer object")
    p.add_argument("--trace", required=True, metavar="TRACE.json", help="the trace the answer cites")
    add_store(p)
    p.add_argument(
        "--results",
        default=None,
        metavar="DIR",
        help="result store (default: where `tgms plan run` put them)",
    )
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
    return raw


def run(args: argparse.Namespace) -> int:
    from engine.claims.answer import parse_answer
    from engine.claims.gate import GateConfig, coverage, gate
    from engine.claims.verifier import VerifyConfig, verify_claims
    from engine.execute.executor import trace_from_dict
    from engine.execute.results import ResultStore

    answer = parse_answer(_answer_object(read_json(args.answer, "answer")))
    trace_raw = _trace_object(read_json(args.trace, "trace"))
    results = ResultStore(args.results or results_dir(args.store, write=False))
    trace = trace_from_dict(trace_raw, results)
    with Store.open(args.store, read_only=True) as store:
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
