"""A real campaign writes each cell's spec and tags the cell run with its hash; the parent's id is the hash
of those specs; a rerun with only operational changes resumes the same runs.

The smallest campaign of the smoke harness (``test_smoke.campaign``: a real Hydra run, real Ray, a SQLite
MLflow store, the scripted test double): one cheap system, one seed, no mutation experiment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hydra")
pytest.importorskip("ray")
pytest.importorskip("mlflow")

from pipeline.campaign.cell_spec import CELL_SPEC_TAG, CellSpec, Provenance, campaign_id
from tests.pipeline.campaign.test_smoke import campaign, client, runs

OVERRIDES = ("systems=[static_graph_rag]", "seeds=[0]", "experiment.mutations.enabled=false")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("cell_spec")
    run_dir, cache = root / "run", root / "cache"
    proc = campaign(run_dir, cache, *OVERRIDES)
    return {"run_dir": run_dir, "cache": cache, "proc": proc, "db": run_dir / "mlflow.db"}


def test_each_cell_has_its_spec_file_artifact_and_tag(run: dict[str, Any]) -> None:
    (cell,) = runs(run["db"], "smoke", "cell")
    cell_id = cell.data.tags["tgms.cell_id"]
    path = run["run_dir"] / "specs" / f"{cell_id}.json"
    written = path.read_bytes()
    spec = CellSpec.from_json(written.decode())  # also checks the file's sha256 against its fields
    assert cell.data.tags[CELL_SPEC_TAG] == spec.sha256()
    artifact = Path(client(run["db"]).download_artifacts(cell.info.run_id, "cell_spec.json"))
    assert artifact.read_bytes() == written
    assert spec.system.name == "static_graph_rag" and spec.generation.seed == 0
    manifest = json.loads(next((run["run_dir"] / "bundles").glob("*/manifest.json")).read_text())
    assert spec.suite.store_digest == manifest["store_digest"]
    records = [
        json.loads(x) for x in (run["run_dir"] / "records" / f"{cell_id}.jsonl").read_text().splitlines()
    ]
    assert sorted({r["task_id"] for r in records}) == spec.selection.task_ids
    assert {r["cell_spec_sha256"] for r in records} == {spec.sha256()}  # each record names its cell's spec
    assert spec.provenance.git_revision  # the checkout's revision, outside the hash


def test_the_parent_id_is_the_hash_of_the_cell_specs(run: dict[str, Any]) -> None:
    from tests.pipeline.campaign.test_config import load

    (parent,) = runs(run["db"], "smoke", "campaign")
    (bundle,) = (run["run_dir"] / "bundles").iterdir()
    manifest = json.loads((bundle / "manifest.json").read_text())
    specs = [CellSpec.from_json(p.read_text()) for p in sorted((run["run_dir"] / "specs").glob("*.json"))]
    config = load("experiment=smoke", *OVERRIDES)
    assert parent.data.tags["tgms.campaign_id"] == campaign_id(config, {"collegemsg": manifest}, specs)
    # and from scratch, as the driver plans it (tasks selected from the run's bundle)
    from pipeline.campaign.driver import plan_cells

    planned = plan_cells(config, {"collegemsg": (bundle, manifest)}, Provenance()).specs.values()
    assert sorted(s.sha256() for s in planned) == sorted(s.sha256() for s in specs)


def test_an_operational_change_resumes_the_same_runs(run: dict[str, Any]) -> None:
    (parent,) = runs(run["db"], "smoke", "campaign")
    before = {p.name: p.read_bytes() for p in (run["run_dir"] / "specs").iterdir()}
    # a description, a timeout and the model's concurrency differ: params logged before now disagree,
    # which would be E_CONFLICT if the parent's params were still checked on resume
    proc = campaign(
        run["run_dir"], run["cache"], *OVERRIDES, "experiment.description=edited",
        "model.timeout_s=11", "model.concurrency=5",
    )  # fmt: skip
    assert "0 to run" in proc.stderr
    (again,) = runs(run["db"], "smoke", "campaign")
    assert again.info.run_id == parent.info.run_id
    assert again.data.params["experiment.description"] == parent.data.params["experiment.description"]
    assert len(runs(run["db"], "smoke", "cell")) == 1
    after = {p.name: p.read_bytes() for p in (run["run_dir"] / "specs").iterdir()}
    assert after == before  # the same specs, byte for byte (same checkout)
