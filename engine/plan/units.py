"""The units check of a plan (issue 24): every value a plan moves or computes carries a unit, and a plan
whose units do not fit is refused before anything runs (verifier group ``units``).

:func:`plan_units` walks the steps in topological order and gives each step's output
:class:`~engine.operators.units.UnitTree`: the operator's declared output units, or, for an operator with a
unit rule (``Traits.units``: compute, aggregate_events, graph_metric_timeseries), the units its arguments
and the refs it reads give. Violations, each with ``legal = {found, wanted, use}`` so a repair can act:

- ``unit``: a step combines units that do not combine (a sum of time points, time + time, a filter
  comparing a time with a count), or a ``$ref`` passed to an argument measures something else than the
  argument takes (``t_valid`` from a count; ``where`` on ``t`` against a count);
- ``answer_unit``: ``answer_spec.kind`` does not fit the unit of ``from``: a count from a count (or a
  list, whose length it is), an interval from an interval (or an object with ``vt_s``/``vt_e`` or
  ``t_a``/``t_b``, or a list of time points), an entity from an identifier, a boolean from a boolean; a
  value from anything (a time point included: some questions ask for a time).

An unknown unit (a literal, an open object such as ``props``) is never refused. :func:`ref_units` is what
the claim verifier and the mechanical reporter use to read the same units off a trace's plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tgms.engine.operators.registry import REGISTRY, OperatorSpec, load_all
from tgms.engine.operators.units import (
    ARG_UNITS,
    SPOKEN,
    UNKNOWN,
    Unit,
    UnitEnv,
    UnitTree,
    event_field_unit,
    list_of,
    model_tree,
    paths,
)
from tgms.engine.plan.model import AnswerSpec, Parsed, Step, Violation, parse_plan, topo_order
from tgms.engine.plan.refs import Field, Index, Ref, Star

Loc = tuple[str | int, ...]


def ref_units(trees: Mapping[str, UnitTree], ref: Ref) -> UnitTree:
    """The units of what ``ref`` yields (a projection through ``[*]`` is a list of its elements)."""
    tree = trees.get(ref.step, UNKNOWN).member(ref.field)
    projected = False
    for seg in ref.path:
        if isinstance(seg, Field):
            tree = tree.member(seg.name)
        elif isinstance(seg, (Index, Star)):
            tree = tree.item if tree.item is not None else UNKNOWN
            projected = projected or isinstance(seg, Star)
    return list_of(tree) if projected else tree


def _overlay(base: UnitTree, top: UnitTree) -> UnitTree:
    """``base`` with ``top``'s fields put over it (a rule's units over the model's)."""
    if top.fields is None:
        return top if top.known else base
    fields = dict(base.fields or ())
    fields.update(dict(top.fields))
    return UnitTree(fields=tuple(fields.items()))


def _scalar_unit(tree: UnitTree) -> Unit | None:
    """A scalar's unit, or a list's elements' unit (an argument taking one uid or a list of them)."""
    if tree.unit is not None:
        return tree.unit
    return tree.item.unit if tree.item is not None else None


class _UnitPass:
    def __init__(self, steps: list[Step], specs: Mapping[str, OperatorSpec]) -> None:
        self.steps = steps
        self.specs = specs
        self.trees: dict[str, UnitTree] = {}
        self.out: list[Violation] = []

    def add(self, code: str, message: str, step: str | None, fld: str, legal: dict[str, Any]) -> None:
        self.out.append(Violation(code, message, step, fld, legal))

    def run(self) -> None:
        for s in topo_order(self.steps):
            spec = self.specs.get(s.id)
            if spec is None:
                continue
            at = {r.loc: ref_units(self.trees, r.ref) for r in s.refs}
            self.trees[s.id] = self.step_tree(s, spec, at)
            if spec.traits.units is None:  # a unit rule checks its own operands
                self.arguments(s, spec, at)

    def step_tree(self, s: Step, spec: OperatorSpec, at: Mapping[Loc, UnitTree]) -> UnitTree:
        static = model_tree(spec.output)
        rule = spec.traits.units
        if rule is None:
            return static
        env = UnitEnv(at=lambda loc: at.get(loc, UNKNOWN), is_ref=lambda loc: loc in at)
        result = rule(s.args, env)
        for where, clash in result.clashes:
            call = " ".join(x for x in (spec.name, str(s.args.get("fn") or "")) if x)
            self.add(
                "unit",
                f"step {s.id}: {call}: {where}: {clash.message}",
                s.id,
                f"args.{where}",
                clash.legal(),
            )
        return _overlay(static, result.tree)

    def arguments(self, s: Step, spec: OperatorSpec, at: Mapping[Loc, UnitTree]) -> None:
        """A ref passed to an argument must measure what the argument takes."""
        for r in s.refs:
            want = _wanted(s.args, r.loc)
            found = _scalar_unit(at[r.loc])
            if want is None or found is None or found is Unit.VALUE or found == want:
                continue
            where = ".".join(map(str, r.loc))
            self.add(
                "unit",
                f"step {s.id}: {spec.name}: {where} takes {SPOKEN[want]}, but {r.ref} is {SPOKEN[found]}",
                s.id,
                f"args.{where}",
                {
                    "found": found.value,
                    "wanted": [want.value],
                    "use": self.producing(r.ref.step, lambda t, w=want: _scalar_unit(t) is w),
                },
            )

    def producing(self, step: str, ok: Any, limit: int = 8) -> list[str]:
        """Refs into ``step``'s output that satisfy ``ok`` (the alternatives a repair can take)."""
        tree = self.trees.get(step, UNKNOWN)
        found = [f"{step}.{p}" for p, t in paths(tree) if p and ok(t) and not p.endswith("truncated")]
        return found[:limit]

    def answer(self, spec: AnswerSpec) -> None:
        tree = ref_units(self.trees, spec.source)
        problem = answer_unit_problem(spec.kind, tree)
        if problem is None:
            return
        wanted, test = _KIND_WANTS[spec.kind]
        use = self.producing(spec.source.step, test)
        if spec.kind == "count":
            use.append("compute count over a list")
        self.add(
            "answer_unit",
            f"answer_spec.kind {spec.kind!r} needs {wanted}, but {spec.source} is {problem}",
            spec.source.step,
            "answer_spec.kind",
            {"found": _found(tree), "wanted": [wanted], "use": use},
        )


