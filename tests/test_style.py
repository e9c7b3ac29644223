"""The tree is ruff clean (lint and format, ``[tool.ruff]`` in pyproject.toml), so CI, which runs the README's
test command, fails on a lint error or an unformatted file instead of leaving them to the next reader.
Each check is also shown to fail on a copy of one file with a fault put in (a check that cannot fail
checks nothing)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")

pytestmark = pytest.mark.skipif(RUFF is None, reason="ruff is not installed (the dev extra has it)")


def _ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    assert RUFF is not None
    return subprocess.run([RUFF, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_tree_is_lint_clean_and_formatted() -> None:
    lint = _ruff("check", "--no-cache", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _ruff("format", "--check", "--no-cache", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_the_checks_fail_on_a_fault(tmp_path: Path) -> None:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "bad.py").write_text("import os\nx = {  'a':1}\n", encoding="utf-8")
    lint = _ruff("check", "--no-cache", ".", cwd=tmp_path)
    assert lint.returncode != 0 and "F401" in lint.stdout  # `os` imported, unused
    assert _ruff("format", "--check", "--no-cache", ".", cwd=tmp_path).returncode != 0
