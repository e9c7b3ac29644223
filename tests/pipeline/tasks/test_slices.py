"""The ``stratified-N`` slice (pipeline/tasks/slices.py) and its campaign wiring (``experiment.slice``,
``experiment.task_list``): every family and the probes, deterministic, independent of the input order."""

from __future__ import annotations

import random

import pytest

from tests.suite_fixtures import suite_of, task
from tgms.engine.api import InvalidArgError
from tgms.pipeline.campaign.cells import select_tasks
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.tasks.slices import apply_slice, pick_listed, read_task_list, slice_size, stratified

FAMILY_SIZES = {"T1": 16, "T3": 5, "T4": 8, "T5": 14, "probe": 6}  # a CollegeMsg dev split's shape


def _tasks() -> list[Task]:
    out = []
    for fam, n in FAMILY_SIZES.items():
        for i in range(n):
            out.append(task(id=f"s/{fam}.t{i % 3}/{i:02d}", family=fam, template=f"{fam}.t{i % 3}"))
    return out


def test_thirty_cover_every_family_and_the_probes_with_templates_taking_turns() -> None:
    picked = stratified(_tasks(), 30)
    assert len(picked) == 30 and [t.id for t in picked] == sorted(t.id for t in picked)
    by_family = {f: [t for t in picked if t.family == f] for f in FAMILY_SIZES}
    assert {f: len(v) for f, v in by_family.items()} == {"T1": 7, "T3": 5, "T4": 6, "T5": 6, "probe": 6}
    assert {t.template for t in by_family["T1"]} == {"T1.t0", "T1.t1", "T1.t2"}


def test_deterministic_and_independent_of_input_order() -> None:
    tasks = _tasks()
    shuffled = tasks[:]
    random.Random(7).shuffle(shuffled)
    assert stratified(shuffled, 30) == stratified(tasks, 30)
    small = stratified(tasks, 5)
    assert sorted(str(t.family) for t in small) == sorted(FAMILY_SIZES)  # one of each family first
    assert len(stratified(tasks, 1000)) == len(tasks)


def test_slice_names_and_task_lists() -> None:
    assert slice_size("stratified-30") == 30
    for bad in ("stratified-0", "random-30", "stratified"):
        with pytest.raises(ValueError, match="stratified-N"):
            slice_size(bad)
    tasks = _tasks()
    assert apply_slice(tasks, "stratified-6") == stratified(tasks, 6)
    ids = read_task_list("# a comment\ns/T3.t0/00\n\n s/T1.t1/01  # why\n")
    assert [t.id for t in pick_listed(tasks, ids)] == ["s/T1.t1/01", "s/T3.t0/00"]
    with pytest.raises(KeyError, match="nope"):
        pick_listed(tasks, ["nope"])


def test_select_tasks_applies_the_slice_after_the_split() -> None:
    tasks = _tasks()
    suite = suite_of(tasks)
    assert select_tasks(suite, "dev", None, None, "stratified-30") == stratified(tasks, 30)
    assert len(select_tasks(suite, "dev", None, 4, "stratified-30")) == 4
    listed = select_tasks(suite, "dev", None, None, None, ["s/probe.t0/00"])
    assert [t.id for t in listed] == ["s/probe.t0/00"]
    with pytest.raises(InvalidArgError, match="task_list"):
        select_tasks(suite, "dev", None, None, None, ["s/missing/00"])
