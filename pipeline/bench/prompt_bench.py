"""``tgms bench prompt``: the planner prompt's parts counted with the model's own tokenizer (issue 25 item 2).

For each prompt layout (:class:`models.plan_prompt.PromptLayout`) and each task of a suite's split, the
first planner request is built exactly as the ``tgms`` system builds it (worked plans retrieved from the
suite's train split for the retrieved layouts) and counted with the GGUF's vocabulary (llama.cpp,
``vocab_only``: no weights, no server): the static prefix (rules, manual, fixed worked plans), the task's
message and its parts (retrieved worked plans, operator blocks), and the whole chat as the server renders
it with the model's chat template. The table gives, per layout, the prefix once and the median and
maximum of the rest over the tasks. The prefix is what a server can keep cached; the task's message is
what it must prefill for every task (and, on a one-slot CPU server whose cache the reporter's call evicts,
the prefix too).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError
from tgms.models.local.tokens import count_chat_tokens, count_tokens
from tgms.models.plan_prompt import PlanTask, PromptLayout, first_messages, shown_examples, static_prefix
from tgms.models.worked_plans import names_line, question_names
from tgms.pipeline.bench.report import BenchResult, stamp
from tgms.pipeline.scoring.suite import Suite, read_suite
from tgms.pipeline.table import Table, to_markdown

HELP = "the planner prompt's parts in the model's own tokens, per layout (no server)"
LAYOUTS: dict[str, PromptLayout] = {
    "fixed": PromptLayout("fixed", "full", True),
    "fixed-no-names": PromptLayout("fixed", "full", False),
    "retrieved_examples": PromptLayout("retrieved", "full", True),
    "retrieved_prompt": PromptLayout("retrieved", "retrieved", True),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-file", required=True, type=Path, help="the GGUF whose tokenizer counts")
    p.add_argument("--suite", required=True, type=Path, help="a suite.json (or a bundle directory)")
    p.add_argument("--split", default="dev", choices=("dev", "test"), help="the tasks (default dev)")
    p.add_argument("--layouts", default=",".join(LAYOUTS), help=f"comma-separated of {', '.join(LAYOUTS)}")
    p.add_argument("--k", type=int, default=2, help="worked plans retrieved per question (default 2)")
    p.add_argument("--card", default="", help="the dataset card text (default: none; it is per store)")


def _suite(path: Path) -> Suite:
    file = path / "suite.json" if path.is_dir() else path
    if not file.is_file():
        raise InvalidArgError(f"no suite at {path}", path=str(path))
    return read_suite(file)


def _median_max(values: list[int]) -> str:
    return f"{int(statistics.median(values)):,} / {max(values):,}" if values else "-"


def measure(
    suite: Suite,
    split: str,
    layouts: list[str],
    model: Path,
    k: int,
    card: str,
    progress: Callable[[str], None],
) -> list[dict[str, Any]]:
    tasks = suite.splits.dev if split == "dev" else suite.splits.test
    index = None
    records: list[dict[str, Any]] = []
    for name in layouts:
        layout = LAYOUTS[name]
        if layout.examples == "retrieved" and index is None:
            from tgms.pipeline.systems.worked_plans import WorkedPlanIndex

            index = WorkedPlanIndex(list(suite.splits.train))
        per: dict[str, list[int]] = {"suffix": [], "worked": [], "blocks": [], "times": [], "chat": []}
        for t in tasks:
            examples = (
                index.nearest(t.question, k) if index is not None and layout.examples == "retrieved" else ()
            )
            ptask = PlanTask(t.id, t.question, t.input_uids, t.answer_kind, card, examples=examples)
            messages = first_messages(ptask, layout)
            per["suffix"].append(count_tokens(messages[1]["content"], model_path=model))
            shown = shown_examples(ptask, layout)
            per["worked"].append(
                sum(
                    count_tokens(ex.render(i, layout.time_names), model_path=model)
                    for i, ex in enumerate(shown, 1)
                )
            )
            names = question_names(t.question, t.input_uids) if layout.time_names else ()
            per["times"].append(count_tokens(names_line(names), model_path=model) if names else 0)
            per["chat"].append(count_chat_tokens(messages, model_path=model))
        prefix = count_tokens(static_prefix(layout), model_path=model)
        records.append({"layout": name, "tasks": len(tasks), "prefix_tokens": prefix, **per})
        progress(f"  {name}: prefix {prefix} tokens, chat median {statistics.median(per['chat']):.0f}")
    return records


def table(records: list[dict[str, Any]]) -> str:
    header = ["layout", "tasks", "static prefix", "task message (median / max)", "worked plans shown",
              "named times", "whole first request"]  # fmt: skip
    rows = [
        [
            r["layout"],
            r["tasks"],
            f"{r['prefix_tokens']:,}",
            _median_max(r["suffix"]),
            _median_max(r["worked"]),
            _median_max(r["times"]),
            _median_max(r["chat"]),
        ]
        for r in records
    ]
    return to_markdown(Table.of(header, "lrrrrrr", rows, none=""))


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    layouts = [s.strip() for s in args.layouts.split(",") if s.strip()]
    unknown = sorted(set(layouts) - set(LAYOUTS))
    if unknown or not layouts:
        raise InvalidArgError(f"unknown layouts {unknown}", allowed=list(LAYOUTS))
    if not args.model_file.is_file():
        raise InvalidArgError(f"no model file at {args.model_file}", path=str(args.model_file))
    suite = _suite(args.suite)
    records = measure(suite, args.split, layouts, args.model_file, args.k, args.card, progress)
    head = (
        f"Measured {stamp()}; tokenizer of {args.model_file.name}; {suite.dataset} {args.split} "
        f"split; counts in the model's own tokens (median / max over the tasks)."
    )
    data = {"model_file": str(args.model_file), "split": args.split, "records": records}
    return BenchResult(data, head + "\n\n" + table(records))
