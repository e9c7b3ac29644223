"""List the registered operators: one line each with name, family and summary (the manual's first
sentence). The full manual entries are in ``tgms schema --manual``."""

from __future__ import annotations

import argparse

from tgms.engine.api import all_operators

HELP = "list the operators (name, family, summary)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    del p  # no options


def run(args: argparse.Namespace) -> int:
    del args
    specs = all_operators()
    width = max((len(s.name) for s in specs), default=0)
    fam = max((len(s.family) for s in specs), default=0)
    for s in specs:
        print(f"{s.name:<{width}}  {s.family:<{fam}}  {s.summary}")
    return 0
