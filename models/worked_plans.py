"""Worked plans in the planner's prompt, and the question's times as named constants (issue 25, items 2–3).

**Named times.** A small model copies a 16-digit microsecond time badly (one wrong digit moves a window by
days) and a worked plan's times are the wrong ones for the task. So the prompt lists the µs numbers of the
question as named constants and a plan may write the name (the string ``"T1"``) wherever a number goes:

- time points (≥ :data:`TIME_FLOOR`, i.e. after 1973) are ``T1, T2, …`` in increasing order, durations
  ``D1, D2, …`` in increasing order. They come from the question's µs numbers and from dates and
  durations written in words (a person's question: "in May 2004" gives the month's start and the next
  month's start, "April and May 2004" April's start and June's, "20 to 26 April 2004" the first day's
  start and the day after the last, "on 8 October 2004" that day's start and the next, "in 2011" the
  year's start and the next year's, "since 2012" that year's start, "within 10 minutes" 600000000), all
  UTC, ends half-open. Naming
  by order, not by position in the sentence, gives the same names to the same roles across paraphrases
  of a question (a window's start is always the smaller).
- :func:`resolve_names` replaces, in a plan's step args, every string that is exactly a constant's name by
  its number, before the verifier sees the plan. Nothing else is touched (a node called ``T1`` in a
  question's data would be a string the model meant as a name only if it were listed, and it is not: the
  constants hold numbers only).
- the task's input uids are named too, ``U1, U2, …`` in the order the question mentions them
  (:func:`uid_names`): a worked plan that reads two entities' reachability then says ``U1`` and ``U2``,
  where a copied plan would otherwise repeat the example's uid or one of the task's twice.
- :func:`with_names` is the inverse for a worked plan: its numbers that equal one of its own question's
  constants become the names, so the worked plan shows the model exactly what to write.

**Worked plans** (:class:`WorkedPlan`) are what a planner prompt shows as examples: a question, its input
uids, the expected answer kind and the plan (``steps`` and ``answer_spec``). The fixed ones live in
:mod:`models.planner`; the retrieved ones come from a suite's ``train`` split (pipeline.systems.worked_plans),
never from dev or test.

**A question that pins the belief state** ("…, as recorded at 2025-01-01T00:00:10.999999Z
(1735689610999999 µs), before later corrections?") is answered by the same plan with ``as_of_tt`` on every
step. The train split has no such draws (a correction probe's draw is a write to the store), and both
Qwen2.5-Coder models, shown only unpinned plans, left ``as_of_tt`` out on every "before" probe of a 30-task
run (issue 25). So a worked plan shown for a pinned question is shown pinned to the same belief time
(:func:`pin_to_question`): its question gains the same clause and its steps ``as_of_tt``. The plan is a
correct plan for the pinned question (``as_of_tt`` reads every operator's input as believed then), and the
belief time is the task's own, so nothing of any other task reaches the prompt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from tgms.engine.api import us_to_iso

#: a µs number in a question: "(1083369600000000 µs)", "[1083369600000000 µs, …", "600000000 µs"
_MICROS = re.compile(r"(?<![\w.])(\d{1,19}) ?µs\b")
#: numbers at or above this are time points (1973-03-03T09:46:40Z), below it durations
TIME_FLOOR = 10**14


@dataclass(frozen=True)
class NamedValue:
    """A named constant of a question: a time (T1), a duration (D1) or an input uid (U1)."""

    name: str  # "T1", "D2", "U1"
    value: int | str
    kind: str  # "time" | "duration" | "uid"


_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_MONTH = r"(January|February|March|April|May|June|July|August|September|October|November|December)"
#: "20 to 26 April 2004", "between 27 and 30 April 2004", "1 to 7 May 2004"
_DAY_RANGE = re.compile(
    rf"\b(\d{{1,2}})(?: {_MONTH})? (?:to|and|-|–) (\d{{1,2}}) {_MONTH},? (\d{{4}})\b", re.I
)
#: "April and May 2004", "April to June 2004", "December 2003 to February 2004": the first month's start
#: and the start of the month after the last
_MONTH_RANGE = re.compile(
    rf"\b{_MONTH}(?:,? (\d{{4}}))? (?:to|and|through|until|-|–) {_MONTH},? (\d{{4}})\b", re.I
)
#: a bare year: "in 2011", "during 2004" (the year's start and the next year's), "since 2012", "before
#: 2005" (the year's start only); not a year inside an ISO date ("2004-05-01")
_YEAR = re.compile(r"\b(in|during|throughout|over|since|before|after|until|from|by) (\d{4})\b(?![-\d])", re.I)
_WHOLE_YEAR = ("in", "during", "throughout", "over")
#: "8 October 2004"
_DAY = re.compile(rf"\b(\d{{1,2}}) {_MONTH},? (\d{{4}})\b", re.I)
#: "May 2004" (not preceded by a day number)
_MONTH_YEAR = re.compile(rf"(?<!\d )\b{_MONTH},? (\d{{4}})\b", re.I)
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "five": 5, "ten": 10, "24": 24}
#: "10 minutes", "one hour", "24-hour", "7 days", "60 seconds"
_DURATION = re.compile(r"\b(\d+|a|an|one|two|three|five|ten)[ -](second|minute|hour|day|week)s?\b", re.I)
_SECOND = 1_000_000


def _day_start(year: int, month: int, day: int) -> int | None:

    try:
        return int(datetime(year, month, day, tzinfo=UTC).timestamp()) * _SECOND
    except ValueError:  # "31 April": not a date, so nothing to name
        return None


def _month_index(name: str) -> int:
    return _MONTHS.index(name.lower()) + 1


def worded_times(question: str) -> set[int]:
    """The µs values of the dates and durations the question writes in words (UTC; ends half-open)."""
    out: set[int | None] = set()
    taken: list[tuple[int, int]] = []
    for m in _MONTH_RANGE.finditer(question):
        m1, y1, m2, y2 = m.groups()
        first_month, last_month, last_year = _month_index(m1), _month_index(m2), int(y2)
        first_year = int(y1) if y1 else last_year - (first_month > last_month)  # "December to February 2004"
        out |= {
            _day_start(first_year, first_month, 1),
            _day_start(last_year + last_month // 12, last_month % 12 + 1, 1),
        }
        taken.append(m.span())
    for m in _DAY_RANGE.finditer(question):
        d1, m1, d2, m2, y = m.groups()
        first = _day_start(int(y), _month_index(m1 or m2), int(d1))
        last = _day_start(int(y), _month_index(m2), int(d2))
        out |= {first, last + 86400 * _SECOND if last is not None else None}
        taken.append(m.span())
    for m in _DAY.finditer(question):
        if any(a <= m.start() < b for a, b in taken):
            continue
        d, mon, y = m.groups()
        start = _day_start(int(y), _month_index(mon), int(d))
        if start is not None:
            out |= {start, start + 86400 * _SECOND}
        taken.append(m.span())
    for m in _MONTH_YEAR.finditer(question):
        if any(a <= m.start() < b for a, b in taken):
            continue
        mon, y = _month_index(m.group(1)), int(m.group(2))
        out |= {_day_start(y, mon, 1), _day_start(y + mon // 12, mon % 12 + 1, 1)}
    for m in _YEAR.finditer(question):
        if any(a <= m.start(2) < b for a, b in taken):
            continue
        year = int(m.group(2))
        out.add(_day_start(year, 1, 1))
        if m.group(1).lower() in _WHOLE_YEAR:
            out.add(_day_start(year + 1, 1, 1))
    for m in _DURATION.finditer(question):
        n = int(m.group(1)) if m.group(1).isdigit() else _WORDS[m.group(1).lower()]
        out.add(n * _UNITS[m.group(2).lower()] * _SECOND)
    return {v for v in out if v is not None}


def time_names(question: str) -> tuple[NamedValue, ...]:
    """The question's times as named constants (its µs numbers, and the dates and durations it writes in
    words): time points T1.. then durations D1.., each ascending."""
    found = sorted({int(m) for m in _MICROS.findall(question)} | worded_times(question))
    times = [v for v in found if v >= TIME_FLOOR]
    durations = [v for v in found if 0 < v < TIME_FLOOR]
    return tuple(
        [NamedValue(f"T{i}", v, "time") for i, v in enumerate(times, 1)]
        + [NamedValue(f"D{i}", v, "duration") for i, v in enumerate(durations, 1)]
    )


def uid_names(question: str, uids: tuple[str, ...] | list[str]) -> tuple[NamedValue, ...]:
    """The task's input uids as ``U1, U2, …`` in the order the question first mentions them (the roles of
    a question's entities keep their order across a template's draws: "from n6 and n561" is U1, U2);
    uids the question does not mention follow in sorted order."""

    def first(uid: str) -> int:
        m = re.search(rf"(?<![\w-]){re.escape(uid)}(?![\w-])", question)
        return m.start() if m else len(question) + 1

    ordered = sorted(dict.fromkeys(uids), key=lambda u: (first(u), u))
    return tuple(NamedValue(f"U{i}", u, "uid") for i, u in enumerate(ordered, 1))


def question_names(question: str, uids: tuple[str, ...] | list[str] = ()) -> tuple[NamedValue, ...]:
    """Every named constant of a question: its times and durations, then its input uids."""
    return time_names(question) + uid_names(question, uids)


def names_line(names: tuple[NamedValue, ...]) -> str:
    """The prompt's list, ``T1 = 1083369600000000; T2 = …; D1 = 600000000`` ("" when there are none)."""
    return "; ".join(f"{n.name} = {n.value}" for n in names)


