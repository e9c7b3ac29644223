"""Run the verifier mutation experiment (the paper's Table 5): ``tgms mutations --store DIR --suite
suite.json --out DIR [--per-class N] [--seed S]``. Without ``--suite`` the suite is generated from the
store first (``--dataset``, default collegemsg) and written to ``DIR/suite.json``.

Writes ``mutations.json`` (canonical JSON, one record per mutation class; byte-identical for the same store,
suite, N and seed) and ``table5.md`` into ``--out``, and prints the table. The runtime goes to stderr only.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tgms.engine.api import DATASETS, InvalidArgError, SchemaError
from tgms.pipeline.cli._common import add_store
from tgms.pipeline.console import progress
from tgms.pipeline.inputs import add_whole, out_dir, read_json
from tgms.pipeline.scoring.suite import Suite, parse_suite

HELP = "verifier mutation experiment: `tgms mutations --store DIR --suite suite.json --out DIR`"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_store(p)
    p.add_argument(
        "--suite",
        default=None,
        metavar="suite.json",
        help="the task suite (dev + test are used); default: generate it from the store (--dataset, --seed)",
    )
    p.add_argument(
        "--dataset",
        default="collegemsg",
        choices=DATASETS,
        help="the store's dataset, when the suite is generated here (default collegemsg)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="where mutations.json and table5.md go")
    add_whole(p, "--per-class", 1, 100_000, default=100, metavar="N", help="cases per class (default 100)")
    add_whole(p, "--seed", 0, 2**63 - 1, default=0, metavar="S", help="seed (default 0)")


def check_mutation_suite(suite: Suite, path: str) -> None:
    """What the experiment reads of a suite: dev and test tasks, each with an oracle plan."""
    tasks = [*suite.splits.dev, *suite.splits.test]
    if not tasks:
        raise InvalidArgError(f"{path}: the suite has no tasks to mutate", path=path)
    for task in tasks:
        if task.oracle_plan is None:
            raise SchemaError(
                f"{path}: task {task.id!r} has no oracle plan to mutate", path=path, task=task.id
            )


def run(args: argparse.Namespace) -> int:
    from tgms.pipeline.mutations import run_experiment, table5_markdown, write_outputs

    t0 = time.perf_counter()
    out_dir(args.out)
    suite = args.suite
    if suite is not None:  # refused here, before the store is read, if it is not a suite
        suite = parse_suite(read_json(suite, "suite"), f"suite file {suite}")
        check_mutation_suite(suite, args.suite)
    else:  # DESIGN §6's form: `tgms mutations --store DIR --out DIR`
        from tgms.pipeline.tasks.build import build_suite, write_suite

        progress(f"no --suite: generating the {args.dataset} suite (seed {args.seed}) from {args.store}")
        suite = build_suite(args.store, args.dataset, args.seed, progress=progress)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        write_suite(suite, Path(args.out) / "suite.json")
    result = run_experiment(args.store, suite, per_class=args.per_class, seed=args.seed)
    write_outputs(result, args.out)
    print(table5_markdown(result), end="")
    progress(f"mutations: {time.perf_counter() - t0:.1f} s; wrote {args.out}/mutations.json, table5.md")
    return 0
