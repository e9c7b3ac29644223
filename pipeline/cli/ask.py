"""``tgms ask "QUESTION" --store DIR``: answer one question with the TGMS agent, and show why.

The model plans (repaired against the static verifier and runtime errors), the engine executes, the model
reports, the claim verifier checks every claim against the trace and the gate decides what may be emitted.
Printed: the answer (or the abstention and its reason), each claim with its verdict, and the gate's
decision; ``--json`` prints the per-task record instead; ``--html FILE`` writes a self-contained page of
plan, trace, evidence and verdicts. Node uids named in the question (``n42``) are the task input the
plan may ground on.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from engine.api import InvalidArgError, NotFoundError
from models.client import ChatClient
from pipeline.cli._common import add_store, out_file, print_json, progress
from pipeline.cli.endpoint import add_endpoint_args, cache_root, open_endpoint
from pipeline.cli.inputs import fspath, parse_json
from pipeline.systems.base import RunSettings, SystemEnv, build_system, check_config, run_draft
from pipeline.systems.trace_page import render_page

HELP = "answer a question with the TGMS agent: answer, claims with verdicts, the gate's decision"
UID = re.compile(r"\bn\d+\b")
MAX_QUESTION = 2000


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", help="the question, in words")
    add_store(p)
    p.add_argument("--html", type=fspath, default=None, metavar="FILE", help="write the trace page here")
    p.add_argument("--json", action="store_true", help="print the per-task record as JSON")
    p.add_argument(
        "--uids", default=None, help="task input uids, comma-separated (default: n<id> in the question)"
    )
    p.add_argument("--config", default=None, help="tgms system options as JSON (ablation switches)")
    add_endpoint_args(p)


def run(args: argparse.Namespace) -> int:
    question = args.question.strip()
    if not question or len(question) > MAX_QUESTION:
        raise InvalidArgError(f"the question must be 1..{MAX_QUESTION} characters", length=len(question))
    if not Path(args.store).is_dir():
        raise NotFoundError(f"no store at {args.store}", store=args.store)
    html = out_file(args.html) if args.html else None
    config = parse_json(args.config, "--config") if args.config else {}
    check_config("tgms", config)
    uids = [u for u in (args.uids.split(",") if args.uids else UID.findall(question)) if u]
    task = {"id": "ask", "question": question, "input_uids": sorted(set(uids)), "answer_kind": None}
    work = cache_root() / "systems"
    work.mkdir(parents=True, exist_ok=True)
    with open_endpoint(args) as ep, ChatClient(ep.config) as client:
        settings = RunSettings(
            model=ep.config.model, max_tokens=args.max_tokens, context_window=ep.context_window
        )
        env = SystemEnv(args.store, client, settings, work)
        try:
            draft = run_draft(build_system("tgms", env, config), task)
            record = draft.record.model_dump(mode="json")
            trace = draft.artifacts.get("trace")
            trace_dict = trace.to_dict() if trace is not None else None
            evidence = _evidence(trace)
        finally:
            env.close()
    if html is not None:
        html.write_text(
            render_page(question, record, draft.artifacts.get("plan"), trace_dict, evidence), "utf-8"
        )
        progress(f"wrote {html}")
    if args.json:
        print_json(record)
    else:
        sys.stdout.write(render_text(record))
    return 0 if record["status"] in ("answered", "abstained") else 1


def _evidence(trace: Any) -> dict[str, Any]:
    if trace is None:
        return {}
    out = {}
    for step in trace.steps:
        try:
            payload = trace.payload(step.id)
        except Exception:  # a missing result object is shown as missing, not a crash of the page
            payload = None
        if payload is not None:
            out[step.id] = payload
    return out


def render_text(record: dict[str, Any]) -> str:
    """The human-readable answer: text and typed value, claims with verdicts, the gate's decision."""
    lines = []
    answer, gate = record.get("answer"), record.get("gate") or {}
    if answer is not None:
        lines.append(f"answer: {answer.get('text', '')}")
        if answer.get("answer") is not None:
            lines.append(f"typed:  {answer['answer'].get('kind')} = {answer['answer'].get('value')!r}")
    else:
        lines.append(f"no answer ({record.get('status')}): {gate.get('reason') or _first_error(record)}")
    verdicts = {v.get("claim"): v for v in record.get("claim_verdicts") or []}
    claims = (answer or record.get("extras", {}).get("reporter_answer") or {}).get("claims") or []
    if claims:
        lines.append("claims:")
    for c in claims:
        v = verdicts.get(c.get("id"), {})
        what = c.get("value", c.get("uids", c.get("relation", c.get("assertion"))))
        lines.append(f"  {c.get('id')} {c.get('type')} {what!r} [{', '.join(c.get('evidence') or [])}]")
        lines.append(
            f"     -> {v.get('verdict', 'not verified')}{': ' + v['reason'] if v.get('reason') else ''}"
        )
    decision = "emitted" if answer is not None else "abstained"
    dropped = ", ".join(d.get("claim", "?") for d in gate.get("dropped") or [])
    lines.append(f"gate: {decision}" + (f" (dropped {dropped})" if dropped else ""))
    tokens = record["tokens"]
    lines.append(
        f"plan attempts: {len(record.get('attempts') or [])}; trace {record.get('trace_status')}; "
        f"{record.get('latency_s', 0):.1f} s; tokens {tokens['prompt']}+{tokens['completion']}"
    )
    return "\n".join(lines) + "\n"


def _first_error(record: dict[str, Any]) -> str:
    errs = record.get("errors") or []
    return f"{errs[0].get('error')}: {errs[0].get('message')}" if errs else "no usable answer"
