"""Per-task outcomes and the campaign metrics over them, each with its explicit numerator and denominator.

A rate without its denominator misleads (DESIGN §4; paper §5.2): a zero unsupported-claim rate can come
from correct supported answers or from abstaining, and a conditional accuracy means little without the
coverage it is conditioned on. So every metric is ``{"value", "num", "den"}`` and says which tasks it is
over; ``value`` is None when the denominator is 0 (nothing was measured), never a made-up 0.

Which tasks each metric is over:

==========================  ===============================================  ==========================
metric                      numerator                                        denominator
==========================  ===============================================  ==========================
accuracy                    correct answers                                  all tasks (abstain: wrong)
coverage                    emitted answers                                  all tasks
conditional_accuracy        correct answers                                  emitted answers
plan_validity_first         first emitted plan valid                         tasks where it is measured
repeat_rate                 repair replies repeating an earlier attempt      repair replies (measured)
execution_success           plan executed                                    tasks where it is measured
unsupported_rate            emitted answers with an unsupported gated claim  emitted answers, measured
mean_tokens                 total tokens                                     tasks where tokens known
mean_latency_s              total latency (seconds)                          tasks where latency known
==========================  ===============================================  ==========================
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from tgms.pipeline.scoring.typed import score

GROUP_KEYS = ("system", "kind", "family")


class Metric(TypedDict):
    """One metric: ``value`` = ``num`` / ``den`` (None when ``den`` is 0)."""

    value: float | None
    num: int | float  # a count, or a total (tokens: int, latency: float) for the means
    den: int


@dataclass(frozen=True)
class TaskOutcome:
    """What one system did on one task.

    ``emitted``: the system committed to a typed answer (False: it abstained; a prediction it did not
    emit is never scored correct). The ``bool | None`` measurements are None when not measured for this
    system or task (e.g. a baseline without plans has no ``plan_valid_first``). ``unsupported`` is
    answer-level: at least one emitted gated claim was rated unsupported by the claim verifier.
    """

    task_id: str
    system: str
    kind: str
    gold: Any
    emitted: bool
    predicted: Any
    plan_valid_first: bool | None = None
    executed: bool | None = None
    unsupported: bool | None = None
    tokens: int | None = None
    latency_s: float | None = None
    family: str | None = None
    #: repair replies (attempts after the first) and how many repeated an earlier attempt (tgms)
    repair_replies: int | None = None
    repeat_replies: int | None = None

    def __post_init__(self) -> None:
        if self.tokens is not None and self.tokens < 0:
            raise ValueError(f"task {self.task_id!r}: tokens must be >= 0, got {self.tokens}")
        if self.latency_s is not None and self.latency_s < 0:
            raise ValueError(f"task {self.task_id!r}: latency_s must be >= 0, got {self.latency_s}")
        if (self.repeat_replies or 0) > (self.repair_replies or 0):
            raise ValueError(f"task {self.task_id!r}: more repeated replies than repair replies")
        if self.unsupported and not self.emitted:
            raise ValueError(f"task {self.task_id!r}: an answer that was not emitted cannot be unsupported")

    @property
    def correct(self) -> bool:
        """Emitted and right by the typed-answer rule of its kind (:func:`pipeline.scoring.typed.score`)."""
        return self.emitted and score(self.kind, self.gold, self.predicted)


def ratio(num: int | float, den: int) -> Metric:
    """A metric from its numerator and denominator (``value`` None when ``den`` is 0)."""
    return {"value": (num / den) if den else None, "num": num, "den": den}


def summarize(outcomes: Iterable[TaskOutcome]) -> dict[str, Any]:
    """The metrics of a set of outcomes (usually one system's) with explicit denominators, plus ``n``.

    Outcomes are pooled as given: summarizing several systems together mixes them (use :func:`breakdown`).
    """
    rows = list(outcomes)
    correct = [o.correct for o in rows]
    emitted = [o.emitted for o in rows]
    n_correct, n_emitted = sum(correct), sum(emitted)
    measured_unsupported = [o.unsupported for o in rows if o.emitted and o.unsupported is not None]
    tokens = [o.tokens for o in rows if o.tokens is not None]
    latency = [o.latency_s for o in rows if o.latency_s is not None]
    repairs = [o for o in rows if o.repair_replies is not None]
    return {
        "n": len(rows),
        "accuracy": ratio(n_correct, len(rows)),
        "coverage": ratio(n_emitted, len(rows)),
        "conditional_accuracy": ratio(n_correct, n_emitted),
        "plan_validity_first": _measured([o.plan_valid_first for o in rows]),
        "repeat_rate": ratio(
            sum(o.repeat_replies or 0 for o in repairs), sum(o.repair_replies or 0 for o in repairs)
        ),
        "execution_success": _measured([o.executed for o in rows]),
        "unsupported_rate": _measured(measured_unsupported),
        "mean_tokens": ratio(sum(tokens), len(tokens)),
        "mean_latency_s": ratio(float(sum(latency)), len(latency)),
    }


def breakdown(
    outcomes: Iterable[TaskOutcome], by: Literal["system", "kind", "family"]
) -> dict[str, dict[str, Any]]:
    """:func:`summarize` per group (sorted by group name). ``by="family"`` leaves out outcomes without a
    family (their totals are still in :func:`summarize` of all outcomes)."""
    if by not in GROUP_KEYS:
        raise ValueError(f"breakdown by must be one of {list(GROUP_KEYS)}, got {by!r}")
    groups: dict[str, list[TaskOutcome]] = {}
    for o in outcomes:
        k: str | None = getattr(o, by)
        if k is not None:
            groups.setdefault(k, []).append(o)
    return {k: summarize(groups[k]) for k in sorted(groups)}


def per_task_scores(outcomes: Iterable[TaskOutcome]) -> tuple[list[str], dict[str, list[float]]]:
    """Per-task correctness (1.0 / 0.0) of every system over the same tasks in the same order, the input
    of the paired bootstrap: ``(task_ids sorted, {system: scores})``, systems sorted.

    Raises ``ValueError`` when a system has a task twice or the systems do not share one task set (a
    paired comparison over different tasks is not paired).
    """
    table: dict[str, dict[str, float]] = {}
    for o in outcomes:
        row = table.setdefault(o.system, {})
        if o.task_id in row:
            raise ValueError(f"system {o.system!r} has task {o.task_id!r} more than once")
        row[o.task_id] = 1.0 if o.correct else 0.0
    if not table:
        return [], {}
    systems = sorted(table)
    tasks = sorted(table[systems[0]])
    for s in systems[1:]:
        if set(table[s]) != set(tasks):
            missing = sorted(set(tasks) - set(table[s]))[:5]
            extra = sorted(set(table[s]) - set(tasks))[:5]
            raise ValueError(
                f"system {s!r} and {systems[0]!r} differ in tasks: "
                f"{s!r} lacks {missing}, has extra {extra} (first five of each)"
            )
    return tasks, {s: [table[s][t] for t in tasks] for s in systems}


def _measured(flags: Sequence[bool | None]) -> Metric:
    """The rate of True among the flags that are not None."""
    known = [f for f in flags if f is not None]
    return ratio(sum(known), len(known))
