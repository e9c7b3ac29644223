"""Small helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.store.backends import BACKENDS


def add_store(p: argparse.ArgumentParser, *, backend: bool = False) -> None:
    p.add_argument("--store", required=True, metavar="DIR", help="store directory")
    if backend:
        p.add_argument(
            "--backend", choices=BACKENDS, default="duckdb", help="storage backend (default duckdb)"
        )


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


def progress(msg: str) -> None:
    """Progress for long work goes to stderr so stdout stays parseable."""
    print(msg, file=sys.stderr, flush=True)
