"""``tgms-campaign experiment=smoke``, end to end, as a user runs it: a real Hydra run, real Ray, a real
SQLite MLflow store, the scripted test-double endpoint (CI only, never a reported result).

The run uses the first 12,000 CollegeMsg events (``catalog.suites.collegemsg.source``) so it takes
seconds; everything else is the smoke experiment as shipped: all four systems, two seeds, a mutation
experiment. The tests read what it left: MLflow runs, metrics with their denominators, artifacts, the
records, the printed tables, the report built from MLflow alone, a rerun that resumes, a multirun sweep
that lands in one experiment, and a real ``mlflow server`` answering over REST.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hydra")
pytest.importorskip("ray")
mlflow = pytest.importorskip("mlflow")

from tests.conftest import collegemsg_head  # noqa: E402
from tgms.pipeline.campaign.bundle import read_manifest  # noqa: E402
from tgms.pipeline.campaign.cell_spec import CELL_SPEC_TAG, CellSpec, Provenance, campaign_id  # noqa: E402

MODEL_NAME = "scripted"  # conf/model/scripted.yaml
SYSTEMS = ["static_graph_rag", "text_to_cypher", "tgms", "vector_rag"]
EVENTS = 12_000


def campaign(
    run_dir: Path, cache: Path, *overrides: str, multirun: bool = False
) -> subprocess.CompletedProcess:
    head = collegemsg_head(cache.parent, EVENTS)
    where = [f"hydra.sweep.dir={run_dir}"] if multirun else [f"hydra.run.dir={run_dir}"]
    argv = [
        sys.executable, "-m", "tgms.pipeline.campaign", *(["-m"] if multirun else []),
        "experiment=smoke", f"catalog.suites.collegemsg.source={head}", f"run.cache_dir={cache}",
        "cluster.num_cpus=2", "run.progress_every_s=0.5", *where, *overrides,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}  # the run's own store
    env.update({"TGMS_CACHE": str(cache), "RAY_AUTH_MODE": "disabled"})
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def client(db: Path) -> Any:
    return mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}")


def runs(db: Path, experiment: str, kind: str) -> list[Any]:
    c = client(db)
    exp = c.get_experiment_by_name(experiment)
    assert exp is not None
    return c.search_runs([exp.experiment_id], filter_string=f"tags.`tgms.kind` = '{kind}'", max_results=1000)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("smoke")
    run_dir, cache = root / "run", root / "cache"
    proc = campaign(run_dir, cache)
    return {"run_dir": run_dir, "cache": cache, "proc": proc, "db": run_dir / "mlflow.db"}


def test_parent_and_cell_runs_with_metrics(smoke: dict[str, Any]) -> None:
    parents = runs(smoke["db"], "smoke", "campaign")
    assert len(parents) == 1
    parent = parents[0]
    manifest = json.loads(next((smoke["run_dir"] / "bundles").glob("*/manifest.json")).read_text())
    assert parent.data.tags["tgms.store_digest.collegemsg"] == manifest["store_digest"]
    assert parent.data.tags["tgms.test_sha256.collegemsg"] == manifest["test_sha256"]
    assert parent.data.tags["tgms.git_revision"]
    # what the MLflow UI shows: names a person reads, the commit in its own field
    assert parent.info.run_name == f"smoke · collegemsg · {MODEL_NAME}"
    assert re.fullmatch(r"[0-9a-f]{40}", parent.data.tags["mlflow.source.git.commit"])
    assert parent.data.params["experiment.name"] == "smoke"
    assert parent.info.status == "FINISHED"
    cells = runs(smoke["db"], "smoke", "cell")
    assert sorted((r.data.tags["tgms.system"], r.data.tags["tgms.seed"]) for r in cells) == sorted(
        (s, seed) for s in SYSTEMS for seed in ("0", "1")
    )
    for r in cells:
        assert r.data.tags["mlflow.parentRunId"] == parent.info.run_id
        tags = r.data.tags
        assert (
            r.info.run_name == f"{tags['tgms.system']} · seed {tags['tgms.seed']} · {tags['tgms.ablation']}"
        )
        serving = json.loads(r.data.tags["tgms.serving"])
        assert serving["kind"] == "scripted" and serving["temperature"] == 0.0
        assert "tgms.params_b" not in r.data.tags, "the scripted double has no size: no Table 6 point"
        m = r.data.metrics
        n = m["n_tasks"]
        assert n >= 4 and m["accuracy_den"] + m["n_unscored_infra"] == n
        assert 0 <= m["accuracy_num"] <= m["accuracy_den"]
        assert m["coverage_den"] == m["accuracy_den"]
        records = (
            (smoke["run_dir"] / "records" / f"{r.data.tags['tgms.cell_id']}.jsonl").read_text().splitlines()
        )
        assert len({json.loads(x)["task_id"] for x in records}) == n
        arts = {a.path for a in client(smoke["db"]).list_artifacts(r.info.run_id)}
        assert "records.jsonl" in arts
    tgms_cells = [r for r in cells if r.data.tags["tgms.system"] == "tgms"]
    assert all("plan_validity_first_den" in r.data.metrics for r in tgms_cells)


def test_parent_artifacts_comparisons_and_mutations(smoke: dict[str, Any]) -> None:
    parent = runs(smoke["db"], "smoke", "campaign")[0]
    c = client(smoke["db"])
    arts = {a.path for a in c.list_artifacts(parent.info.run_id)}
    assert {"comparisons.json", "config.yaml"} <= arts
    comparisons = json.loads(Path(c.download_artifacts(parent.info.run_id, "comparisons.json")).read_text())
    assert len(comparisons) == 2 * 6  # two seeds, every pair of four systems
    assert all(x["ci_low"] <= x["diff"] <= x["ci_high"] for x in comparisons)
    assert any(k.startswith("ci.") for k in parent.data.metrics)
    muts = runs(smoke["db"], "smoke", "mutations")
    assert len(muts) == 1 and any(k.endswith(".cases") for k in muts[0].data.metrics)


def test_tables_printed_and_report_from_mlflow_alone(smoke: dict[str, Any], tmp_path: Path) -> None:
    out = smoke["proc"].stdout
    assert "Table 4" in out and "Table 5" in out
    parent = runs(smoke["db"], "smoke", "campaign")[0]
    proc = subprocess.run(
        [sys.executable, "-m", "tgms.pipeline.cli", "report", "--run-id", parent.info.run_id,
         "--tracking-uri", f"sqlite:///{smoke['db']}", "--out", str(tmp_path / "report")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = {p.name for p in (tmp_path / "report").iterdir()}
    assert {"table4.md", "table4.tex", "table5.md", "table5.tex", "accuracy_by_system.png"} <= files
    table4 = (tmp_path / "report" / "table4.md").read_text()
    for system in SYSTEMS:
        assert system in table4


def test_each_cell_has_its_spec_file_artifact_and_tag(smoke: dict[str, Any]) -> None:
    """Every cell writes its resolved spec; the cell run holds it and its hash; each record names it."""
    manifest = json.loads(next((smoke["run_dir"] / "bundles").glob("*/manifest.json")).read_text())
    cells = runs(smoke["db"], "smoke", "cell")
    assert len(cells) == 8
    for cell in cells:
        cell_id = cell.data.tags["tgms.cell_id"]
        written = (smoke["run_dir"] / "specs" / f"{cell_id}.json").read_bytes()
        spec = CellSpec.from_json(written.decode())  # also checks the file's sha256 against its fields
        assert cell.data.tags[CELL_SPEC_TAG] == spec.sha256()
        artifact = Path(client(smoke["db"]).download_artifacts(cell.info.run_id, "cell_spec.json"))
        assert artifact.read_bytes() == written
        assert spec.system.name == cell.data.tags["tgms.system"]
        assert str(spec.generation.seed) == cell.data.tags["tgms.seed"]
        assert spec.suite.store_digest == manifest["store_digest"]
        lines = (smoke["run_dir"] / "records" / f"{cell_id}.jsonl").read_text().splitlines()
        records = [json.loads(x) for x in lines]
        assert sorted({r["task_id"] for r in records}) == spec.selection.task_ids
        assert {r["cell_spec_sha256"] for r in records} == {spec.sha256()}
        assert spec.provenance.git_revision  # the checkout's revision, outside the hash
    assert len({c.data.tags[CELL_SPEC_TAG] for c in cells}) == 8  # no two cells share a spec


def test_the_parent_id_is_the_hash_of_the_cell_specs(smoke: dict[str, Any]) -> None:
    from tests.pipeline.campaign.test_config import load
    from tgms.pipeline.campaign.driver import plan_cells

    (parent,) = runs(smoke["db"], "smoke", "campaign")
    (bundle,) = (smoke["run_dir"] / "bundles").iterdir()
    manifest = read_manifest(bundle)
    specs = [CellSpec.from_json(p.read_text()) for p in sorted((smoke["run_dir"] / "specs").glob("*.json"))]
    config = load("experiment=smoke")
    assert parent.data.tags["tgms.campaign_id"] == campaign_id(config, {"collegemsg": manifest}, specs)
    # and from scratch, as the driver plans it (tasks selected from the run's bundle)
    planned = plan_cells(config, {"collegemsg": (bundle, manifest)}, Provenance()).specs.values()
    assert sorted(s.sha256() for s in planned) == sorted(s.sha256() for s in specs)


def test_rerun_resumes_without_running_a_task_twice(smoke: dict[str, Any]) -> None:
    """The same campaign again runs nothing; only operational settings differ (a description, a timeout,
    the model's concurrency: not in any cell spec), so it resumes the same parent run and its cells."""
    before = {p.name: p.read_bytes() for p in (smoke["run_dir"] / "records").iterdir()}
    specs = {p.name: p.read_bytes() for p in (smoke["run_dir"] / "specs").iterdir()}
    (parent,) = runs(smoke["db"], "smoke", "campaign")
    # params logged before now disagree: E_CONFLICT if the parent's params were still checked on resume
    proc = campaign(
        smoke["run_dir"], smoke["cache"], "experiment.description=edited", "model.timeout_s=11",
        "model.concurrency=5",
    )  # fmt: skip
    assert "0 to run" in proc.stderr
    after = {p.name: p.read_bytes() for p in (smoke["run_dir"] / "records").iterdir()}
    assert after == before
    (again,) = runs(smoke["db"], "smoke", "campaign")  # the same parent run, resumed
    assert again.info.run_id == parent.info.run_id
    assert again.data.params["experiment.description"] == parent.data.params["experiment.description"]
    assert len(runs(smoke["db"], "smoke", "cell")) == 8
    assert {p.name: p.read_bytes() for p in (smoke["run_dir"] / "specs").iterdir()} == specs


def test_multirun_lands_its_runs_in_one_experiment(tmp_path: Path, smoke: dict[str, Any]) -> None:
    sweep = tmp_path / "sweep"
    no_mutations = "experiment.mutations.enabled=false"
    # the two systems with the cheapest cells: the sweep is what is tested here (a tgms job cost ~50 s
    # under CI load, an embedder per job a minute); tgms itself runs in the smoke fixture
    proc = campaign(
        sweep, smoke["cache"], "systems=static_graph_rag,text_to_cypher", "seeds=[0]", no_mutations,
        multirun=True,
    )  # fmt: skip
    # the bundle the smoke fixture built is copied from the shared cache, verified, not built again
    assert "is a verified copy of" in proc.stderr and "building the collegemsg bundle" not in proc.stderr
    parents = runs(sweep / "mlflow.db", "smoke", "campaign")
    assert len(parents) == 2
    combos = sorted((p.data.params["systems"], p.data.params["seeds"]) for p in parents)
    systems = ("static_graph_rag", "text_to_cypher")
    assert combos == sorted((f'["{s}"]', "[0]") for s in systems)
    assert len(runs(sweep / "mlflow.db", "smoke", "cell")) == 2
