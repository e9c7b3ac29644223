"""docs/mcp.md documents what `tgms serve` offers: every option of the command and every non-operator tool."""

from __future__ import annotations

import argparse
from pathlib import Path

from tgms.engine.mcp.definitions import EXTRA_TOOL_NAMES
from tgms.pipeline.cli import serve

DOC = Path(__file__).resolve().parents[3] / "docs" / "mcp.md"


def test_docs_cover_options_and_tools() -> None:
    text = DOC.read_text(encoding="utf-8")
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    options = [s for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help"]
    assert options and all(f"`{o}" in text for o in options), [o for o in options if f"`{o}" not in text]
    assert all(f"`{name}`" in text for name in EXTRA_TOOL_NAMES)
    readme = (DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "tgms serve --store" in readme and "docs/mcp.md" in readme
