"""Units: what a value an operator returns *measures* (issue 24), declared once, here and on the operators.

The output contracts say which fields exist and their JSON types; units say what the numbers mean, so the
plan verifier can refuse a plan that sums time points to answer a count, or takes an interval from a
``max``. The vocabulary:

==============  =========================================================================================
unit            what it is
==============  =========================================================================================
``count``       a number of things (``rows_total``, ``count``, ``degree``, an aggregate's ``count``)
``time``        a time point, epoch µs UTC (``vt_s``, ``t``, ``earliest_arrival``, ``first_t``)
``duration``    a length of time in µs (``time − time``, ``min_gap``, ``delta``, ``stride``)
``ratio``       a ratio or rate (``count ÷ count``, ``mean_out_degree``, ``reciprocity``, a percent)
``score``       a statistical score (burst's z-score or ratio score)
``id``          an identifier (``uid``, ``src``, ``eid``, ``vid``, ``nodes[*]``): compared, never summed
``value``       a free value: a property (``prop.rating``), a label, a calendar key; combined freely
``boolean``     true or false
``interval``    a period ``[s, e)``
==============  =========================================================================================

Where units come from:

- **output fields**, by name (:data:`FIELD_UNITS`, one table for every operator's output models: the same
  name means the same thing everywhere), overridden on a field by ``Annotated[..., Measures(unit)]``;
  a field neither names is a free ``value``;
- **arguments**, by name (:data:`ARG_UNITS`): a ``$ref`` passed as ``t_valid`` must be a time point;
- **operators whose output units depend on their arguments** (``compute``, ``aggregate_events``,
  ``graph_metric_timeseries``) declare a rule, ``Traits(units=...)``: ``(args, UnitEnv) -> UnitResult``.

A :class:`UnitTree` mirrors a value's JSON shape: a scalar's unit, an object's fields, a list's element. An
empty tree (``UNKNOWN``) means "not known": nothing is ever refused on an unknown unit, so a plan is only
refused when its units are known to clash. The rules for combining units (``time − time = duration``, ...)
are :func:`arith` and :func:`reduce_unit`; compute's use of them is ``engine.operators.compute_units``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel


class Unit(StrEnum):
    COUNT = "count"
    TIME = "time"
    DURATION = "duration"
    RATIO = "ratio"
    SCORE = "score"
    ID = "id"
    VALUE = "value"
    BOOLEAN = "boolean"
    INTERVAL = "interval"


#: how a unit reads in messages ("s2.value is a time point")
SPOKEN = {
    Unit.COUNT: "a count",
    Unit.TIME: "a time point (µs)",
    Unit.DURATION: "a duration (µs)",
    Unit.RATIO: "a ratio or rate",
    Unit.SCORE: "a score",
    Unit.ID: "an identifier",
    Unit.VALUE: "a free value",
    Unit.BOOLEAN: "a boolean",
    Unit.INTERVAL: "an interval",
}
PLURAL = {
    Unit.COUNT: "counts",
    Unit.TIME: "time points",
    Unit.DURATION: "durations",
    Unit.RATIO: "ratios",
    Unit.SCORE: "scores",
    Unit.ID: "identifiers",
    Unit.VALUE: "free values",
    Unit.BOOLEAN: "booleans",
    Unit.INTERVAL: "intervals",
}
#: numbers a value answer may report (a time point included: some questions ask for a time)
NUMERIC = frozenset({Unit.COUNT, Unit.TIME, Unit.DURATION, Unit.RATIO, Unit.SCORE, Unit.VALUE})


@dataclass(frozen=True)
class Measures:
    """Marks an output field with its unit (``Annotated[int, Measures(Unit.COUNT)]``), where its name
    alone would say something else (burst's ``value`` is a bucket's event count)."""

    unit: Unit


# -- declared once: field and argument names ---------------------------------------------------------------

_TIME = ("vt_s", "vt_e", "tt_s", "tt_e", "t", "tt", "t_a", "t_b", "arrival", "earliest_arrival",
         "first_seen", "last_seen", "first_t", "last_t")  # fmt: skip
_COUNT = ("count", "rows_total", "hop", "n_buckets", "n_scored", "n_events", "n_events_in_window", "hops",
          "degree", "count_distinct", "sessions", "max_in_window")  # fmt: skip
_ID = ("uid", "vid", "eid", "src", "dst", "node", "other", "nodes")
#: output field names and what they measure, for every operator (a list field: its elements' unit);
#: ``<list>_total`` is a count and ``truncated`` / ``<list>_truncated`` / ``capped`` are booleans
FIELD_UNITS: dict[str, Unit] = {
    **dict.fromkeys(_TIME, Unit.TIME),
    **dict.fromkeys(_COUNT, Unit.COUNT),
    **dict.fromkeys(_ID, Unit.ID),
    "score": Unit.SCORE,
    "truncated": Unit.BOOLEAN,
    "capped": Unit.BOOLEAN,
}
#: argument names and what a value passed there must measure (a list argument: its elements)
ARG_UNITS: dict[str, Unit] = {
    **dict.fromkeys(("t_a", "t_b", "t_valid", "t1", "t2", "as_of_tt", "tt_from", "tt_to"), Unit.TIME),
    **dict.fromkeys(("delta", "delta_max_wait", "stride", "width", "gap", "within"), Unit.DURATION),
    **dict.fromkeys(("uid", "src", "dst", "seeds", "node_filter", "node"), Unit.ID),
    **dict.fromkeys(("k", "limit", "hops", "max_hops"), Unit.COUNT),
}
#: the event fields of list_events / aggregate_events (``where``, ``group_by``, aggregate fields);
#: calendar keys (year, month, day, week, hour, dow, month_of_year) and ``prop.<name>`` are free values
EVENT_FIELD_UNITS: dict[str, Unit] = {
    "src": Unit.ID,
    "dst": Unit.ID,
    "node": Unit.ID,
    "other": Unit.ID,
    "a": Unit.ID,  # unordered_pair's fields
    "b": Unit.ID,
    "eid": Unit.ID,
    "t": Unit.TIME,
    "vt_s": Unit.TIME,
    "vt_e": Unit.TIME,
}


def field_unit(name: str) -> Unit:
    if name.endswith("_total"):
        return Unit.COUNT
    if name.endswith("_truncated"):
        return Unit.BOOLEAN
    return FIELD_UNITS.get(name, Unit.VALUE)


def event_field_unit(name: str) -> Unit:
    return EVENT_FIELD_UNITS.get(name, Unit.VALUE)


def units_legend(compact: bool = False) -> list[str]:
    """The naming conventions and combination rules as manual lines, generated from :data:`FIELD_UNITS`
    and :data:`ARG_UNITS`; ``compact``: one short block for a small model's prompt."""

    def names(table: dict[str, Unit], unit: Unit, sep: str = ", ") -> str:
        return sep.join(n for n, u in table.items() if u is unit)

    rules = (
        "time − time = duration; time ± duration = time; count ÷ count = ratio; duration ÷ count = "
        "duration; mean of times = time; min, max, median keep the unit; a sum of times or ids is refused"
    )
    kinds = (
        "count from a count (or a list); interval from [s, e] or a row with vt_s, vt_e (or t_a, t_b); "
        "entity from an id; value from anything (a time point included); boolean from a boolean"
    )
    if compact:
        return [
            f"UNITS. times (µs): {names(FIELD_UNITS, Unit.TIME, ' ')}; counts: L_total "
            f"{names(FIELD_UNITS, Unit.COUNT, ' ')}; ids: {names(FIELD_UNITS, Unit.ID, ' ')}. Arguments "
            f"{names(ARG_UNITS, Unit.TIME, ' ')} take times; {names(ARG_UNITS, Unit.DURATION, ' ')} "
            f"durations. {rules}. answer_spec: {kinds}.",
        ]
    return [
        "Units (the verifier refuses a plan whose units clash): output fields named "
        f"{names(FIELD_UNITS, Unit.TIME)} are time points (µs); {names(FIELD_UNITS, Unit.COUNT)} and every "
        f"L_total are counts; {names(FIELD_UNITS, Unit.ID)} are identifiers; score is a score; anything "
        "else is a free value.",
        f"Arguments {names(ARG_UNITS, Unit.TIME)} take time points; {names(ARG_UNITS, Unit.DURATION)} take "
        f"durations (µs); {names(ARG_UNITS, Unit.ID)} take identifiers.",
        rules[0].upper() + rules[1:] + ".",
        f"Answer kinds: {kinds}.",
    ]


# -- unit trees ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitTree:
    """The units of a value, shaped like it: ``unit`` for a scalar, ``fields`` for an object whose fields
    are known, ``item`` for a list. All empty: unknown."""

    unit: Unit | None = None
    fields: tuple[tuple[str, UnitTree], ...] | None = None
    item: UnitTree | None = None

    @property
    def known(self) -> bool:
        return self.unit is not None or self.fields is not None or self.item is not None

    def member(self, name: str) -> UnitTree:
        """An object field's tree (UNKNOWN when the object's fields are not known)."""
        return dict(self.fields or ()).get(name, UNKNOWN)

    def with_field(self, name: str, tree: UnitTree) -> UnitTree:
        rest = tuple((k, v) for k, v in (self.fields or ()) if k != name)
        return UnitTree(fields=(*rest, (name, tree)))

    @property
    def is_interval(self) -> bool:
        """An interval, or an object holding one as (``vt_s``, ``vt_e``) or (``t_a``, ``t_b``)."""
        if self.unit is Unit.INTERVAL:
            return True
        f = dict(self.fields or ())
        return any(
            f.get(a, UNKNOWN).unit is Unit.TIME and f.get(b, UNKNOWN).unit is Unit.TIME
            for a, b in (("vt_s", "vt_e"), ("t_a", "t_b"))
        )

    @property
    def names_entity(self) -> bool:
        """An identifier, or an object with a ``uid``."""
        return self.unit is Unit.ID or self.member("uid").unit is Unit.ID

    def describe(self) -> str:
        if self.unit is not None:
            return SPOKEN[self.unit]
        if self.item is not None:
            return "a list of " + (self.item.describe() if self.item.known else "values")
        if self.fields is not None:
            return "an interval object" if self.is_interval else "an object"
        return "unknown"


