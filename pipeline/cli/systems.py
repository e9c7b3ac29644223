"""``tgms systems``: list the systems, or run one over a suite split and write its per-task records.

``tgms systems run --system tgms --suite suite.json --split dev --store DIR --out records.jsonl`` runs every
task of the split (``--concurrency`` at once), appends one JSON record per task to ``--out`` as it
finishes (a rerun skips the tasks already there), and prints a summary: accuracy with its denominators,
first-emission validity, tokens and seconds per task. ``--config '{"k": 3}'`` sets the system's own
options (refused before any task runs when unknown). The store must be the one the suite was computed on
(its digest is checked).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError, NotFoundError, Store
from tgms.models.client import ChatClient
from tgms.pipeline.cli._common import add_store
from tgms.pipeline.cli.endpoint import add_endpoint_args, cache_root, open_endpoint
from tgms.pipeline.console import print_json, progress
from tgms.pipeline.inputs import add_whole, fspath, parse_json, read_json
from tgms.pipeline.scoring.suite import SUITE_FORMAT, Suite, Task, parse_suite
from tgms.pipeline.systems.base import RunSettings, SystemEnv, build_system, check_config, load_systems
from tgms.pipeline.systems.runner import run_tasks, summarize, system_records

HELP = "list the systems, or run one over a suite split (per-task JSONL records + a summary)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="systems_command", required=True, metavar="SUBCOMMAND")
    sub.add_parser("list", help="the registered systems and their options (JSON)")
    r = sub.add_parser("run", help="run a system over a suite split")
    r.add_argument("--system", required=True, help="a registered system (tgms systems list)")
    r.add_argument("--suite", required=True, type=fspath, help="suite.json (tgms tasks generate)")
    r.add_argument("--split", default="dev", choices=["dev", "test"], help="default dev")
    add_store(r)
    r.add_argument("--out", required=True, type=fspath, help="records JSONL (appended; resumable)")
    r.add_argument("--config", default="{}", help="the system's options as JSON")
    add_whole(r, "--concurrency", 1, 1024, default=1, help="tasks at once (default 1)")
    add_whole(r, "--limit", 0, 1 << 30, default=None, help="only the first N tasks of the split")
    add_whole(r, "--seed", 0, (1 << 31) - 1, default=0, help="sampling seed (default 0)")
    add_whole(r, "--repair-budget", 0, 10, default=3, help="repairs after the first attempt (default 3)")
    r.add_argument("--work-dir", type=fspath, default=None, help="indexes and databases (default: cache)")
    add_endpoint_args(r)


def run(args: argparse.Namespace) -> int:
    if args.systems_command == "list":
        print_json(
            {
                name: {"doc": spec.doc, "config": spec.config.model_json_schema()}
                for name, spec in sorted(load_systems().items())
            }
        )
        return 0
    return _run(args)


def load_split(suite_path: str, split: str, store: Store) -> tuple[Suite, list[Task]]:
    data = read_json(suite_path, "suite")
    if not isinstance(data, dict) or data.get("format") != SUITE_FORMAT:
        raise InvalidArgError(f"{suite_path} is not a suite file (tgms tasks generate)")
    suite = parse_suite(data, suite_path)
    if suite.store_digest != store.digest():
        raise InvalidArgError(
            "the suite was computed on another store",
            suite_store_digest=suite.store_digest,
            store_digest=store.digest(),
        )
    return suite, list(suite.splits.dev if split == "dev" else suite.splits.test)


def _run(args: argparse.Namespace) -> int:
    config = parse_json(args.config, "--config")
    check_config(args.system, config)
    if not Path(args.store).is_dir():
        raise NotFoundError(f"no store at {args.store}", store=args.store)
    with Store.open(args.store, read_only=True) as store:
        suite, tasks = load_split(args.suite, args.split, store)
    tasks = tasks[: args.limit] if args.limit is not None else tasks
    work = Path(args.work_dir or cache_root() / "systems")
    work.mkdir(parents=True, exist_ok=True)
    with open_endpoint(args) as ep, ChatClient(ep.config) as client:
        settings = RunSettings(
            generation=ep.generation.model_copy(update={"seed": args.seed}), repair_budget=args.repair_budget
        )
        train = list(suite.splits.train)  # worked plans; never dev or test
        env = SystemEnv(args.store, client, settings, work, dataset=suite.dataset, train=train)
        try:
            built = build_system(args.system, env, config)
            progress(f"{args.system}: {len(tasks)} tasks of {args.suite} [{args.split}] -> {args.out}")

            def show(n: int, total: int, rec: Any) -> None:
                mark = {True: "ok", False: "wrong", None: "unscored"}[rec.correct]
                progress(f"  [{n}/{total}] {rec.task_id}: {rec.status} ({mark}, {rec.latency_s:.1f} s)")

            run_tasks(built, tasks, concurrency=args.concurrency, out=args.out, progress=show)
        finally:
            env.close()
    ids = {t.id for t in tasks}
    records = system_records(args.out, args.system, ids)
    print_json({"system": args.system, "split": args.split, "model": ep.config.model, **summarize(records)})
    return 0
