"""``tgms trace view TRACE.json [--out FILE] [--store DIR]``: the trace page of an answered question, one
self-contained HTML file (no script, no network resource).

TRACE.json is any of: the document ``tgms ask --save FILE`` writes (question, record with the verdicts
and the gate's decision, plan, trace with its evidence embedded); the output of ``tgms plan run`` (trace
and mechanical answer); a bare trace. Evidence the file does not embed is fetched by digest from the
result store (``--results``, default where ``tgms plan run`` put it for ``--store``) and authenticated.
With ``--store``, claims without verdicts (a plan-run output, or ``--answer ANSWER.json``) are verified by
the claim verifier and gated, on the store state the trace was recorded on.

The page goes to ``--out`` (default: TRACE.json's name with ``.html``; ``-`` for stdout), written whole or
not at all; its path is printed. Malformed input is refused with the structured error before anything is
written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError, NotFoundError, ResultStore
from tgms.engine.api import write_atomic as write_file_atomic
from tgms.pipeline.cli._common import read_store, results_for_reading
from tgms.pipeline.cli.verify_answer import _answer_object, _trace_object
from tgms.pipeline.console import progress
from tgms.pipeline.inputs import fspath, out_file, read_json

HELP = "trace page: `tgms trace view TRACE.json [--out FILE] [--store DIR]` (self-contained HTML)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="trace_command", required=True, metavar="view")
    v = sub.add_parser("view", help="render TRACE.json as a self-contained HTML page")
    v.add_argument(
        "trace", type=fspath, metavar="TRACE.json", help="`tgms ask --save` file, plan-run output or trace"
    )
    v.add_argument(
        "--out", type=fspath, default=None, metavar="FILE", help="the page (default TRACE.html; - for stdout)"
    )
    v.add_argument(
        "--store", type=fspath, default=None, metavar="DIR", help="fetch evidence and verify claims here"
    )
    v.add_argument(
        "--results", type=fspath, default=None, metavar="DIR", help="result store to fetch evidence from"
    )
    v.add_argument(
        "--answer", type=fspath, default=None, metavar="ANSWER.json", help="show (and verify) this answer"
    )


def _out(args: argparse.Namespace) -> Path | None:
    """The page's path (None: stdout), refused up front when it is unusable or would overwrite the input."""
    if args.out == "-":
        return None
    path = out_file(args.out) if args.out else out_file(str(Path(args.trace).with_suffix(".html")))
    if path.exists() and path.resolve() == Path(args.trace).resolve():
        raise InvalidArgError("the page would overwrite TRACE.json; choose --out", path=str(path))
    return path


def write_atomic(path: Path, text: str) -> None:
    """Write the page to ``path`` all at once or not at all, with the usual mode (a page is a file to
    share; mkstemp alone would make it 0600)."""
    write_file_atomic(path, text, fsync=False, shared=True)


def run(args: argparse.Namespace) -> int:
    from tgms.pipeline.viewer import load_view, render_page
    from tgms.pipeline.viewer.load import document_form

    doc = read_json(args.trace, "trace")
    _form, trace_part = document_form(doc)
    if trace_part is not None:
        _trace_object(trace_part)  # E_SCHEMA naming the first problem of a malformed trace
    answer: Any = _answer_object(read_json(args.answer, "answer")) if args.answer else None
    if answer is not None and not isinstance(answer, dict):
        raise InvalidArgError("ANSWER.json is not an answer object", path=args.answer)
    out = _out(args)
    if args.store is not None and not Path(args.store).is_dir():
        raise NotFoundError(f"no store at {args.store}", store=args.store)
    results = ResultStore(args.results) if args.results else None
    if args.store is None:
        page = render_page(load_view(doc, results=results, answer=answer))
    else:
        with read_store(args) as store:
            results = results or results_for_reading(args.store)
            page = render_page(load_view(doc, results=results, store=store, answer=answer))
    if out is None:
        sys.stdout.write(page)
        return 0
    write_atomic(out, page)
    progress(f"wrote {out}")
    print(out)
    return 0
