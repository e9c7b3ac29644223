"""The ``memory`` ablation in a real campaign: ``tgms-campaign experiment=smoke`` with ``tgms`` alone under
ablations ``none`` and ``memory``, against the scripted test-double endpoint (its smoke rule answers the
memory-summary prompt with a note that copies the fenced facts), real Ray, a real SQLite MLflow store.

Both ablations are reported (MLflow cell runs, Table 4 rows); the memory cell built its notes before its
tasks (every record says how many, and that none was refused), tasks whose question names a noted week had
notes in their planner prompt (so that prompt differs from the ``none`` cell's), and the ``none`` cell is
the system without memory (no memory section, no memory record).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hydra")
pytest.importorskip("ray")
mlflow = pytest.importorskip("mlflow")

from tests.pipeline.campaign.test_smoke import campaign, runs  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("memory_ablation")
    run_dir, cache = root / "run", root / "cache"
    proc = campaign(
        run_dir,
        cache,
        "systems=[tgms]",
        "seeds=[0]",
        "ablations=[none,memory]",
        "experiment.mutations.enabled=false",
    )
    return {"run_dir": run_dir, "proc": proc, "db": run_dir / "mlflow.db"}


def records(run_dir: Path, ablation: str) -> list[dict[str, Any]]:
    (path,) = (run_dir / "records").glob(f"collegemsg.tgms.*.s0.{ablation}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def planner_sha(rec: dict[str, Any]) -> str:
    return next(c["prompt_sha256"] for c in rec["llm_calls"] if c["role"] == "planner")


def test_both_ablations_are_reported(run: dict[str, Any]) -> None:
    cells = runs(run["db"], "smoke", "cell")
    assert sorted(r.data.tags["tgms.ablation"] for r in cells) == ["memory", "none"]
    assert all(r.data.tags["tgms.system"] == "tgms" for r in cells)
    for r in cells:
        m = r.data.metrics
        n = len(records(run["run_dir"], r.data.tags["tgms.ablation"]))
        assert m["n_tasks"] == n >= 4 and m["accuracy_den"] + m["n_unscored_infra"] == n
    table4 = run["proc"].stdout.split("Table 4", 1)[1].split("Table 5", 1)[0]
    ablations = [
        line.split("|")[3].strip() for line in table4.splitlines() if line.startswith("| collegemsg")
    ]
    assert ablations[:2] == ["none", "memory"], table4


def test_the_memory_cell_built_notes_and_used_them(run: dict[str, Any]) -> None:
    none, memory = records(run["run_dir"], "none"), records(run["run_dir"], "memory")
    assert len(none) == len(memory) >= 4
    assert sorted(r["task_id"] for r in none) == sorted(r["task_id"] for r in memory)
    assert all("memory" not in r["extras"] for r in none)
    # each actor builds the system once, before its tasks; the first to build writes the notes (one request
    # per week), an actor that comes later on the node finds them on disk and sends no request
    builds = [r["extras"]["memory"]["build"] for r in memory]
    for b in builds:
        assert b["refused"] == 0 and b["stored"] == b["requests"]
        assert b["stored"] + b["reused"] == b["live_notes"] == b["weeks"] - b["empty"] >= 2
    assert any(b["stored"] for b in builds)
    assert all(b["requests"] == 0 for b in builds if b["reused"])
    used = [r for r in memory if r["extras"]["memory"]["notes"]]
    assert used, [r["extras"]["memory"] for r in memory]
    by_id = {r["task_id"]: r for r in none}
    for rec in memory:
        same_prompt = planner_sha(rec) == planner_sha(by_id[rec["task_id"]])
        assert same_prompt == (not rec["extras"]["memory"]["notes"]), rec["task_id"]


def test_the_memory_ablation_switches_memory_on_for_tgms_only() -> None:
    from tests.pipeline.campaign.test_config import load
    from tgms.pipeline.campaign.cells import cells_of, system_config
    from tgms.pipeline.systems.base import check_config

    config = load("systems=[tgms,vector_rag]", "ablations=[none,memory]")
    cells = cells_of(config)
    assert sorted((c.system, c.ablation) for c in cells) == [
        ("tgms", "memory"),
        ("tgms", "none"),
        ("vector_rag", "none"),
    ]
    knobs = {(c.system, c.ablation): system_config(config, c) for c in cells}
    assert check_config("tgms", knobs["tgms", "memory"]).memory is True  # type: ignore[attr-defined]
    assert check_config("tgms", knobs["tgms", "none"]).memory is False  # type: ignore[attr-defined]
    assert "memory" not in knobs["tgms", "none"]  # the none ablation's config is what it was
