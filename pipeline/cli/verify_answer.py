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

from tgms.engine.api import OpContext, answer_object, trace_object
from tgms.pipeline.cli._common import add_results, add_store, read_store, results_for_reading
from tgms.pipeline.console import print_json
from tgms.pipeline.inputs import read_json

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
    return answer_object(raw)


def _trace_object(raw: Any) -> dict[str, Any]:
    return trace_object(raw)


def run(args: argparse.Namespace) -> int:
    from tgms.engine.api import (
        ResultStore,
        check_answer,
        parse_answer,
        require_trace_store,
        trace_from_dict,
    )

    answer = parse_answer(_answer_object(read_json(args.answer, "answer")))
    trace_raw = _trace_object(read_json(args.trace, "trace"))
    results = ResultStore(args.results) if args.results else results_for_reading(args.store)
    trace = trace_from_dict(trace_raw, results)
    with read_store(args) as store:
        if not args.any_store:
            require_trace_store(trace, store.digest(), "--any-store")
        gated_types = tuple(t for t in args.gated_types.split(",") if t)
        ctx = OpContext(store)
        print_json(check_answer(answer, trace, ctx, taint=not args.no_taint, gated_types=gated_types))
    return 0