UNKNOWN = UnitTree()


def scalar(unit: Unit | None) -> UnitTree:
    return UnitTree(unit=unit) if unit is not None else UNKNOWN


def list_of(item: UnitTree) -> UnitTree:
    return UnitTree(item=item)


def obj(**fields: UnitTree) -> UnitTree:
    return UnitTree(fields=tuple(fields.items()))


def paths(tree: UnitTree, prefix: str = "", depth: int = 3) -> Iterator[tuple[str, UnitTree]]:
    """Every position in ``tree`` as ref-path text (``rows[*].vt_s``), the tree itself first."""
    yield prefix, tree
    if depth == 0:
        return
    for name, sub in tree.fields or ():
        yield from paths(sub, f"{prefix}.{name}" if prefix else name, depth - 1)
    if tree.item is not None:
        yield from paths(tree.item, f"{prefix}[*]", depth - 1)


# -- trees of output models -------------------------------------------------------------------------------


def _annotation_tree(ann: Any, name: str) -> UnitTree:
    origin = typing.get_origin(ann)
    if origin is Annotated:
        base, *meta = typing.get_args(ann)
        marks = [m for m in meta if isinstance(m, Measures)]
        return scalar(marks[0].unit) if marks else _annotation_tree(base, name)
    if origin in (list, tuple):
        args = [a for a in typing.get_args(ann) if a is not Ellipsis]
        return list_of(_annotation_tree(args[0], name) if args else scalar(field_unit(name)))
    if origin is typing.Union or origin is types.UnionType:
        options = [a for a in typing.get_args(ann) if a is not type(None)]
        trees = {_annotation_tree(a, name) for a in options}
        return trees.pop() if len(trees) == 1 else UNKNOWN  # a union of shapes: not known
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return model_tree(ann)
    if ann is bool:
        return scalar(Unit.BOOLEAN)
    if origin is dict or ann is dict or ann is Any:
        return UNKNOWN  # an open object (props, aggregate rows): its fields are not declared
    return scalar(field_unit(name))


