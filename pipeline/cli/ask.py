"""``tgms ask "QUESTION" --store DIR``: answer one question with the TGMS agent, and show why.

The model plans (repaired against the static verifier and runtime errors), the engine executes, the model
reports, the claim verifier checks every claim against the trace and the gate decides what may be emitted.
Printed: the answer (or the abstention and its reason), each claim with its verdict, and the gate's
decision; ``--json`` prints the per-task record instead; ``--html FILE`` writes the trace page (a
self-contained page of the claims and verdicts, the plan as a DAG, the trace and the evidence) and ``--save
FILE`` one JSON document of question, record, plan and trace with its evidence embedded, which ``tgms trace
view FILE`` renders as the same page. Node uids named in the question (``n42``) are the task input the plan
may ground on.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError, NotFoundError, TGMSError
from tgms.models.client import ChatClient
from tgms.pipeline.cli._common import add_store
from tgms.pipeline.cli.endpoint import add_endpoint_args, cache_root, open_endpoint
from tgms.pipeline.cli.trace import write_atomic
from tgms.pipeline.console import print_json, progress
from tgms.pipeline.inputs import fspath, out_file, parse_json
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import RunSettings, SystemEnv, build_system, check_config, run_draft
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.viewer import ask_document, load_view, render_page

HELP = "answer a question with the TGMS agent: answer, claims with verdicts, the gate's decision"
UID = re.compile(r"\bn\d+\b")
MAX_QUESTION = 2000


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("question", help="the question, in words")
    add_store(p)
    p.add_argument("--html", type=fspath, default=None, metavar="FILE", help="write the trace page here")
    p.add_argument(
        "--save",
        type=fspath,
        default=None,
        metavar="FILE",
        help="write question, record, plan and trace (evidence embedded) as JSON, for `tgms trace view`",
    )
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
    save = out_file(args.save) if args.save else None
    config = parse_json(args.config, "--config") if args.config else {}
    check_config("tgms", config)
    uids = [u for u in (args.uids.split(",") if args.uids else UID.findall(question)) if u]
    task = Task(id="ask", question=question, input_uids=tuple(sorted(set(uids))), answer_kind=None)
    work = cache_root() / "systems"
    work.mkdir(parents=True, exist_ok=True)
    with open_endpoint(args) as ep, ChatClient(ep.config) as client:
        settings = RunSettings(generation=ep.generation)
        env = SystemEnv(args.store, client, settings, work)
        try:
            draft = run_draft(build_system("tgms", env, config), task)
            record = draft.record
            doc = ask_document(
                question, record, draft.artifacts.get("plan"), _trace(draft.artifacts.get("trace"))
            )
        finally:
            env.close()
    if save is not None:
        write_atomic(save, json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n")
        progress(f"wrote {save}")
    if html is not None:
        write_atomic(html, render_page(load_view(doc)))  # the page `tgms trace view` makes of --save
        progress(f"wrote {html}")
    if args.json:
        print_json(record.model_dump(mode="json"))
    else:
        sys.stdout.write(render_text(record))
    return 0 if record.status in ("answered", "abstained") else 1


def _trace(trace: Any) -> dict[str, Any] | None:
    """The trace with its evidence (envelopes, resolved arguments) embedded; without them when a result
    object cannot be read (the page then says which evidence is missing)."""
    if trace is None:
        return None
    try:
        return trace.to_dict(envelopes=True)
    except TGMSError:
        return trace.to_dict()


def render_text(record: TaskRecord) -> str:
    """The human-readable answer: text and typed value, claims with verdicts, the gate's decision."""
    lines = []
    answer, gate = record.answer, record.gate or {}
    if answer is not None:
        lines.append(f"answer: {answer.get('text', '')}")
        if answer.get("answer") is not None:
            lines.append(f"typed:  {answer['answer'].get('kind')} = {answer['answer'].get('value')!r}")
    else:
        lines.append(f"no answer ({record.status}): {gate.get('reason') or _first_error(record)}")
    verdicts = {v.get("claim"): v for v in record.claim_verdicts}
    claims = (answer or record.extras.get("reporter_answer") or {}).get("claims") or []
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
    tokens = record.tokens
    lines.append(
        f"plan attempts: {len(record.attempts)}; trace {record.trace_status}; "
        f"{record.latency_s:.1f} s; tokens {tokens.prompt}+{tokens.completion}"
    )
    return "\n".join(lines) + "\n"


def _first_error(record: TaskRecord) -> str:
    errs = record.errors
    return f"{errs[0].get('error')}: {errs[0].get('message')}" if errs else "no usable answer"
