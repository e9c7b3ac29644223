"""Print the store digest: SHA-256 over every version row; the hex digest alone is the last line."""

from __future__ import annotations

import argparse

from engine.api import Store
from pipeline.cli._common import add_store

HELP = "print the store digest (hex, alone on the last line)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_store(p)


def run(args: argparse.Namespace) -> int:
    with Store.open(args.store, read_only=True) as store:
        print(store.digest())
    return 0
