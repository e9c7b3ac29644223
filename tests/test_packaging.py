"""The wheel installs one top-level import name, ``tgms``, with the data files the code reads at run time.

The four folders (``engine/``, ``models/``, ``pipeline/``, ``reports/``) are linked under ``tgms/``; a wheel
built from the checkout must carry them as ``tgms/<name>/`` and nothing else at its top, so installing the
project never shadows another distribution's ``models`` or ``pipeline``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "models", "pipeline", "reports")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    # what the build reads, copied (a build writes build/ and *.egg-info beside pyproject.toml); the links
    # under tgms/ are copied as links, as a checkout has them
    src = out / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    skip = shutil.ignore_patterns("__pycache__")
    for name in ("tgms", *PACKAGES):
        shutil.copytree(REPO / name, src / name, symlinks=True, ignore=skip)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (whl,) = out.glob("tgms-*.whl")
    return zipfile.ZipFile(whl)


def test_one_top_level_name(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/", 1)[0] for name in wheel.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"tgms"}
    packages = {n.split("/")[1] for n in wheel.namelist() if n.startswith("tgms/") and n.count("/") >= 2}
    assert packages == set(PACKAGES)


def test_data_files_and_entry_points(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "tgms/engine/ingest/data/CollegeMsg.txt.gz" in names
    assert "tgms/engine/operators/cost_model.json" in names
    (eps,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(eps).decode()
    assert "tgms = tgms.pipeline.cli.main:main" in text and "report = tgms.reports.cli" in text