def _map_args(value: Any, fn: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$ref"}:  # a reference is a path, never a constant
            return value
        return {k: _map_args(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_args(v, fn) for v in value]
    return fn(value)


def _map_steps(plan: dict[str, Any], fn: Any) -> dict[str, Any]:
    steps = plan.get("steps")
    if not isinstance(steps, list):
        return plan
    new_steps = [
        {**s, "args": _map_args(s["args"], fn)}
        if isinstance(s, dict) and isinstance(s.get("args"), dict)
        else s
        for s in steps
    ]
    return {**plan, "steps": new_steps}


def resolve_names(plan: dict[str, Any], names: tuple[NamedValue, ...]) -> tuple[dict[str, Any], list[str]]:
    """``plan`` with every step-arg string that is a constant's name replaced by its number, and the names
    used (in order of first use). A plan without names comes back equal to itself."""
    table = {n.name: n.value for n in names}
    used: list[str] = []

    def sub(v: Any) -> Any:
        if isinstance(v, str) and v in table:
            if v not in used:
                used.append(v)
            return table[v]
        return v

    if not table:
        return plan, used
    return _map_steps(plan, sub), used


def with_names(plan: dict[str, Any], names: tuple[NamedValue, ...]) -> dict[str, Any]:
    """``plan`` with every step-arg integer or string that equals a constant replaced by its name."""
    table: dict[int | str, str] = {n.value: n.name for n in names}

    def sub(v: Any) -> Any:
        return table[v] if type(v) in (int, str) and v in table else v

    return _map_steps(plan, sub) if table else plan


@dataclass(frozen=True)
class WorkedPlan:
    """One example for the prompt: a question and the plan that answers it."""

    question: str
    input_uids: tuple[str, ...]
    kind: str | None
    plan: dict[str, Any]  # steps and answer_spec only
    source: str = ""  # where it came from ("fixed:1", a train task id): recorded, never shown

    def render(self, n: int, named: bool) -> str:
        """The example as the prompt shows it: with named times, the constants and the plan citing them."""
        names = question_names(self.question, self.input_uids) if named else ()
        plan = with_names(self.plan, names)
        lines = [f"Example {n}. Question: {self.question}"]
        if names:
            lines.append(f"Names: {names_line(names)}")
        lines.append(f"Input uids: {_compact(list(self.input_uids))}. Answer kind: {self.kind}.")
        lines.append(_compact(plan))
        return "\n".join(lines)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


#: the clause that pins a question's belief state, with the µs number of its transaction time
_BELIEF = re.compile(
    r"\b(?:as (?:recorded|believed|known) (?:at|on)|as of transaction time)\b[^,;?]*?\(?(\d{16}) ?µs\)?", re.I
)


def belief_time(question: str) -> int | None:
    """The transaction time a question pins its belief state to ("as recorded at … (… µs)"), if any."""
    m = _BELIEF.search(question)
    return int(m.group(1)) if m else None


def pinned(example: WorkedPlan, tt: int) -> WorkedPlan:
    """``example`` asked as believed at transaction time ``tt``: the clause on its question, ``as_of_tt``
    on each of its steps (a step that has one keeps it)."""
    steps = [
        {**st, "args": {**st.get("args", {}), "as_of_tt": st.get("args", {}).get("as_of_tt", tt)}}
        if isinstance(st, dict)
        else st
        for st in example.plan.get("steps", [])
    ]
    question = example.question.rstrip().rstrip("?.").rstrip()
    clause = f", as recorded at {us_to_iso(tt)} ({tt} µs), before later corrections?"
    return replace(example, question=question + clause, plan={**example.plan, "steps": steps})


def pin_to_question(examples: tuple[WorkedPlan, ...], question: str) -> tuple[WorkedPlan, ...]:
    """The worked plans to show for ``question``: pinned to its belief time when it pins one and they do
    not already (module docstring), else as they are."""
    tt = belief_time(question)
    if tt is None:
        return examples
    return tuple(ex if belief_time(ex.question) is not None else pinned(ex, tt) for ex in examples)
