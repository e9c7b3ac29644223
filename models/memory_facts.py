"""The facts of one week: a small, deterministic set of values computed by engine operators.

The evolution memory (:mod:`models.memory`) summarizes weeks of a store, and a summary is trusted only as
far as its numbers are the engine's. So the numbers come from here: each :class:`Fact` carries the operator
call that computed it (op, args with ``as_of_tt`` pinned to the belief state it was computed at, and the
payload field it was read from), so anyone can re-run the call and get the same value.

A week is an ISO week in valid time, UTC: ``[Monday 00:00, next Monday 00:00)``. Besides the operator
facts a week has its calendar identity (:class:`Week`: ``2004-W16``, its first and last day, the window's
ends in µs), which the summary may also name.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from tgms.engine.api import OpContext, call, us_to_iso

US_PER_S = 1_000_000
DAY = 86_400 * US_PER_S
WEEK = 7 * DAY
HOUR = 3_600 * US_PER_S
#: 1970-01-05 was a Monday: ISO weeks start at EPOCH_MONDAY + k * WEEK
EPOCH_MONDAY = 4 * DAY
TOP_K = 3  # senders listed per week
BURST_W = 24  # hourly bursts: a z-score against the trailing day
BURST_THRESHOLD = 3


@dataclass(frozen=True)
class Week:
    """An ISO week of valid time and its calendar names."""

    t_a: int  # Monday 00:00 UTC, µs
    t_b: int  # the next Monday 00:00 UTC, µs

    @property
    def window(self) -> dict[str, int]:
        return {"t_a": self.t_a, "t_b": self.t_b}

    @property
    def label(self) -> str:
        year, number, _ = _date(self.t_a).isocalendar()
        return f"{year}-W{number:02d}"

    @property
    def first_day(self) -> str:
        return _date(self.t_a).isoformat()

    @property
    def last_day(self) -> str:
        return _date(self.t_b - 1).isoformat()

    def calendar(self) -> dict[str, Any]:
        """What the summary may say about the week itself (also shown to the model)."""
        year, number, _ = _date(self.t_a).isocalendar()
        return {
            "week": self.label,
            "year": year,
            "week_number": number,
            "first_day": self.first_day,
            "last_day": self.last_day,
            "t_a": self.t_a,
            "t_b": self.t_b,
        }

    def strings(self) -> set[str]:
        """Calendar strings a summary may quote: the labels and both ends as UTC timestamps."""
        return {self.label, self.first_day, self.last_day, us_to_iso(self.t_a), us_to_iso(self.t_b)}

    def overlaps(self, t_a: int, t_b: int) -> bool:
        return self.t_a < t_b and t_a < self.t_b


def _date(us: int) -> dt.date:
    return dt.date(1970, 1, 1) + dt.timedelta(days=us // DAY)


def week_of(t: int) -> Week:
    """The ISO week holding valid time ``t`` (µs)."""
    start = EPOCH_MONDAY + ((t - EPOCH_MONDAY) // WEEK) * WEEK
    return Week(start, start + WEEK)


def weeks_between(t_a: int, t_b: int) -> list[Week]:
    """Every ISO week that overlaps ``[t_a, t_b)``, in order (partial weeks at the ends included whole)."""
    if t_a >= t_b:
        return []
    out, w = [], week_of(t_a)
    while w.t_a < t_b:
        out.append(w)
        w = Week(w.t_b, w.t_b + WEEK)
    return out


@dataclass(frozen=True)
class Fact:
    """One value and the operator call it was read from (``field``: the payload path, e.g. ``rows_total``)."""

    name: str
    value: Any
    op: str
    args: dict[str, Any]
    field: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "op": self.op, "args": self.args, "field": self.field}


@dataclass(frozen=True)
class WeekFacts:
    week: Week
    as_of_tt: int  # the belief state the facts were computed at (the store's transaction time then)
    facts: list[Fact] = field(default_factory=list)

    @property
    def events(self) -> int:
        return int(self.value("events") or 0)

    def value(self, name: str) -> Any:
        return next((f.value for f in self.facts if f.name == name), None)

    def values(self) -> dict[str, Any]:
        """``{name: value}``: what the summary prompt shows."""
        return {f.name: f.value for f in self.facts}

    def to_dict(self) -> dict[str, Any]:
        return {
            "week": self.week.calendar(),
            "as_of_tt": self.as_of_tt,
            "facts": [f.to_dict() for f in self.facts],
        }


def _payload(ctx: OpContext, op: str, args: dict[str, Any]) -> dict[str, Any]:
    # the memory's own bookkeeping calls, not an agent's: a week of events is always cheap, so unguarded
    return call(ctx, op, args, check_cost=False)["payload"]


def week_facts(ctx: OpContext, week: Week, as_of_tt: int) -> WeekFacts:
    """The facts of ``week`` at the store's current belief state, whose transaction time is ``as_of_tt``.

    The calls run on the current belief (``as_of_tt`` null: the same versions as ``as_of_tt`` = the last
    committed tt, and the context's cached arrays are reused); each fact records the call with
    ``as_of_tt`` pinned, so re-running it later gives the same value whatever was written since.
    """
    w = week.window
    facts: list[Fact] = []

    def add(name: str, value: Any, op: str, args: dict[str, Any], path: str) -> None:
        facts.append(Fact(name, value, op, {**args, "as_of_tt": as_of_tt}, path))

    totals_args = {
        "window": w,
        "aggregates": [
            {"fn": "count"},
            {"fn": "count_distinct", "field": "pair", "as": "pairs"},
            {"fn": "count_distinct", "field": "src", "as": "senders"},
        ],
    }
    row = _payload(ctx, "aggregate_events", totals_args)["rows"][0]
    add("events", row["count"], "aggregate_events", totals_args, "rows[0].count")
    if not row["count"]:
        return WeekFacts(week, as_of_tt, facts)
    add("distinct_pairs", row["pairs"], "aggregate_events", totals_args, "rows[0].pairs")
    add("senders", row["senders"], "aggregate_events", totals_args, "rows[0].senders")

    nodes_args = {"window": w, "group_by": ["node"], "limit": 1}
    add("active_nodes", _payload(ctx, "aggregate_events", nodes_args)["rows_total"], "aggregate_events",
        nodes_args, "rows_total")  # fmt: skip

    by_count = [{"field": "count", "desc": True}]
    top_args = {"window": w, "group_by": ["src"], "order_by": by_count, "limit": TOP_K}
    top = [
        {"uid": r["src"], "events": r["count"]} for r in _payload(ctx, "aggregate_events", top_args)["rows"]
    ]
    add("top_senders", top, "aggregate_events", top_args, "rows[*].{src,count}")

    day_args = {"window": w, "group_by": ["day"], "order_by": by_count, "limit": 1}
    busiest = _payload(ctx, "aggregate_events", day_args)["rows"][0]
    add("busiest_day", busiest["day"], "aggregate_events", day_args, "rows[0].day")
    add("busiest_day_events", busiest["count"], "aggregate_events", day_args, "rows[0].count")

    burst_args = {
        "target": "global",
        "window": w,
        "stride": HOUR,
        "method": "zscore",
        "params": {"w": BURST_W, "threshold": BURST_THRESHOLD},
    }
    bursts = _payload(ctx, "burst_detection", burst_args)
    add("burst_hours", bursts["rows_total"], "burst_detection", burst_args, "rows_total")
    return WeekFacts(week, as_of_tt, facts)


def numbers_in(value: Any) -> list[int | float]:
    """Every number inside a fact value (lists and objects walked; booleans are not numbers)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers_in(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers_in(v)]
    return []


def strings_in(value: Any) -> list[str]:
    """Every string inside a fact value (uids, day names)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []
