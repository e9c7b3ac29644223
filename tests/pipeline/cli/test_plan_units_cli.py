"""``tgms plan verify`` on the plan issue 24 reports (a 1.5B model summed valid-time ends to answer a count;
docs/examples/units_invalid.json) prints the unit violation with its legal alternatives and exits 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tgms.engine.ingest.build import build_store
from tgms.pipeline.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "units_invalid.json"


@pytest.fixture(scope="module")
def cm_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("units") / "cm"
    build_store("collegemsg", root).close()
    return root


def test_plan_verify_prints_the_unit_violation_and_its_alternatives(
    cm_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["plan", "verify", str(EXAMPLE), "--store", str(cm_store)])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and not out["valid"]
    [v] = out["violations"]
    assert (v["code"], v["step"], v["field"]) == ("unit", "s2", "args.field")
    assert "sum of time points" in v["message"]
    assert v["legal"]["found"] == "time" and "count" in v["legal"]["wanted"]
    assert any("count" in u for u in v["legal"]["use"])


def test_without_units_the_plan_passes(cm_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "verify", str(EXAMPLE), "--store", str(cm_store), "--without", "units"])
    assert code == 0 and json.loads(capsys.readouterr().out)["valid"]