@cache
def model_tree(model: type[BaseModel]) -> UnitTree:
    """The units of an output model, field by field (markers first, then :data:`FIELD_UNITS`)."""
    out = []
    for name, info in model.model_fields.items():
        marks = [m for m in info.metadata if isinstance(m, Measures)]
        out.append((name, scalar(marks[0].unit) if marks else _annotation_tree(info.annotation, name)))
    return UnitTree(fields=tuple(out))


# -- combining units ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitClash(Exception):
    """Units that do not combine: what was found, what would fit, and what would give it."""

    message: str
    found: str = ""
    wanted: tuple[str, ...] = ()
    use: tuple[str, ...] = ()

    def legal(self) -> dict[str, Any]:
        return {"found": self.found, "wanted": list(self.wanted), "use": list(self.use)}


_NOT_ADDED = (Unit.ID, Unit.INTERVAL, Unit.BOOLEAN)
_SPOKEN_OP = {"add": "added to", "sub": "minus", "mul": "multiplied by", "div": "divided by"}


def arith(op: str, x: Unit | None, y: Unit | None) -> Unit | None:
    """The unit of ``x op y`` (op: add, sub, mul, div), or :class:`UnitClash`. ``None`` is an unknown
    unit or a literal number, which takes the other operand's unit (``t + 86400000000`` is a time);
    a free ``value`` makes the result free."""
    if x is None or y is None:
        known = x if y is None else y
        if op == "div" and x is None:
            return None  # literal / unit: not known
        if known is not None and known in _NOT_ADDED:
            _clash(op, x, y)
        return known
    if Unit.VALUE in (x, y):
        if x in _NOT_ADDED or y in _NOT_ADDED:
            _clash(op, x, y)
        return Unit.VALUE
    if x in _NOT_ADDED or y in _NOT_ADDED:
        _clash(op, x, y)
    T, D, C, R = Unit.TIME, Unit.DURATION, Unit.COUNT, Unit.RATIO
    table: dict[str, dict[tuple[Unit, Unit], Unit]] = {
        "add": {(T, D): T, (D, T): T, (D, D): D},
        "sub": {(T, T): D, (T, D): T, (D, D): D},
        "mul": {(D, C): D, (C, D): D, (D, R): D, (R, D): D},
        "div": {(D, C): D, (D, D): R, (C, C): R, (C, D): R, (D, R): D},
    }
    if (x, y) in table[op]:
        return table[op][(x, y)]
    if T in (x, y) or D in (x, y):
        _clash(op, x, y)
    # counts, ratios and scores among themselves
    if op in ("add", "sub", "mul") and x == y:
        return x
    return R if op == "div" else Unit.VALUE


def compared(op: str, x: Unit | None, y: Unit | None) -> Unit | None:
    """The common unit of ``x`` and ``y`` compared or taken the least or greatest of (``lt`` … ``ne``,
    ``min``, ``max``), or :class:`UnitClash` when both are known and differ (a time point against a
    duration). ``None`` (unknown, or a literal) and a free ``value`` go with anything."""
    if x is None or y is None or Unit.VALUE in (x, y) or x == y:
        return y if x is None or x == Unit.VALUE else x
    raise UnitClash(
        f"{SPOKEN[x]} compared with {SPOKEN[y]} has no meaning",
        found=f"{x.value} {op} {y.value}",
        use=("compare like with like: time with time, duration with duration, count with count",),
    )


