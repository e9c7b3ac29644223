"""What a benchmark hands back, and where it goes: stdout, ``--json OUT`` and, only when asked with
``--update-docs``, its own marked section of ``docs/benchmarks.md``.

Each benchmark owns one ``<!-- NAME:begin -->`` ... ``<!-- NAME:end -->`` block of the Markdown file;
rewriting it leaves every other section as it was.

A benchmark's table is a :class:`pipeline.table.Table` rendered by :func:`pipeline.table.to_markdown`, built
with ``Table.of(..., none="")``: a figure a benchmark did not measure is an empty cell there, where the
paper's tables print ``—``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tgms.pipeline import inputs


@dataclass(frozen=True)
class BenchResult:
    """One benchmark run: JSON-able ``data`` for ``--json``, the Markdown printed, the docs section it may
    rewrite (``name``, ``heading``; None: it has none) and the exit code."""

    data: Any
    markdown: str
    section: tuple[str, str] | None = None
    exit_code: int = 0


def add_reps(p: argparse.ArgumentParser, default: int = 7) -> None:
    """``--reps N``: the timed repetitions (after one warm-up) a benchmark's p50/p95 are taken over."""
    inputs.add_whole(p, "--reps", 1, 1000, default=default, help="timed repetitions after one warm-up")


def stamp() -> str:
    """When and where: ``2026-12-03 11:00 UTC on host (2 cores, Python 3.11.9)``."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"{when} on {platform.node()} ({os.cpu_count()} cores, Python {platform.python_version()})"


def update_section(path: Path, name: str, heading: str, md: str) -> None:
    """Replace the ``<!-- NAME:begin -->`` ... ``<!-- NAME:end -->`` block, or append it under ``heading``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{begin}\n{md}\n{end}"
    if begin in text:
        pre, rest = text.split(begin, 1)
        text = pre + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + f"\n\n## {heading}\n\n" + block + "\n"
    path.write_text(text)
