"""A campaign logged to a real SQLite MLflow store, as the driver logs one, for the report's tests.

Experiment ``paper`` holds:

- parent ``A``: the smoke config (composed by Hydra from ``conf/``, validated), model ``small`` (0.5 B),
  the four systems on seeds 0 and 1 plus ``tgms`` under ``no_gating`` on seed 0; its comparisons, the
  suite's Table 2, a real mutation experiment nested under it; and a real operator-benchmark run;
- parents ``B1`` and ``B2``: model ``big`` (7 B), seed 0, one system each (``tgms``, ``vector_rag``),
  as the jobs of a ``--multirun`` sweep over systems log them (their comparison exists only across
  parents).

Experiment ``empty`` holds a parent without cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.campaign._records import SYSTEMS, cell_records, small_suite, tags_of
from tgms.pipeline.campaign.tracking import CampaignTracker, default_artifact_location, default_uri
from tgms.pipeline.scoring.suite import Suite, Task
from tgms.pipeline.systems.record import TaskRecord

REPO = Path(__file__).resolve().parents[2]
SMALL, BIG = "small", "big"
SIZES = {SMALL: 0.5, BIG: 7.0}


@dataclass
class Logged:
    run_dir: Path
    uri: str
    tasks: list[Task]
    suite: Suite
    parent_a: str
    parents_b: list[str]
    mutations: dict[str, Any]
    ops: list[dict[str, Any]]
    cells: dict[str, list[TaskRecord]] = field(default_factory=dict)  # cell id -> records


def composed_config(model: str) -> dict[str, Any]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from tgms.pipeline.campaign.config import validate

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base=None):
        cfg = compose("config", overrides=["experiment=smoke", "run.dir=.", f"model.name={model}"])
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    return validate(raw).model_dump(mode="json")


def _log_cell(tr: CampaignTracker, parent: str, tags: dict, records: list[TaskRecord], run_dir: Path) -> None:
    cell_id = tags["tgms.cell_id"]
    path = run_dir / "records" / f"{cell_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(r.to_json() + "\n" for r in records))
    child = tr.start_cell(parent, {"split": "dev"}, {**tags, "tgms.params_b": str(SIZES[tags["tgms.model"]])})
    tr.log_cell(child, records, [path])
    tr.end_run(child)


@pytest.fixture(scope="session")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Logged:
    from tgms.pipeline.latency.operators import run as ops_run
    from tgms.pipeline.mutations import run_experiment

    root = tmp_path_factory.mktemp("report_campaign")
    store_dir, suite = small_suite(root)
    tasks = list(suite.splits.dev)
    run_dir = root / "run"
    uri = default_uri(run_dir)
    run_dir.mkdir()
    tr = CampaignTracker(uri, "paper", default_artifact_location(run_dir))
    cells: dict[str, list[TaskRecord]] = {}

    parent_a = tr.start_campaign("A", composed_config(SMALL), {"tgms.model": SMALL})
    by_cell = {}
    for seed in (0, 1):
        for system in SYSTEMS:
            tags = tags_of("collegemsg", system, SMALL, seed, "none")
            by_cell[tuple(tags.items())] = cells[tags["tgms.cell_id"]] = cell_records(
                tasks, system, seed, SMALL
            )
    tags = tags_of("collegemsg", "tgms", SMALL, 0, "no_gating")
    by_cell[tuple(tags.items())] = cells[tags["tgms.cell_id"]] = cell_records(
        tasks, "tgms", 0, SMALL, "no_gating"
    )
    for key, recs in by_cell.items():
        _log_cell(tr, parent_a, dict(key), recs, run_dir)
    tr.log_comparisons(parent_a, by_cell)
    tr.log_suite_tables(parent_a, {"collegemsg": suite})
    mutations = run_experiment(store_dir, suite, per_class=2, seed=0)
    tr.log_mutations(parent_a, mutations, run_dir / "mutations")
    ops = ops_run([10_000], 1, root / "ops", lambda _: None)
    tr.log_ops_bench(ops, parent_id=parent_a)
    tr.end_run(parent_a)

    parents_b = []
    for system in ("tgms", "vector_rag"):
        config = composed_config(BIG)
        config["systems"] = [system]
        parent = tr.start_campaign(f"B-{system}", config, {"tgms.model": BIG})
        tags = tags_of("collegemsg", system, BIG, 0, "none")
        cells[tags["tgms.cell_id"]] = recs = cell_records(tasks, system, 0, BIG)
        _log_cell(tr, parent, tags, recs, run_dir)
        tr.log_comparisons(parent, {tuple(tags.items()): recs})  # one system: no pair
        tr.end_run(parent)
        parents_b.append(parent)

    empty = CampaignTracker(uri, "empty", default_artifact_location(run_dir))
    empty.end_run(empty.start_campaign("E", {"x": 1}, {}))
    return Logged(run_dir, uri, tasks, suite, parent_a, parents_b, mutations, ops, cells)
