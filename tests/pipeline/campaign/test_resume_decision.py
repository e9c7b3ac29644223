"""Resume decided in one place (:func:`pipeline.campaign.resume.resume_cell`): which tasks of a cell still
run, given its records file. Finished records of the cell's spec are reused, infra failures rerun, records
of another cell spec (a rerun in the same directory with another temperature) or of no spec are not
reused, tasks outside the cell's list are ignored. The spec hashes come from the driver's own planning of
two configs that differ only in temperature, so the test follows what the driver does, not a made-up
hash. (The executor's use of the same decision runs on Ray in ``test_executor.py``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hydra")

from tests.pipeline.campaign._records import record
from tests.pipeline.campaign.test_cell_spec import BASE, fake_bundle, plan
from tests.pipeline.campaign.test_config import load
from tests.suite_fixtures import task
from tgms.models.config import GenerationConfig
from tgms.pipeline.campaign.executor import CellJob, run_settings, write_result
from tgms.pipeline.campaign.records import TaskResult, append_record
from tgms.pipeline.campaign.resume import current_records, resume_cell
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.record import TaskRecord


def tasks(*ids: str) -> list[Task]:
    return [task(id=i, family="T1") for i in ids]


def rec(task_id: str, status: str = "answered", spec: str | None = "s" * 64, **extra: Any) -> TaskRecord:
    return record(task_id=task_id, status=status, cell_spec_sha256=spec, **extra)


def test_an_absent_file_leaves_every_task_to_run(tmp_path: Path) -> None:
    decision = resume_cell(tmp_path / "none.jsonl", tasks("a", "b"), "s" * 64)
    assert decision.records == [] and [t.id for t in decision.todo] == ["a", "b"] and decision.stale == 0


def test_finished_records_count_infra_errors_rerun_and_a_torn_tail_is_no_record(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    for r in (rec("a"), rec("b", "infra_error"), rec("c", "model_error"), rec("x")):  # x: not the cell's
        append_record(path, r)
    with path.open("a", encoding="utf-8") as fh:  # a kill mid-write leaves half a line
        fh.write(rec("d").to_json()[:20])
    decision = resume_cell(path, tasks("a", "b", "c", "d"), "s" * 64)
    assert [t.id for t in decision.todo] == ["b", "d"], "infra errors and unrecorded tasks run"
    assert decision.done_ids == {"a", "c"}
    assert {r.task_id: r.status for r in decision.records} == {
        "a": "answered",
        "b": "infra_error",  # shown until its rerun lands
        "c": "model_error",
    }
    append_record(path, rec("b"))  # the rerun of b supersedes its infra failure
    append_record(path, rec("a", "abstained"))  # a later record of a finished task does not
    latest = {r.task_id: r.status for r in current_records(path, tasks("a", "b", "c", "d"), "s" * 64)}
    assert latest == {"a": "answered", "b": "answered", "c": "model_error"}


def test_records_of_another_spec_or_none_are_not_reused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    mine, other = "1" * 64, "2" * 64
    for r in (
        rec("a", spec=other),
        rec("b", spec=None),
        rec("c", spec=mine),
        rec("a", "infra_error", spec=mine),
    ):
        append_record(path, r)
    decision = resume_cell(path, tasks("a", "b", "c"), mine)
    assert [t.id for t in decision.todo] == ["a", "b"] and decision.stale == 2
    assert [(r.task_id, r.status) for r in decision.records] == [
        ("c", "answered"),
        ("a", "infra_error"),
    ]
    # a job without a spec (a bench calling the executor directly) keeps every record
    assert resume_cell(path, tasks("a", "b", "c"), None).done_ids == {"a", "b", "c"}


def test_a_rerun_with_another_temperature_in_the_same_directory_runs_every_task_again(tmp_path: Path) -> None:
    bundles = fake_bundle(tmp_path)
    first, second = load(*BASE), load(*BASE, "++model.temperature=0.5")
    p1, p2 = plan(first, bundles), plan(second, bundles)
    cell = next(iter(p1.specs))
    assert cell in p2.specs and p1.specs[cell].sha256() != p2.specs[cell].sha256()
    cell_tasks = p1.tasks[cell.suite]
    assert len(cell_tasks) > 3
    path = tmp_path / "records" / f"{cell.cell_id}.jsonl"
    settings = run_settings(cell, GenerationConfig(model=cell.model))
    job = CellJob(cell, {}, settings, cell_tasks, path, tmp_path / "traces.jsonl", p1.specs[cell].sha256())
    for t in cell_tasks[:3]:  # the first run finished three tasks, stamped by the executor's writer
        write_result(job, TaskResult(rec(t.id, spec=None)))
    again = resume_cell(path, cell_tasks, p1.specs[cell].sha256())
    assert len(again.todo) == len(cell_tasks) - 3 and again.stale == 0, "the same spec resumes"
    hotter = resume_cell(path, cell_tasks, p2.specs[cell].sha256())
    assert hotter.todo == cell_tasks and hotter.records == [] and hotter.stale == 3


def test_the_cell_s_tasks_are_returned_as_given(tmp_path: Path) -> None:
    given = tasks("a", "b")
    decision = resume_cell(tmp_path / "none.jsonl", given, None)
    assert all(x is y for x, y in zip(decision.todo, given, strict=True))  # the executor ships these
