"""Comments and docstrings cite only what exists in the repository.

A comment that names a module or file (``pipeline/bench/calibrate.py``, ``docs/campaign.md``,
:mod:`pipeline.campaign.resume`) sends a reader there; when the file has been renamed or removed the
comment misleads. A comment that cites a file outside the repository (``../shared/...``, an absolute path
on one machine) sends a reader somewhere a clone does not have. Every comment and string literal of
``engine``, ``models``, ``pipeline`` and ``reports`` is scanned for both.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "models", "pipeline", "reports")
#: a repository path: a top-level folder, then path characters; not the tail of a longer path
#: (``$TGMS_CACHE/models/x``, ``/tmp/engine/y``) nor part of a word
PATH_REF = re.compile(r"(?<![\w/$.~-])((?:engine|models|pipeline|reports|tests|conf|slurm|docs)/[\w./-]*\w)")
#: a module named by Sphinx's role, e.g. :mod:`pipeline.campaign.records` or :mod:`~engine.store`
MODULE_REF = re.compile(r":mod:`~?((?:engine|models|pipeline|reports)(?:\.\w+)+)`")
#: files outside the repository: the workspace's shared folder, absolute paths of one machine
OUTSIDE_REF = re.compile(r"\.\./shared/|/work/|/home/\w")


def texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and string literal (docstrings included) of one module."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(t.start[0], t.string) for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def module_exists(dotted: str, root: Path = ROOT) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def problems(path: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with the references of one module under ``root`` (the repository)."""
    where = path.relative_to(root)
    out = []
    for line, text in texts(path):
        out += [
            f"{where}:{line}: {m} does not exist" for m in PATH_REF.findall(text) if not (root / m).exists()
        ]
        out += [
            f"{where}:{line}: module {m} does not exist"
            for m in MODULE_REF.findall(text)
            if not module_exists(m, root)
        ]
        out += [f"{where}:{line}: cites {m.group(0)!r}, outside the repo" for m in OUTSIDE_REF.finditer(text)]
    return out


def sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_every_cited_path_and_module_exists_and_none_is_outside() -> None:
    assert len(sources()) > 100  # the scan reads the packages (a wrong ROOT would pass vacuously)
    found = [p for path in sources() for p in problems(path)]
    assert found == []


@pytest.mark.parametrize(
    ("comment", "bad"),
    [
        ("# see pipeline/bench/calibrate_cost.py", "pipeline/bench/calibrate_cost.py does not exist"),
        ('"""As :mod:`pipeline.bench.bench_metrics` does."""', "module pipeline.bench.bench_metrics"),
        ("# measured (../shared/NOTES-ENV.md)", "outside the repo"),
    ],
)
def test_the_scan_catches_a_stale_reference(tmp_path: Path, comment: str, bad: str) -> None:
    # a small repository of its own: the probe cites one file that exists there and one that does not
    (tmp_path / "pipeline" / "campaign").mkdir(parents=True)
    (tmp_path / "pipeline" / "campaign" / "driver.py").write_text("")
    probe = tmp_path / "pipeline" / "probe.py"
    probe.write_text(f"{comment}\nx = 1  # pipeline/campaign/driver.py and $TGMS_CACHE/models/x exist\n")
    (found,) = problems(probe, tmp_path)
    assert bad in found and found.startswith("pipeline/probe.py:1:")
