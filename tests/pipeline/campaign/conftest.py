"""Shared by the campaign tests: one Ray runtime per pytest session, a small canonical bundle, job helpers.

The bundle is built from the first :data:`EVENTS` events of ``../shared/data/CollegeMsg.txt`` with the
canonical clock (real data, real suite; the brute-force cross-check skipped to keep it to seconds). Ray is
started once for the session (2 CPUs, no dashboard) and stopped at its end; actors reserve a tenth of a CPU
each so a test's actors never wait for another's to be reaped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import collegemsg_head
from tgms.models.config import ModelConfig
from tgms.pipeline.campaign.bundle import Manifest, build_bundle, read_suite
from tgms.pipeline.campaign.cells import Cell
from tgms.pipeline.campaign.config import ClusterConf
from tgms.pipeline.campaign.executor import CellJob, run_settings
from tgms.pipeline.scoring.suite import Suite, Task

EVENTS = 12_000
SUITE_NAME = "collegemsg"


@dataclass(frozen=True)
class Bundle:
    dir: Path
    manifest: Manifest
    suite: Suite

    @property
    def tasks(self) -> list[Task]:
        """Every task of the suite, dev then test (more than any test needs)."""
        return [*self.suite.splits.dev, *self.suite.splits.test]

    def bundles(self) -> dict[str, tuple[Path, dict[str, Any]]]:
        return {SUITE_NAME: (self.dir, self.manifest)}


#: TGMS retrieves worked plans by feature hashing in these tests: no embedding model to load in every actor
#: (~30 s under CI load); the scripted endpoint's plans do not depend on the examples shown
TEST_KNOBS: dict[str, dict[str, Any]] = {"tgms": {"examples_embedder": "hashing"}}


def cluster_conf(**over: Any) -> ClusterConf:
    return ClusterConf(**{"kind": "local", "num_cpus": 2, "actors": 2, "actor_concurrency": 4,
                          "actor_cpus": 0.1, **over})  # fmt: skip


@pytest.fixture(scope="session")
def ray_info() -> Iterator[dict[str, Any]]:
    """The session's Ray runtime (started here, stopped at the end of the session)."""
    from tgms.pipeline.campaign.actors import scratch_base, sweep_stale
    from tgms.pipeline.campaign.ray_runtime import ray_session

    with ray_session(cluster_conf()) as info:
        yield info
    sweep_stale(scratch_base(0, None))  # the stores of actors the tests killed (SIGKILL leaves them)


@pytest.fixture(scope="session")
def small_bundle(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    root = tmp_path_factory.mktemp("campaign_bundle")
    head = collegemsg_head(root, EVENTS)
    out_dir = root / "bundle"
    manifest = build_bundle("collegemsg", 0, out_dir, source=str(head), crosscheck=False)
    return Bundle(out_dir, manifest, read_suite(out_dir))


def scripted_model(**over: Any) -> ModelConfig:
    return ModelConfig.model_validate(
        {"name": "scripted", "kind": "scripted", "concurrency": 16, "timeout_s": 10.0, **over}
    )


def jobs_for(
    bundle: Bundle, systems: list[str], n_tasks: int, out: Path, model: ModelConfig, seed: int = 0
) -> list[CellJob]:
    """One job per system over the first ``n_tasks`` tasks, records under ``out``."""
    jobs = []
    for system in systems:
        cell = Cell(SUITE_NAME, system, model.name, seed)
        jobs.append(
            CellJob(
                cell,
                dict(TEST_KNOBS.get(system, {})),
                run_settings(cell, model.generation),
                bundle.tasks[:n_tasks],
                out / "records" / f"{cell.cell_id}.jsonl",
                out / "traces" / f"{cell.cell_id}.jsonl",
            )
        )
    return jobs
