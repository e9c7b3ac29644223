"""Operator traits: what the plan verifier, the executor, the reporter and the claim verifier need to know
about an operator, declared where the operator is defined, so none of them branches on operator names.

Two kinds, both small immutable values:

- **argument markers**, ``Annotated`` metadata on an args-model field (found by :func:`marked`, through
  optional types, lists and nested argument models):

  ============================  =========================================================================
  ``UidArg(keywords)``          names a node uid (grounding); in :mod:`engine.operators.base`
  ``TimePoint()``               a snapshot time: must lie inside the dataset's valid-time extent
  ``EventWindow(when)``         a window that selects events by ``vt_s``: no event in it is vacuous
                                (``when``: only for calls whose arguments satisfy the condition)
  ``NonEmpty()``                a selecting list: ``[]`` selects nothing (vacuous)
  ``Operand()``                 an untyped operand: a literal string in it that is a store uid is grounded
  ============================  =========================================================================

- **operator traits**, one :class:`Traits` on the spec (``@operator(..., traits=Traits(...))``):

  ============================  =========================================================================
  ``period``                    two time arguments that form one period ``[start, end)`` (its overlap
                                with the extent is checked, not each end)
  ``reduces``                   calls whose result is wrong over part of a list: refused over truncated
                                input (``When("fn", LIST_FNS)`` for compute)
  ``vacuous``                   the operator's own vacuous rule: ``args -> Vacancy | None`` (burst's "too
                                few buckets to score", reading its defaults from its own args model)
  ``keeps_empty``               ``(args, loc) -> bool``: whether an empty producer read at argument
                                position ``loc`` leaves this call's result trivially empty or zero
                                (default: yes). compute: a whole list, an intersection operand, a
                                minuend do; a term of a sum, max or union does not
  ``pattern_counts``            output fields that count a pattern: the reporter claims such a count as a
                                ``temporal_pattern`` that the claim verifier re-executes
  ``allen``                     :class:`AllenCall`: calls that compute the Allen relation of two
                                operands, and the argument names of the operands
  ``units``, ``units_doc``      output units that depend on the arguments (compute, aggregate_events,
                                graph_metric_timeseries): ``(args, UnitEnv) -> UnitResult``, and the
                                manual's sentence about them (:mod:`engine.operators.units`)
  ``row_fields``                ``(args, inputs) -> tuple[str, ...] | None``: the exact fields of every
                                element of the output ``rows`` for calls that fix them (compute
                                ``group``: its key fields and aggregate names; ``derive``: its input's
                                fields and ``as``; aggregate_events: its keys and aggregates), given the
                                fields of the rows each operand argument reads (``inputs``), so the plan
                                verifier refuses a ref to a field they lack; None: not known (an
                                operator without the rule: its declared row model's fields)
  ``reads_fields``              ``args -> [(where, operand, name, path)]``: the fields of an operand's
                                rows a call names (compute's ``field``, ``by``, a derive's operands, a
                                join's keys): refused when that operand's rows are known to lack one
                                (``path``: a dotted name may reach into an object field, ``props.rating``)
  ``clashes``                   ``(args, inputs) -> [(where, message)]``: a name the call's rows would
                                hold twice given its operands' fields (a join's renamed b field that a's
                                rows already have): refused before the run stops at it
  ``full_input``                the operator reads its producers' *whole* lists: a ref to a list a
                                producer's page cut resolves against the producer's full result
                                (compute; docs/plans.md §3), bounded by ``ExecConfig.max_full_items``
  ============================  =========================================================================

What an output list holds (uid strings, objects with a ``uid``, anything else) is read from the output
model's schema (:func:`engine.plan.contracts.element_shape`), which the spec already declares.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel

from tgms.engine.operators.units import UnitRule


@dataclass(frozen=True)
class When:
    """A condition on a call's literal arguments: ``args[arg]`` is one of ``values``; no ``arg``: always."""

    arg: str | None = None
    values: tuple[Any, ...] = ()

    def holds(self, args: Mapping[str, Any]) -> bool:
        if self.arg is None:
            return True
        value = args.get(self.arg)
        return isinstance(value, (str, int, float, bool)) and value in self.values


ALWAYS = When()

# -- argument markers --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimePoint:
    """A snapshot time (``t_valid``; diff_snapshots' ``t1``, ``t2``)."""


@dataclass(frozen=True)
class EventWindow:
    """A window that selects the events (edge versions) whose ``vt_s`` falls in it."""

    when: When = ALWAYS


@dataclass(frozen=True)
class TimePredicates:
    """A list of event predicates (``where``, AND-ed): the period its predicates on the event time
    (``t``, ``vt_s``) and the calendar keys ``year``, ``month``, ``day`` select is checked like a window
    (a period outside the data is refused however it is written)."""


@dataclass(frozen=True)
class NonEmpty:
    """A list argument that selects: an empty list selects nothing."""


@dataclass(frozen=True)
class Operand:
    """An untyped operand (compute's ``input``, ``value``, ``a``, ``b``): a literal string in it that is a
    store uid names an entity, so the grounding rule checks it."""


# -- operator traits ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Period:
    """Two time arguments forming one period ``[start, end)``."""

    start: str
    end: str


@dataclass(frozen=True)
class AllenCall:
    """Calls (``when``) that compute the Allen relation of operand ``a`` to ``b``, given as the arguments
    named ``a`` and ``b`` or as the pair ``[a, b]`` in the argument named ``pair``."""

    when: When
    a: str = "a"
    b: str = "b"
    pair: str | None = None

    def operands(self, args: Mapping[str, Any]) -> list[Any]:
        """Every operand value the call was given (either form)."""
        pair = args.get(self.pair) if self.pair else None
        return [args.get(self.a), args.get(self.b), *(pair if isinstance(pair, list) else [])]


