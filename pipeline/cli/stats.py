"""Print what a store holds (entities, node and edge versions, extent, rel types) as JSON."""

from __future__ import annotations

import argparse

from tgms.pipeline.cli._common import add_store, read_store
from tgms.pipeline.console import print_json

HELP = "store statistics as JSON"
add_arguments = add_store  # --store is its only option


def run(args: argparse.Namespace) -> int:
    with read_store(args) as store:
        print_json(store.stats())
    return 0