def _found(tree: UnitTree) -> str:
    if tree.unit is not None:
        return tree.unit.value
    return "list of " + _found(tree.item) if tree.item is not None else "object"


def _wanted(args: Mapping[str, Any], loc: Loc) -> Unit | None:
    """The unit the argument position ``loc`` takes: by its name (:data:`ARG_UNITS`), or, for a ``where``
    predicate's ``value``, the unit of the predicate's event field."""
    names = [p for p in loc if isinstance(p, str)]
    if not names:
        return None
    if len(loc) >= 3 and loc[-1] == "value" and loc[-3] == "where" and isinstance(loc[-2], int):
        preds = _at(args, loc[:-2])
        pred = preds[loc[-2]] if isinstance(preds, list) and loc[-2] < len(preds) else None
        fld = pred.get("field") if isinstance(pred, dict) else None
        return event_field_unit(fld) if isinstance(fld, str) else None
    return ARG_UNITS.get(names[-1])


def _at(args: Any, loc: Loc) -> Any:
    for part in loc:
        if isinstance(part, int) and isinstance(args, list) and part < len(args):
            args = args[part]
        elif isinstance(part, str) and isinstance(args, dict):
            args = args.get(part)
        else:
            return None
    return args


# -- answer kinds ---------------------------------------------------------------------------------------


def _is_count(t: UnitTree) -> bool:
    return t.unit is Unit.COUNT


def _is_interval(t: UnitTree) -> bool:
    return t.is_interval or (t.item is not None and t.item.unit is Unit.TIME)


def _is_entity(t: UnitTree) -> bool:
    return t.names_entity


def _is_entities(t: UnitTree) -> bool:
    return t.item is not None and t.item.names_entity


def _is_boolean(t: UnitTree) -> bool:
    return t.unit is Unit.BOOLEAN


_KIND_WANTS = {
    "count": ("a count (or a list, counted)", _is_count),
    "interval": ("an interval (or a row with vt_s and vt_e, or t_a and t_b)", _is_interval),
    "entity": ("an identifier (or an object with a uid)", _is_entity),
    "entity_set": ("a list of identifiers (or of objects with a uid)", _is_entities),
    "boolean": ("a boolean", _is_boolean),
}


def answer_unit_problem(kind: str, tree: UnitTree) -> str | None:
    """What ``tree`` is, when an answer of ``kind`` cannot be read from it (None: it fits, or the unit is
    not known). A free ``value`` fits any kind."""
    fits = {
        "count": (Unit.COUNT,),
        "interval": (Unit.INTERVAL,),
        "entity": (Unit.ID,),
        "boolean": (Unit.BOOLEAN,),
    }
    unit = tree.unit
    if kind == "entity_set":
        unit = tree.item.unit if tree.item is not None else None
        ok: tuple[Unit, ...] = (Unit.ID,)
    elif kind == "interval" and tree.item is not None:
        unit, ok = tree.item.unit, (Unit.TIME,)  # a pair of time points
    else:
        ok = fits.get(kind, ())
        if not ok:
            return None
    if unit is None or unit is Unit.VALUE or unit in ok:
        return None
    return tree.describe()


# -- entry points ---------------------------------------------------------------------------------------


def check_units(
    parsed: Parsed, specs: Mapping[str, OperatorSpec]
) -> tuple[dict[str, UnitTree], list[Violation]]:
    """Each step's output units, and every unit violation of the plan."""
    p = _UnitPass(parsed.steps, specs)
    p.run()
    if parsed.answer_spec is not None and parsed.answer_spec.source.step in p.trees:
        p.answer(parsed.answer_spec)
    return p.trees, p.out


def plan_units(raw_plan: Mapping[str, Any]) -> dict[str, UnitTree]:
    """Each step's output units for a plan as JSON (a trace's plan): what the claim verifier and the
    mechanical reporter read units from."""
    load_all()
    parsed = parse_plan(dict(raw_plan))
    specs = {s.id: REGISTRY[s.op] for s in parsed.steps if s.op in REGISTRY}
    return check_units(parsed, specs)[0]
