"""Print what a store holds (entities, node and edge versions, extent, rel types) as JSON."""

from __future__ import annotations

import argparse

from engine.api import Store
from pipeline.cli._common import add_store, print_json

HELP = "store statistics as JSON"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_store(p)


def run(args: argparse.Namespace) -> int:
    with Store.open(args.store, read_only=True) as store:
        print_json(store.stats())
    return 0
