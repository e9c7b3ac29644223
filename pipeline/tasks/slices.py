"""Named slices of a suite split: ``stratified-N`` (N tasks spread over every family and template).

The planner benchmark and the campaign config (``experiment.slice``) pick the same tasks from the same
suite on every machine: the choice depends only on task ids, templates and families, never on a random
draw, a clock or the order of the suite file.

How ``stratified-N`` chooses: families take turns (in :data:`~pipeline.tasks.model.FAMILIES` order, so
the probes are always among the first six picks), and inside a family the templates take turns (the
first task of each template by id, then the second, ...), so N tasks cover every family present and as
many distinct questions per family as N allows. A family with fewer tasks than its share drops out of the
turn and the others fill the slice. The result is in task-id order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.tasks.model import FAMILIES

SLICE_PATTERN = r"^stratified-[1-9][0-9]*$"
_SLICE = re.compile(SLICE_PATTERN)


def slice_size(spec: str) -> int:
    """N of ``stratified-N``; ValueError naming the accepted form otherwise."""
    if not _SLICE.match(spec):
        raise ValueError(f"unknown slice {spec!r}; the accepted form is stratified-N (N >= 1)")
    return int(spec.split("-", 1)[1])


def _family_order(families: Iterable[str]) -> list[str]:
    known = [f for f in FAMILIES if f in set(families)]
    return known + sorted(set(families) - set(FAMILIES))  # a family outside the registry still takes turns


def _template_turns(tasks: Sequence[Task]) -> list[Task]:
    """One family's tasks with the templates taking turns: (rank in template, template, id)."""
    rank: dict[str, int] = {}
    keyed = []
    for t in sorted(tasks, key=lambda t: t.id):
        template = str(t.template)
        keyed.append((rank.get(template, 0), template, t.id, t))
        rank[template] = rank.get(template, 0) + 1
    return [k[-1] for k in sorted(keyed, key=lambda k: k[:3])]


def stratified(tasks: Sequence[Task], n: int) -> list[Task]:
    """``n`` tasks (all of them when there are fewer) chosen as the module docstring says, by task id."""
    by_family: dict[str, list[Task]] = {}
    for t in tasks:
        by_family.setdefault(t.family or "?", []).append(t)
    queues = {f: _template_turns(by_family[f]) for f in _family_order(by_family)}
    picked: list[Task] = []
    turn = 0
    while len(picked) < n and any(len(q) > turn for q in queues.values()):
        for q in queues.values():
            if len(q) > turn and len(picked) < n:
                picked.append(q[turn])
        turn += 1
    return sorted(picked, key=lambda t: t.id)


def apply_slice(tasks: Sequence[Task], spec: str) -> list[Task]:
    """The tasks of the named slice ``spec`` (see :func:`slice_size`)."""
    return stratified(tasks, slice_size(spec))


def pick_listed(tasks: Sequence[Task], ids: Sequence[str]) -> list[Task]:
    """The tasks whose ids are listed, by task id; KeyError naming the ids the split does not hold (a
    typo must not shrink a benchmark silently)."""
    by_id = {t.id: t for t in tasks}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise KeyError(f"{len(missing)} listed task id(s) are not in the split: {missing[:5]}")
    return sorted((by_id[i] for i in dict.fromkeys(ids)), key=lambda t: t.id)


def read_task_list(text: str) -> list[str]:
    """Task ids from a task-list file: one per line, blank lines and ``#`` comments skipped."""
    return [s for s in (line.split("#", 1)[0].strip() for line in text.splitlines()) if s]
