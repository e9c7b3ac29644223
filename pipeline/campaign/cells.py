"""Cells: one (suite, system, model, seed, ablation) of a campaign, and the tasks each runs.

A cell is the unit of an MLflow child run and of a records file. Its id is readable
(``collegemsg.tgms.smollm2-135m.s0.none``) and stable across reruns of the same config, which is what
lets a rerun find its records and its runs. Ablations apply to ``tgms`` alone: a baseline has no switch
to turn off, so it runs once, as ``none``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tgms.engine.api import InvalidArgError
from tgms.pipeline.campaign.config import CampaignConfig
from tgms.pipeline.scoring.suite import Suite, Task
from tgms.pipeline.tasks.slices import apply_slice, pick_listed

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _safe(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-") or "x"


@dataclass(frozen=True, order=True)
class Cell:
    suite: str
    system: str
    model: str
    seed: int
    ablation: str = "none"

    @property
    def cell_id(self) -> str:
        parts = (self.suite, self.system, self.model, f"s{self.seed}", self.ablation)
        return ".".join(_safe(p) for p in parts)

    def run_name(self, with_suite: bool = False) -> str:
        """The cell's name in the MLflow UI: ``tgms · seed 0 · none`` (the suite first when a campaign has
        several); the id stays in the ``tgms.cell_id`` tag."""
        parts = ([self.suite] if with_suite else []) + [self.system, f"seed {self.seed}", self.ablation]
        return " · ".join(parts)

    def tags(self) -> dict[str, str]:
        return {
            "tgms.kind": "cell",
            "tgms.cell_id": self.cell_id,
            "tgms.suite": self.suite,
            "tgms.system": self.system,
            "tgms.model": self.model,
            "tgms.seed": str(self.seed),
            "tgms.ablation": self.ablation,
        }


def cells_of(config: CampaignConfig) -> list[Cell]:
    """The run's cells in a fixed order: suite, seed, system, ablation (baselines only ``none``)."""
    out = []
    for suite in config.suites:
        for seed in config.seeds:
            for system in config.systems:
                for ablation in config.ablations if system == "tgms" else ["none"]:
                    out.append(Cell(suite, system, config.model.name, seed, ablation))
    return list(dict.fromkeys(out))  # "none" listed once for a baseline even when ablations repeat it


def system_config(config: CampaignConfig, cell: Cell) -> dict[str, Any]:
    """The knobs of the cell's system, with its ablation's switches applied."""
    knobs = dict(config.catalog.systems.get(cell.system, {}))
    knobs.update(config.catalog.ablations[cell.ablation].switches)
    return knobs


def select_tasks(
    suite: Suite,
    split: str,
    per_family: int | None,
    limit: int | None,
    slice_: str | None = None,
    task_ids: list[str] | None = None,
) -> list[Task]:
    """The tasks of ``split`` (``all``: dev then test), a stratified slice of at most ``per_family`` per
    family, then the named slice ``slice_`` (``stratified-N``, :mod:`pipeline.tasks.slices`) or exactly the
    listed ``task_ids``, then at most ``limit``; the result is in task-id order.

    The slice takes a family's templates in turn (the first task of each template by id, then the
    second, ...), so two tasks of a family are two different questions where the family has them, and the
    slice is the same on every machine."""
    splits = suite.splits
    chosen = (splits.dev, splits.test) if split == "all" else (_split(suite, split),)
    tasks = sorted((t for part in chosen for t in part), key=lambda t: t.id)
    if per_family is not None:
        rank: dict[str, int] = {}
        order = []
        for t in tasks:
            key = str(t.template)
            order.append((rank.get(key, 0), key, t.id, t))
            rank[key] = rank.get(key, 0) + 1
        taken: dict[str, int] = {}
        kept = []
        for _, _, _, t in sorted(order, key=lambda x: x[:3]):
            fam = t.family or "?"
            if taken.get(fam, 0) < per_family:
                taken[fam] = taken.get(fam, 0) + 1
                kept.append(t)
        tasks = sorted(kept, key=lambda t: t.id)
    if task_ids is not None:
        try:
            tasks = pick_listed(tasks, task_ids)
        except KeyError as exc:
            raise InvalidArgError(f"experiment.task_list: {exc.args[0]}", split=split) from None
    elif slice_ is not None:
        tasks = apply_slice(tasks, slice_)
    return tasks[:limit] if limit is not None else tasks


def _split(suite: Suite, name: str) -> tuple[Task, ...]:
    if name == "dev":
        return suite.splits.dev
    if name == "test":
        return suite.splits.test
    if name == "train":
        return suite.splits.train
    raise InvalidArgError(f"unknown split {name!r}", allowed=["all", "dev", "test", "train"])
