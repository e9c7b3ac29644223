"""The seeded experiment: reproducible byte for byte, every expected-detected class at 100 %, the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.suite_fixtures import suite_of
from tgms.engine.canonical import dumps
from tgms.engine.ingest.build import build_store
from tgms.pipeline.cli.main import main
from tgms.pipeline.mutations import run_experiment, table5_markdown
from tgms.pipeline.scoring.suite import Suite
from tgms.pipeline.tasks.build import build_suite

from .conftest import tasks


@pytest.fixture(scope="module")
def suite() -> Suite:
    ts = tasks()
    return suite_of(ts[:3], ts[3:], dataset="tiny")


@pytest.fixture(scope="module")
def result(store_dir: Path, suite: Suite) -> dict[str, Any]:
    return run_experiment(store_dir, suite, per_class=12, seed=3)


def test_reproducible(store_dir: Path, suite: Suite, result: dict[str, Any]) -> None:
    assert dumps(run_experiment(store_dir, suite, per_class=12, seed=3)) == dumps(result)
    assert dumps(run_experiment(store_dir, suite, per_class=12, seed=4)) != dumps(result)


def test_detection(result: dict[str, Any]) -> None:
    by = {r["class"]: r for r in result["classes"]}
    assert result["pool"]["false_positives"] == 0
    for r in result["classes"]:
        assert r["false_positives"] == 0
        assert r["cases"] <= 12
        if r["expect_detected"] and r["cases"]:
            assert r["detected"] == r["cases"], r
    # without replacement: each pool claim at most once, so never more cases than the pool holds
    assert by["count ±1"]["pool"] < 12 and by["count ±1"]["cases"] == by["count ±1"]["pool"]
    assert all(r["cases"] <= min(12, r["pool"]) for r in result["classes"])
    assert by["truncated-page count"]["detected_without_mechanism"] == 0
    assert by["entity member dropped"]["detected"] == 0 and by["entity member dropped"]["note"]
    assert by["count ±1"]["detected_without_mechanism"] is None


def test_table_and_cli(store_dir: Path, suite: Suite, result: dict[str, Any], tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    md = table5_markdown(result)
    count = next(r for r in result["classes"] if r["class"] == "count ±1")
    row = f"| count ±1 | {count['cases']} | {count['cases']} | — | 0 | {count['pool']} |"
    assert md.count("\n| ") == len(result["classes"]) + 1 and row in md
    path = tmp_path / "suite.json"
    path.write_text(suite.to_json())
    out = tmp_path / "out"
    args = ["mutations", "--store", str(store_dir), "--suite", str(path), "--out", str(out)]
    assert main([*args, "--per-class", "12", "--seed", "3"]) == 0
    assert (out / "mutations.json").read_text() == dumps(result) + "\n"
    assert (out / "table5.md").read_text() == md
    assert "| mutation class |" in capsys.readouterr().out


@pytest.fixture(scope="module")
def syn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Suite]:
    """A small generated synthetic store and its suite (probes included)."""
    root = tmp_path_factory.mktemp("syn") / "synthetic"
    build_store("synthetic", root, events=5000, nodes=200, seed=0).close()
    return root, build_suite(root, "synthetic", 0)


def test_generated_suite_reproducible(syn: tuple[Path, Suite]) -> None:
    root, suite = syn
    first = run_experiment(root, suite, per_class=20, seed=0)
    assert dumps(run_experiment(root, suite, per_class=20, seed=0)) == dumps(first)
    by = {r["class"]: r for r in first["classes"]}
    for name in ("wrong belief state", "truncated-page count"):
        assert by[name]["cases"] == min(20, by[name]["pool"]) > 0, by[name]
    for r in first["classes"]:
        assert r["false_positives"] == 0
        if r["expect_detected"]:
            assert r["detected"] == r["cases"], r


def test_cli_without_a_suite_generates_it(syn: tuple[Path, Suite], tmp_path: Path) -> None:
    """DESIGN §6's `tgms mutations --store DIR --out DIR`: the suite is generated from the store first,
    and the result equals the two-step run on that suite."""
    from tgms.pipeline.cli.main import main
    from tgms.pipeline.tasks.generate import suite_text

    root, suite = syn
    out = tmp_path / "out"
    assert main(["mutations", "--store", str(root), "--out", str(out), "--dataset", "synthetic",
                 "--per-class", "10", "--seed", "0"]) == 0  # fmt: skip
    assert (out / "suite.json").read_text() == suite_text(suite)
    assert (out / "mutations.json").read_text() == dumps(
        run_experiment(root, suite, per_class=10, seed=0)
    ) + "\n"


def test_cli_refuses_a_suite_it_cannot_mutate(
    store_dir: Path, suite: Suite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--suite`` is read as a typed suite: a file that is not one is ``E_SCHEMA`` naming the field, a task
    without an oracle plan (a user's question) ``E_SCHEMA`` naming the task, no tasks ``E_INVALID_ARG``;
    nothing is written."""
    import json

    from tests.suite_fixtures import task

    question = task(id="collegemsg/T1.x/00", oracle_plan=None)
    bad = {
        "not_a_suite": ('{"splits": {"dev": [], "test": []}}', "E_SCHEMA", "format"),
        "no_plan": (suite_of([*suite.splits.dev, question]).to_json(), "E_SCHEMA", "collegemsg/T1.x/00"),
        "empty": (suite_of([]).to_json(), "E_INVALID_ARG", "no tasks"),
    }
    for name, (text, code, said) in bad.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        out = tmp_path / f"out-{name}"
        capsys.readouterr()
        assert main(["mutations", "--store", str(store_dir), "--suite", str(path), "--out", str(out)]) != 0
        err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
        assert err["error"] == code and said in json.dumps(err), (name, err)
        assert not (out / "mutations.json").exists(), name
