"""Task suites: ``tgms tasks generate --store DIR --dataset NAME --seed S --out suite.json`` draws every
template, computes and cross-checks the gold, adds the correction probes and writes the suite (canonical
JSON); ``tgms tasks stats suite.json`` prints the paper's Table 2 for it.

Probes write their corrections into the store (through the write API, so they are in its event log) the
first time; a store whose log already holds them (a replay) is only read, so the same log and seed give
the same file byte for byte."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from tgms.engine.api import DATASETS, SchemaError
from tgms.pipeline.cli._common import add_store
from tgms.pipeline.console import print_json, progress
from tgms.pipeline.inputs import add_whole, fspath, out_file, read_json
from tgms.pipeline.scoring.suite import parse_suite

HELP = "task suites: `tgms tasks generate --store DIR --dataset NAME --seed S --out F`, `tgms tasks stats F`"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="tasks_command", required=True, metavar="generate|stats")
    g = sub.add_parser("generate", help="generate a suite file")
    add_store(g)
    g.add_argument("--dataset", required=True, choices=DATASETS)
    add_whole(g, "--seed", 0, 2**63 - 1, default=0)
    g.add_argument("--out", required=True, type=fspath, metavar="suite.json")
    g.add_argument("--no-probes", action="store_true", help="no correction probes (the store is not written)")
    g.add_argument("--no-crosscheck", action="store_true", help="skip the brute-force oracle cross-check")
    s = sub.add_parser("stats", help="Table 2 of a suite")
    s.add_argument("suite", metavar="suite.json")
    s.add_argument("--json", action="store_true", help="print the statistics as JSON")


def run(args: argparse.Namespace) -> int:
    from tgms.pipeline.tasks.stats import suite_stats, table2_markdown

    if args.tasks_command == "stats":
        data = read_json(args.suite, "suite")
        check_suite_shape(data, args.suite)
        suite = parse_suite(data, args.suite)
        if args.json:
            print_json(suite_stats(suite))
        else:
            sys.stdout.write(table2_markdown(suite))
        return 0
    return _generate(args)


def check_suite_splits(suite: Any, path: str) -> None:
    """Refuse (``E_SCHEMA``) a file without a suite's ``splits.dev`` and ``splits.test`` lists of tasks."""
    if not isinstance(suite, dict):
        raise _not_a_suite(path, "not a JSON object")
    splits = suite.get("splits")
    if not isinstance(splits, dict) or not all(isinstance(splits.get(s), list) for s in ("dev", "test")):
        raise _not_a_suite(path, "it needs 'splits' with 'dev' and 'test' lists")
    for name in ("dev", "test"):
        for i, task in enumerate(splits[name]):
            if not isinstance(task, dict):
                raise _not_a_suite(path, f"splits.{name}[{i}] is not a task object")


def check_suite_shape(suite: Any, path: str) -> None:
    """Refuse (``E_SCHEMA``) a file that is not a suite before Table 2 reads fields of it."""

    def bad(problem: str) -> SchemaError:
        return _not_a_suite(path, problem)

    check_suite_splits(suite, path)
    for key in ("dataset", "seed", "test_sha256"):
        if key not in suite:
            raise bad(f"no {key!r} field")
    if not isinstance(suite["test_sha256"], str):
        raise bad("'test_sha256' must be a string")
    for name in ("dev", "test"):
        for i, task in enumerate(suite["splits"][name]):
            if not all(isinstance(task.get(k), str) for k in _TASK_KEYS):
                raise bad(f"splits.{name}[{i}] is not a task (needs string {', '.join(_TASK_KEYS)})")
    for key, kind in (("refused", list), ("dropped", dict), ("operators_used", list)):
        if key in suite and not isinstance(suite[key], kind):
            raise bad(f"{key!r} must be a {kind.__name__}")
    if not all(isinstance(op, str) for op in suite.get("operators_used", [])):
        raise bad("'operators_used' must list operator names")
    dropped = suite.get("dropped", {})
    if not all(isinstance(v, dict) and all(isinstance(n, int) for n in v.values()) for v in dropped.values()):
        raise bad("'dropped' must map templates to counts")


def _not_a_suite(path: str, problem: str) -> SchemaError:
    return SchemaError(f"{path} is not a task suite: {problem}", path=path)


_TASK_KEYS = ("family", "answer_kind", "template")


def _generate(args: argparse.Namespace) -> int:
    from tgms.pipeline.tasks.build import build_suite, write_suite
    from tgms.pipeline.tasks.stats import table2_markdown

    out_file(args.out)  # before the long work, not after it
    t0 = time.perf_counter()
    progress(f"generating the {args.dataset} suite (seed {args.seed}) ...")
    suite = build_suite(
        args.store,
        args.dataset,
        args.seed,
        probes=not args.no_probes,
        crosscheck=not args.no_crosscheck,
        progress=progress,
    )
    write_suite(suite, args.out)
    progress(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")
    sys.stdout.write(table2_markdown(suite))
    return 0