def _clash(op: str, x: Unit | None, y: Unit | None) -> None:
    named: dict[tuple[str, Unit | None, Unit | None], str] = {
        ("add", Unit.TIME, Unit.TIME): "a time point added to a time point",
        ("sub", Unit.DURATION, Unit.TIME): "a duration minus a time point",
    }
    what = named.get((op, x, y))
    left = SPOKEN[x] if x else "a number"
    right = SPOKEN[y] if y else "a number"
    hint = {
        "add": ("time + duration = time", "duration + duration = duration", "count + count = count"),
        "sub": ("time − time = duration", "time − duration = time", "count − count = count"),
        "mul": ("duration × count = duration", "count × count = count", "ratio × ratio = ratio"),
        "div": ("duration ÷ count = duration", "count ÷ count = ratio", "duration ÷ duration = ratio"),
    }[op]
    raise UnitClash(
        f"{what or f'{left} {_SPOKEN_OP[op]} {right}'} has no unit",
        found=f"{x.value if x else 'number'} {op} {y.value if y else 'number'}",
        use=hint,
    )


#: what a reducer gives for each element unit (absent: refused). Booleans are absent: a sum or mean skips
#: what is not a number, so over true/false it gives 0 or null, never the count or share a planner means
#: (the fifth question set's "sum of a ge(total, 50)" answered 0); number(...) makes them 1 and 0
_SUMS = {Unit.COUNT: Unit.COUNT, Unit.DURATION: Unit.DURATION, Unit.RATIO: Unit.RATIO,
         Unit.SCORE: Unit.SCORE, Unit.VALUE: Unit.VALUE}  # fmt: skip
_MEANS = {Unit.TIME: Unit.TIME, Unit.DURATION: Unit.DURATION, Unit.COUNT: Unit.RATIO,
          Unit.RATIO: Unit.RATIO, Unit.SCORE: Unit.SCORE, Unit.VALUE: Unit.VALUE}  # fmt: skip


def reduce_unit(fn: str, elem: Unit | None) -> Unit | None:
    """The unit of a reducer over elements of unit ``elem``: count → count; sum of counts, durations,
    ratios → the same (a sum of time points or identifiers: refused); mean of time points → a time point,
    of counts → a ratio; min, max, median keep the unit."""
    if fn in ("count", "count_distinct"):
        return Unit.COUNT
    if elem is None:
        return None
    if fn in ("min", "max", "median"):
        return elem
    table = _SUMS if fn == "sum" else _MEANS
    if elem not in table:
        raise UnitClash(
            f"a {fn} of {PLURAL[elem]} has no unit",
            found=elem.value,
            wanted=tuple(u.value for u in table),
            use=_reduce_hint(fn, elem),
        )
    return table[elem]


def _reduce_hint(fn: str, elem: Unit) -> tuple[str, ...]:
    if elem is Unit.BOOLEAN:
        return ("derive {op: number, arg: <the comparison>}: 1 for true, 0 for false, then the " + fn,
                "filter the rows that hold, then count")  # fmt: skip
    if elem is Unit.TIME and fn == "sum":
        return ("count (how many)", "min / max / mean (a time point)", "diff of two time points (a duration)")
    return ("count (how many)", "min / max (keep the unit)")


# -- rules that depend on a call's arguments ----------------------------------------------------------------


@dataclass(frozen=True)
class UnitEnv:
    """What an operator's unit rule can read: the tree of the value at an argument position (a ``$ref``'s
    producer output; UNKNOWN for a literal), and whether a ref stands there."""

    at: Callable[[tuple[str | int, ...]], UnitTree]
    is_ref: Callable[[tuple[str | int, ...]], bool]


@dataclass(frozen=True)
class UnitResult:
    """An operator's output units for one call, and the clashes its arguments caused (with the argument
    position to blame)."""

    tree: UnitTree
    clashes: list[tuple[str, UnitClash]] = field(default_factory=list)


UnitRule = Callable[[Mapping[str, Any], UnitEnv], UnitResult]
