"""``tgms bench``: one package, one subcommand per benchmark, output to stdout and ``--json`` only.

``docs/benchmarks.md`` is rewritten only with ``--update-docs`` (before, ``tgms bench ops`` rewrote the
tracked file of whatever directory it ran in); the stores go to ``--work`` or the user's cache, never
into the working directory; a bad scale is a structured error, not a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tgms.pipeline.bench import BENCHES
from tgms.pipeline.bench.report import update_section
from tgms.pipeline.cli.main import build_parser, main
from tgms.pipeline.latency.stores import default_work_dir, parse_scales

SMALL = "3000"  # a synthetic store this small builds in about a second
DOCS = """# Benchmarks

Hand-written notes stay.

## Operators: `tgms bench ops`

<!-- ops-bench:begin -->
old figures
<!-- ops-bench:end -->

## Side by side with Raphtory: `tgms bench peers`

<!-- peers-bench:begin -->
peer figures
<!-- peers-bench:end -->
"""


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory that looks like a checkout (its own docs/benchmarks.md), as the working directory."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "benchmarks.md").write_text(DOCS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TGMS_CACHE", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    return tmp_path


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_benchmark_is_a_subcommand() -> None:
    bench = build_parser()._subparsers._group_actions[0].choices["bench"]  # type: ignore[union-attr]
    names = set(bench._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert names == set(BENCHES) >= {"ops", "peers", "store", "cold", "metrics", "motifs", "traversal"}
    assert not (Path(__file__).resolve().parents[3] / "bench").exists()  # the scripts directory is gone


def test_bad_scales_are_a_structured_error(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("abc", "1e5,x", "0", "-3", "1.5", "nan", "1e99"):
        assert main(["bench", "ops", "--scales", bad, "--datasets", ""]) == 2, bad
        err = json.loads(capsys.readouterr().err)
        assert err["error"] == "E_INVALID_ARG" and err["details"]["field"] == "scales", bad
    assert parse_scales("1e5, 2000,collegemsg", datasets=True) == [100_000, 2000, "collegemsg"]


def test_ops_leaves_the_checkout_as_it_was(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _files(checkout)
    out = checkout.parent / f"{checkout.name}-ops.json"
    assert main(["bench", "ops", "--scales", SMALL, "--datasets", "", "--reps", "1", "--json", str(out)]) == 0
    assert _files(checkout) == before  # no docs rewritten, no store left in the working directory
    printed = capsys.readouterr().out
    records = json.loads(out.read_text())
    assert "| scale | case |" in printed and {r["scale"] for r in records} == {3000}
    assert (default_work_dir() / "syn-3000" / "store.json").exists()  # the cache, outside the checkout


def test_update_docs_rewrites_only_its_section(checkout: Path) -> None:
    argv = ["bench", "ops", "--scales", SMALL, "--datasets", "", "--reps", "1", "--update-docs"]
    assert main(argv) == 0
    text = (checkout / "docs" / "benchmarks.md").read_text()
    assert "old figures" not in text and "| 3,000 | entity_history/one_node |" in text
    assert "Hand-written notes stay." in text and "peer figures" in text


def test_update_section_appends_a_missing_section(tmp_path: Path) -> None:
    path = tmp_path / "b.md"
    path.write_text("# Benchmarks\n\nintro\n")
    update_section(path, "x-bench", "X", "figures")
    update_section(path, "x-bench", "X", "newer figures")
    assert (
        path.read_text()
        == "# Benchmarks\n\nintro\n\n## X\n\n<!-- x-bench:begin -->\nnewer figures\n<!-- x-bench:end -->\n"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["metrics", "--scales", SMALL, "--reps", "1"],
        ["traversal", "--scale", SMALL, "--reps", "1"],
        ["motifs", "--reps", "1", "--n-events", SMALL, "--filters", "10"],
        ["cold", "--scale", SMALL, "--runs", "1"],
        ["store", "--cases", f"syn{SMALL}", "--backends", "duckdb"],
    ],
    ids=lambda a: a[0],
)
def test_the_finer_benchmarks_run(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    assert main(["bench", *argv, "--work", str(tmp_path / "work"), "--json", str(out)]) == 0
    records = json.loads(out.read_text())
    assert records and not any("error" in r for r in records), records
    assert capsys.readouterr().out.startswith(("|", "Measured"))
