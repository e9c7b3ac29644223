"""``tgms report --run-id ID | --experiment NAME --out DIR [--tracking-uri URI]``: the paper's Tables 2-6
and the §5.6 operator table (Markdown and LaTeX) and the PNG plots, read back from MLflow alone.

The tracking store is ``--tracking-uri``, else ``$MLFLOW_TRACKING_URI``, else ``./mlflow.db`` when it
exists (a campaign's run directory), else, with ``--experiment NAME``, ``campaigns/NAME/mlflow.db`` when it
exists (where ``tgms-campaign`` puts experiment NAME's store), so the README's ``tgms report
--experiment main`` works from the directory the main job ran in. Prints the files written as JSON. A
plugin of ``tgms`` (entry point group ``tgms.commands``), with the built-in commands' interface: ``HELP``,
``add_arguments``, ``run``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tgms.engine.api import InvalidArgError
from tgms.pipeline.console import print_json
from tgms.pipeline.inputs import fspath, out_dir

HELP = "paper tables (Markdown, LaTeX) and PNG plots of a campaign, read back from MLflow"


def add_arguments(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--run-id", metavar="ID", help="a campaign's parent run")
    which.add_argument(
        "--experiment", metavar="NAME", help="every campaign parent run of this MLflow experiment"
    )
    p.add_argument("--out", required=True, type=fspath, metavar="DIR", help="where the report is written")
    p.add_argument(
        "--tracking-uri", metavar="URI", default=None,
        help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else ./mlflow.db, else "
        "campaigns/<experiment>/mlflow.db when it exists)",
    )  # fmt: skip


def tracking_uri(given: str | None, experiment: str | None = None) -> str:
    if given:
        return given
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    tried = [Path("mlflow.db")]
    if experiment:
        tried.append(Path("campaigns") / experiment / "mlflow.db")
    for local in tried:
        if local.is_file():
            return f"sqlite:///{local.resolve()}"
    raise InvalidArgError(
        "no tracking store: give --tracking-uri (e.g. sqlite:///campaigns/main/mlflow.db), set "
        "MLFLOW_TRACKING_URI, or run in a campaign's run directory (where mlflow.db is)",
        tried=[str(p) for p in tried],
    )


def run(args: argparse.Namespace) -> int:
    from tgms.reports.build import write_report
    from tgms.reports.read import Reader

    out = out_dir(args.out)
    with Reader(tracking_uri(args.tracking_uri, args.experiment)) as reader:
        data = reader.load(run_id=args.run_id, experiment=args.experiment)
        files = write_report(data, out)
    print_json(
        {
            "parents": [p.info.run_id for p in data.parents],
            "cells": len(data.cells),
            "comparisons": len(data.comparisons),
            "files": [str(f) for f in files],
        }
    )
    return 0
