"""The tree is ruff clean (lint and format, ``[tool.ruff]`` in pyproject.toml) and the packages type-check
(mypy, ``[tool.mypy]``), so CI, which runs the README's test command, fails on a lint error, an unformatted
file or a type error instead of leaving them to the next reader. Each check is also shown to fail on a copy
of one file with a fault put in (a check that cannot fail checks nothing)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
HAS_MYPY = importlib.util.find_spec("mypy") is not None
# mypy's incremental cache, outside the repository: kept between runs on one machine (a cold check of the
# packages takes about a minute on two cores, a warm one a few seconds)
MYPY_CACHE = Path(tempfile.gettempdir()) / f"tgms-mypy-cache-{os.getuid()}"

needs_ruff = pytest.mark.skipif(RUFF is None, reason="ruff is not installed (the dev extra has it)")
needs_mypy = pytest.mark.skipif(not HAS_MYPY, reason="mypy is not installed (the dev extra has it)")


def _ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    assert RUFF is not None
    return subprocess.run([RUFF, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _mypy(*args: str, cwd: Path, cache: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """mypy with the configuration in ``cwd``'s pyproject.toml."""
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@needs_ruff
def test_the_tree_is_lint_clean_and_formatted() -> None:
    lint = _ruff("check", "--no-cache", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = _ruff("format", "--check", "--no-cache", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


@needs_ruff
def test_the_checks_fail_on_a_fault(tmp_path: Path) -> None:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "bad.py").write_text("import os\nx = {  'a':1}\n", encoding="utf-8")
    lint = _ruff("check", "--no-cache", ".", cwd=tmp_path)
    assert lint.returncode != 0 and "F401" in lint.stdout  # `os` imported, unused
    assert _ruff("format", "--check", "--no-cache", ".", cwd=tmp_path).returncode != 0


@needs_mypy
@pytest.mark.slow
def test_the_packages_type_check() -> None:
    # the packages are [tool.mypy]'s `packages`: engine, models, pipeline, reports
    check = _mypy(cwd=REPO, cache=MYPY_CACHE, timeout=900)
    assert check.returncode == 0, check.stdout + check.stderr


@needs_mypy
def test_the_type_check_fails_on_a_fault(tmp_path: Path) -> None:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text("", encoding="utf-8")
    # an unannotated function (checked: check_untyped_defs) that uses an Optional as if it were set
    bad = 'import re\n\n\ndef version(text):\n    return re.match(r"\\d+", text).group(0)\n'
    (tmp_path / "engine" / "bad.py").write_text(bad, encoding="utf-8")
    check = _mypy("-p", "engine", cwd=tmp_path, cache=tmp_path / "mypy-cache", timeout=300)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "engine/bad.py:5: error:" in check.stdout and "[union-attr]" in check.stdout, check.stdout
