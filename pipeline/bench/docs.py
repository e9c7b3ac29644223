"""Rewriting one benchmark's section of docs/benchmarks.md (each benchmark owns a marked block)."""

from __future__ import annotations

from pathlib import Path


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
