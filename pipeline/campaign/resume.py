"""Resume, decided in one place: which of a cell's tasks still need running, given its records on disk.

A cell's records file (``records/<cell>.jsonl``) is appended one record per finished task and kept across
reruns of the same run directory. A record in it counts for the cell (is reused) only when

1. its task is one of the cell's tasks (a narrower task list leaves the others aside);
2. it was made under the same cell spec: its ``cell_spec_sha256`` equals the cell's. A rerun in the same
   directory with, say, another temperature has another spec, so the old answers are not its answers and
   the tasks run again. When the cell has a spec, a record without the field (nothing says what made it)
   is not reused either; a job without a spec (a bench or test calling the executor directly) keeps
   every record;
3. it finished: an ``infra_error`` record stays in the file (never lost, never scored) and its task runs
   again, the rerun's record then superseding it.

Of several records of one task the first finished one counts, else the last infra failure (the progress
display and the cell's metrics show it until the rerun lands). MLflow holds no per-task state: the cell's
run is found again by its tag (:mod:`pipeline.campaign.tracking`) and its metrics are recomputed from the
records kept here, so the records file is this decision's only input.

The driver (counting what is left, and which records make a cell's metrics) and the executor (what it
submits) both ask :func:`resume_cell`, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.systems.runner import read_records

__all__ = ["CellResume", "current_records", "resume_cell"]

INFRA_ERROR = "infra_error"


@dataclass(frozen=True)
class CellResume:
    """One cell's resume decision."""

    records: list[TaskRecord]
    """The records that count: one per task of the cell that has one (finished, else its last infra
    failure), in file order."""
    todo: list[Task]
    """The cell's tasks without a finished record, in task order: what still needs running."""
    stale: int
    """Records of the cell's tasks left aside because another cell spec (or none) made them."""

    @property
    def done_ids(self) -> set[str]:
        return {r.task_id for r in self.records if r.status != INFRA_ERROR}


def _select(
    lines: Iterable[TaskRecord], task_ids: set[str], spec_sha256: str | None
) -> tuple[list[TaskRecord], int]:
    best: dict[str, TaskRecord] = {}
    stale = 0
    for r in lines:
        if r.task_id not in task_ids:
            continue
        if spec_sha256 is not None and r.cell_spec_sha256 != spec_sha256:
            stale += 1
            continue
        if r.task_id not in best or best[r.task_id].status == INFRA_ERROR:
            best[r.task_id] = r
    return list(best.values()), stale


def resume_cell(records_path: str | Path, tasks: Sequence[Task], spec_sha256: str | None) -> CellResume:
    """The decision for one cell: its ``tasks`` against the records in
    ``records_path`` (absent: nothing done), reused only under the cell's ``spec_sha256`` (None: any)."""
    ids = {t.id for t in tasks}
    kept, stale = _select(read_records(records_path), ids, spec_sha256)
    done = CellResume(kept, [], stale).done_ids
    return CellResume(kept, [t for t in tasks if t.id not in done], stale)


def current_records(
    records_path: str | Path, tasks: Sequence[Task], spec_sha256: str | None
) -> list[TaskRecord]:
    """The records that count for the cell now (:attr:`CellResume.records`): what its metrics are made of."""
    return resume_cell(records_path, tasks, spec_sha256).records
