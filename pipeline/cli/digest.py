"""Print the store digest: SHA-256 over every version row; the hex digest alone is the last line."""

from __future__ import annotations

import argparse

from tgms.pipeline.cli._common import add_store, read_store

HELP = "print the store digest (hex, alone on the last line)"
add_arguments = add_store  # --store is its only option


def run(args: argparse.Namespace) -> int:
    with read_store(args) as store:
        print(store.digest())
    return 0