@dataclass(frozen=True)
class Vacancy:
    """Why a call's answer is empty whatever the data: the argument to blame and what would help."""

    field: str
    message: str
    legal: Any = None


Loc = tuple[str | int, ...]
VacuousRule = Callable[[Mapping[str, Any]], Vacancy | None]
#: operand argument -> the fields of the rows it reads (None: not known)
InputFields = Mapping[str, tuple[str, ...] | None]
RowFieldsRule = Callable[[Mapping[str, Any], InputFields], tuple[str, ...] | None]
ReadsRule = Callable[[Mapping[str, Any]], list[tuple[str, str, str, bool]]]
#: (argument path, message) for each name a call's rows would hold twice, given its operands' fields
ClashRule = Callable[[Mapping[str, Any], InputFields], list[tuple[str, str]]]
EmptyRule = Callable[[Mapping[str, Any], Loc], bool]


@dataclass(frozen=True)
class Traits:
    period: Period | None = None
    reduces: When | None = None
    vacuous: VacuousRule | None = None
    keeps_empty: EmptyRule | None = None
    pattern_counts: tuple[str, ...] = ()
    allen: AllenCall | None = None
    #: output units that depend on the call's arguments (engine.operators.units); None: the output
    #: model's declared units
    units: UnitRule | None = None
    #: how the manual states those units (one sentence)
    units_doc: str = ""
    #: the exact fields of each ``rows`` element, for calls that fix them (None: not known)
    row_fields: RowFieldsRule | None = None
    #: the fields of its operands' rows a call names
    reads_fields: ReadsRule | None = None
    #: names a call's rows would hold twice (a join's renamed field that a's rows already have)
    clashes: ClashRule | None = None
    #: reads a producer's whole list past its cut page (the executor keeps the full result for it)
    full_input: bool = False

    def reduces_list(self, args: Mapping[str, Any]) -> bool:
        return self.reduces is not None and self.reduces.holds(args)

    def reducing_call(self, op: str, args: Mapping[str, Any]) -> str:
        """How a message names a list-reducing call: the operator and the argument value that makes it
        reduce (``compute sum``), or the operator alone when it always reduces."""
        how = self.reduces
        return f"{op} {args.get(how.arg)}" if how is not None and how.arg else op

    def computes_allen(self, args: Mapping[str, Any]) -> bool:
        return self.allen is not None and self.allen.when.holds(args)

    def empties(self, args: Mapping[str, Any], loc: Loc) -> bool:
        return True if self.keeps_empty is None else self.keeps_empty(args, loc)

    def rows_fields(
        self, args: Mapping[str, Any], inputs: InputFields | None = None
    ) -> tuple[str, ...] | None:
        return None if self.row_fields is None else self.row_fields(args, inputs or {})

    def fields_read(self, args: Mapping[str, Any]) -> list[tuple[str, str, str, bool]]:
        return [] if self.reads_fields is None else self.reads_fields(args)

    def field_clashes(self, args: Mapping[str, Any], inputs: InputFields) -> list[tuple[str, str]]:
        return [] if self.clashes is None else self.clashes(args, inputs)


NO_TRAITS = Traits()

# -- finding markers ---------------------------------------------------------------------------------------

M = TypeVar("M")
Path = tuple[str, ...]  # field names; "*" = each element of a list


def _walk(ann: Any, kind: type[M], path: Path, out: list[tuple[Path, M]]) -> None:
    origin = typing.get_origin(ann)
    if origin is Annotated:
        base, *meta = typing.get_args(ann)
        marks = [m for m in meta if isinstance(m, kind)]
        if marks:
            out.append((path, marks[0]))
            return
        _walk(base, kind, path, out)
    elif origin in (list, tuple):
        for a in typing.get_args(ann):
            _walk(a, kind, (*path, "*"), out)
    elif origin is typing.Union or origin is types.UnionType:
        for a in typing.get_args(ann):
            _walk(a, kind, path, out)
    elif isinstance(ann, type) and issubclass(ann, BaseModel):
        out.extend(_model_marks(ann, kind, path))


def _model_marks(model: type[BaseModel], kind: type[M], path: Path) -> list[tuple[Path, M]]:
    out: list[tuple[Path, M]] = []
    for name, info in model.model_fields.items():
        marks = [m for m in info.metadata if isinstance(m, kind)]
        if marks:
            out.append(((*path, name), marks[0]))
        else:
            _walk(info.annotation, kind, (*path, name), out)
    return list(dict.fromkeys(out))


@cache
def marked(model: type[BaseModel], kind: type[M]) -> tuple[tuple[Path, M], ...]:
    """``(path, marker)`` for every argument position of ``model`` carrying a ``kind`` marker."""
    return tuple(_model_marks(model, kind, ()))


def literals_at(args: Any, path: Path, where: str = "") -> list[tuple[str, Any]]:
    """``(location, value)`` of the literal values at ``path`` in a raw argument tree (refs, which are
    ``{"$ref": ...}`` objects, are not walked into)."""
    if not path:
        return [(where, args)]
    head, rest = path[0], path[1:]
    if head == "*":
        if not isinstance(args, list):
            return []
        return [x for i, v in enumerate(args) for x in literals_at(v, rest, f"{where}[{i}]")]
    if isinstance(args, dict) and head in args and "$ref" not in args:
        return literals_at(args[head], rest, f"{where}.{head}" if where else head)
    return []
