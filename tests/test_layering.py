"""The layering rules of DESIGN §2, as import-linter contracts (``[tool.importlinter]`` in pyproject.toml).

The contracts are checked on the real tree, and each is shown to fail when a forbidden import is added to
a copy of the packages (a contract that cannot fail checks nothing).
"""

from __future__ import annotations

import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tgms import engine

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "models", "pipeline", "reports")
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")

pytestmark = pytest.mark.skipif(LINT is None, reason="import-linter is not installed (the dev extra has it)")


def _contracts() -> dict[str, dict]:
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in conf["contracts"]}


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--no-cache", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_contracts_hold_on_the_tree() -> None:
    out = _lint(REPO)
    assert out.returncode == 0, out.stdout[-4000:]
    assert "BROKEN" not in out.stdout
    assert out.stdout.count("KEPT") == len(_contracts())


def test_public_surface_contract_lists_every_engine_module_but_api() -> None:
    """A new engine module is private until listed: the forbidden list must cover every child but api."""
    children = {m.name for m in pkgutil.iter_modules(engine.__path__)} - {"api"}
    listed = {m.removeprefix("tgms.engine.") for m in _contracts()["public-surface"]["forbidden_modules"]}
    assert listed == children


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """The packages copied as real folders under ``tgms/`` (the repository links them there)."""
    (tmp_path / "tgms").mkdir()
    shutil.copy(REPO / "tgms" / "__init__.py", tmp_path / "tgms" / "__init__.py")
    for pkg in PACKAGES:
        skip = shutil.ignore_patterns("__pycache__", "data")
        shutil.copytree(REPO / pkg, tmp_path / "tgms" / pkg, ignore=skip)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _add_import(path: Path, line: str) -> None:
    before = path.read_text() if path.exists() else ""  # or a new module
    path.write_text(before + f"\n{line}  # injected by tests/test_layering.py\n")


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("engine/store/digest.py", "import mlflow", "the engine imports no LLM, Ray, Hydra or MLflow code"),
        ("engine/plan/refs.py", "import ray", "the engine imports no LLM, Ray, Hydra or MLflow code"),
        ("engine/canonical.py", "import tgms.models.errors", "engine <- models <- pipeline <- reports"),
        ("models/__init__.py", "import tgms.pipeline", "engine <- models <- pipeline <- reports"),
        ("pipeline/scoring/typed.py", "from tgms.engine.store import Store", "only through engine.api"),
        ("models/__init__.py", "from tgms.engine.plan import verifier", "reached only through engine.api"),
        # the pipeline's own layers: upward, between siblings, and a new module nobody placed
        ("pipeline/campaign/driver.py", "import tgms.pipeline.bench.report", "imports only those below it"),
        ("pipeline/scoring/typed.py", "import tgms.pipeline.tasks.build", "imports only those below it"),
        ("pipeline/systems/base.py", "import tgms.pipeline.tasks.build", "imports only those below it"),
        ("pipeline/signals.py", "import tgms.pipeline.console", "imports only those below it"),
        ("pipeline/unplaced.py", "import tgms.pipeline.signals", "imports only those below it"),
        # the table model: the standard library and pydantic only
        ("pipeline/table.py", "import tgms.engine.api", "imports only the standard library and pydantic"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tree_copy: Path, module: str, line: str, contract: str
) -> None:
    assert _lint(tree_copy).returncode == 0  # the copy itself is clean
    _add_import(tree_copy / "tgms" / module, line)
    out = _lint(tree_copy)
    assert out.returncode != 0
    broken = [ln for ln in out.stdout.splitlines() if re.search(r" BROKEN( \(\d+ ignored imports?\))?$", ln)]
    assert len(broken) == 1 and contract in broken[0], out.stdout[-3000:]
