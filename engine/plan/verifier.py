"""The static plan verifier: every violation of a plan at once, before anything runs (DESIGN §3.5).

``verify(raw_plan, ctx, config)`` returns a :class:`Report` whose ``violations`` are structured records
``{code, step, field, message, legal}`` — ``legal`` carries what would be accepted instead (the
operator's declared outputs, the argument names, the dataset extent, a computed narrowing). Rules, by the
check group that switches them off for ablations (:data:`CHECKS`):

========================  ==================================================================================
group                     codes
========================  ==================================================================================
``structure``             schema, too_many_steps, duplicate_id, unknown_dependency, cycle, ref_syntax,
                          ref_scope, answer_spec, unknown_op            (:mod:`engine.plan.model`)
``output_contracts``      output_field (a ref names a field the producer does not declare), ref_type
                          (a list where a scalar is expected, or the reverse), answer_field, answer_kind
``args``                  arg_name, arg_missing, arg_type, arg_value    (literal arguments; refs skipped)
``temporal``              temporal_extent (a time or window outside the dataset's valid-time extent)
``vacuous``               vacuous_arg (a window with no events for an event operator, an empty selecting
                          list, an operator's own rule such as burst's series too short to score),
                          reported only where the emptiness reaches the answer (:mod:`engine.plan.vacuity`)
``grounding``             grounding (a literal uid that is not in the task input)
``cost``                  cost (a step's estimate exceeds the call budget), plan_cost (the plan's)
``units``                 unit (a step combines units that do not combine, or a ref measures something
                          else than its argument takes), answer_unit (``answer_spec.kind`` does not fit
                          what ``from`` measures)                     (:mod:`engine.plan.units`)
========================  ==================================================================================

Steps whose arguments contain refs are priced at run time by the executor (their values are unknown here).

Nothing here names an operator: what the rules need to know comes from the operator's declared traits and
argument markers (:mod:`engine.operators.traits`) and its output schema (:mod:`engine.plan.contracts`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tgms.engine.errors import TGMSError
from tgms.engine.operators.base import parse_args
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import DEFAULT_BUDGET_S, profile
from tgms.engine.operators.registry import REGISTRY, OperatorSpec, load_all
from tgms.engine.operators.traits import Operand, literals_at, marked
from tgms.engine.plan.contracts import (
    ANY,
    Shape,
    arg_fields,
    arg_types,
    compatible,
    element_shape,
    literal_uids,
    ref_target,
    row_field_target,
    value_shape,
)
from tgms.engine.plan.extent import data_findings
from tgms.engine.plan.fields import field_violations, step_fields
from tgms.engine.plan.model import Parsed, Step, Violation, parse_plan
from tgms.engine.plan.refs import Index, Ref, is_ref
from tgms.engine.plan.units import check_units
from tgms.engine.plan.vacuity import reaching_answer

CHECKS = ("structure", "output_contracts", "args", "temporal", "vacuous", "grounding", "cost", "units")
DEFAULT_PLAN_BUDGET_S = 60.0
ENTITY_KINDS = {"entity": value_shape, "entity_set": element_shape}
KIND_TYPES: dict[str, frozenset[str]] = {
    "count": frozenset({"integer"}),
    "boolean": frozenset({"boolean"}),
    "entity": frozenset({"string", "object"}),
    "entity_set": frozenset({"array"}),
    "interval": frozenset({"object", "array"}),
    "relation": frozenset({"string"}),
    "rows": frozenset({"array"}),
}
_TOKEN = re.compile(r"[A-Za-z0-9_:.\-]+")


@dataclass(frozen=True)
class VerifierConfig:
    checks: frozenset[str] = frozenset(CHECKS)
    #: uids given in the task input; None: the known uids mentioned in the plan's question text
    task_uids: frozenset[str] | None = None
    budget_s: float = DEFAULT_BUDGET_S
    plan_budget_s: float = DEFAULT_PLAN_BUDGET_S

    @classmethod
    def without(cls, *groups: str, **kw: Any) -> VerifierConfig:
        unknown = set(groups) - set(CHECKS)
        if unknown:
            raise ValueError(f"unknown verifier checks {sorted(unknown)}; known: {list(CHECKS)}")
        return cls(checks=frozenset(CHECKS) - set(groups), **kw)


@dataclass
class Report:
    violations: list[Violation]
    checks: dict[str, bool]
    estimates_s: dict[str, float] = field(default_factory=dict)
    task_uids: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "violations": [v.to_dict() for v in self.violations],
            "checks": self.checks,
            "estimates_s": {k: round(v, 6) for k, v in self.estimates_s.items()},
            "task_uids": self.task_uids,
        }


# -- the verifier ---------------------------------------------------------------------------------------


class _Check:
    """One verification pass over a parsed plan (collects violations)."""

    def __init__(self, parsed: Parsed, ctx: OpContext | None, config: VerifierConfig) -> None:
        self.p = parsed
        self.ctx = ctx
        self.cfg = config
        self.out: list[Violation] = list(parsed.violations) if "structure" in config.checks else []
        self.estimates: dict[str, float] = {}
        self.specs: dict[str, OperatorSpec] = {}

    def on(self, group: str) -> bool:
        return group in self.cfg.checks

    def add(
        self, code: str, message: str, step: str | None = None, fld: str | None = None, legal: Any = None
    ) -> None:
        self.out.append(Violation(code, message, step, fld, legal))

    # -- operators and refs
    def operators(self) -> None:
        load_all()
        for s in self.p.steps:
            spec = REGISTRY.get(s.op)
            if spec is None:
                if self.on("structure"):
                    self.add(
                        "unknown_op", f"step {s.id}: unknown operator {s.op!r}", s.id, "op", sorted(REGISTRY)
                    )
            else:
                self.specs[s.id] = spec

    def refs(self) -> None:
        by_id = {s.id: s for s in self.p.steps}
        fields = step_fields(self.p, self.specs)
        self.out += field_violations(self.p, self.specs, fields)
        for s in self.p.steps:
            consumer = self.specs.get(s.id)
            for r in s.refs:
                producer = by_id.get(r.ref.step)
                pspec = self.specs.get(r.ref.step) if producer else None
                if pspec is None:
                    continue
                tgt = ref_target(pspec, r.ref)
                if tgt.ok:  # a group's rows hold its keys and aggregates only; a derive's, its input's and as
                    tgt = row_field_target(fields.get(r.ref.step), r.ref) or tgt
                if not tgt.ok:
                    self.add(
                        "output_field",
                        f"step {s.id}: {r.where} = {r.ref}: {tgt.message}; {tgt.at} is not a declared output",
                        s.id,
                        r.where,
                        list(tgt.legal),
                    )
                    continue
                reads_page = consumer is not None and not consumer.traits.full_input
                past = _past_page(producer, pspec, r.ref) if reads_page and producer is not None else None
                if past is not None:
                    self.add("output_field", f"step {s.id}: {r.where} = {r.ref}: {past}", s.id, r.where)
                    continue
                if consumer is not None:
                    want = arg_types(consumer, r.loc)
                    if not compatible(want, tgt.types):
                        self.add(
                            "ref_type",
                            f"step {s.id}: {r.where} expects {sorted(want)} but {r.ref} yields "
                            f"{sorted(tgt.types)}",
                            s.id,
                            r.where,
                            sorted(want),
                        )
        spec = self.p.answer_spec
        if spec is not None and spec.source.step in self.specs:
            tgt = ref_target(self.specs[spec.source.step], spec.source)
            if tgt.ok:
                tgt = row_field_target(fields.get(spec.source.step), spec.source) or tgt
            past = _past_page(by_id[spec.source.step], self.specs[spec.source.step], spec.source)
            if not tgt.ok:
                self.add(
                    "answer_field",
                    f"answer_spec.from = {spec.source}: {tgt.message}",
                    spec.source.step,
                    "answer_spec.from",
                    list(tgt.legal),
                )
            elif past is not None:  # the answer reads the producer's page, whatever compute reads
                self.add("answer_field", f"answer_spec.from = {spec.source}: {past}", spec.source.step,
                         "answer_spec.from")  # fmt: skip
            elif (
                spec.kind in KIND_TYPES
                and tgt.types != ANY
                and not compatible(KIND_TYPES[spec.kind], tgt.types)
            ):
                self.add(
                    "answer_kind",
                    f"answer_spec.kind {spec.kind!r} needs {sorted(KIND_TYPES[spec.kind])} but "
                    f"{spec.source} yields {sorted(tgt.types)}",
                    spec.source.step,
                    "answer_spec.kind",
                    sorted(KIND_TYPES[spec.kind]),
                )
            elif spec.kind in ENTITY_KINDS:
                self.entity_shape(spec.kind, spec.source, self.specs[spec.source.step], tgt)

    def entity_shape(self, kind: str, source: Ref, pspec: OperatorSpec, tgt: Any) -> None:
        """An entity answer must name uids: the value (``entity``) or the elements (``entity_set``) the
        producer's output schema declares must be uid strings or objects with a ``uid``."""
        shape_of = ENTITY_KINDS[kind]
        shape = shape_of(tgt)
        if shape is not Shape.OTHER:
            return
        what = "the value" if kind == "entity" else "the elements"
        holding = [
            f for f in pspec.declared_outputs if shape_of(ref_target(pspec, Ref(source.step, f))) is Shape.UID
        ]
        self.add(
            "answer_kind",
            f"answer_spec.kind {kind!r} needs uids (uid strings or objects with a uid) but {what} of "
            f"{source} are {shape.value}",
            source.step,
            "answer_spec.kind",
            [f"{source.step}.{f}" for f in holding],
        )

    # -- literal arguments
    def literal_args(self, s: Step, spec: OperatorSpec) -> Any | None:
        """The step's args validated with refs left out; violations for the literal ones (when the ``args``
        check is on). Returns the parsed args when the step has no refs and is valid (so it can be
        priced), else None."""
        args, removed = _strip_refs(s.args, [r.loc for r in s.refs])
        try:
            parsed = parse_args(spec.args, args, spec.name)
        except TGMSError as exc:
            for prob in exc.details.get("problems") or [
                {"field": exc.details.get("field") or "", "problem": exc.message, "kind": exc.code}
            ]:
                loc = str(prob.get("field") or "")
                code, legal = _arg_code(spec, prob)
                if any(
                    loc == r
                    or loc.startswith(r + ".")
                    or (r.startswith(loc + ".") and prob.get("kind") == "missing")
                    for r in removed
                ):
                    continue
                if not self.on("args"):
                    continue
                self.add(
                    code,
                    f"step {s.id}: {spec.name}: {loc or 'args'}: {prob.get('problem')}",
                    s.id,
                    f"args.{loc}" if loc else "args",
                    legal,
                )
            return None
        return parsed if not s.refs else None

    # -- the main pass
    def run(self) -> Report:
        self.operators()
        if self.on("output_contracts"):
            self.refs()
        if self.on("units"):
            # an answer whose shape is already wrong (answer_kind, answer_field) needs no unit finding too
            shaped = any(v.code in ("answer_kind", "answer_field") for v in self.out)
            found = check_units(self.p, self.specs)[1]
            self.out += [v for v in found if not (shaped and v.code == "answer_unit")]
        task = self.task_uids()
        data = self.data_findings()
        for s in self.p.steps:
            spec = self.specs.get(s.id)
            if spec is None:
                continue
            parsed = self.literal_args(s, spec) if self.on("args") or self.on("cost") else None
            as_of = _as_of(s)
            self.out += data.get(s.id, [])
            if self.on("grounding") and task is not None:
                self.grounding(s, spec, task)
            if self.on("cost") and parsed is not None and self.ctx is not None:
                self.cost(s, spec, parsed, as_of)
        if self.on("cost") and sum(self.estimates.values()) > self.cfg.plan_budget_s:
            self.add(
                "plan_cost",
                f"the plan's estimated {sum(self.estimates.values()):.2f} s exceeds its budget of "
                f"{self.cfg.plan_budget_s:.2f} s",
                fld="steps",
                legal={"estimates_s": {k: round(v, 3) for k, v in self.estimates.items()}},
            )
        return Report(self.out, {c: self.on(c) for c in CHECKS}, self.estimates, sorted(task or ()))

    def data_findings(self) -> dict[str, list[Violation]]:
        """Each step's temporal and vacuous findings; a vacuous one only where it reaches the answer."""
        if self.ctx is None or not (self.on("temporal") or self.on("vacuous")):
            return {}
        on = {"temporal": self.on("temporal"), "vacuous": self.on("vacuous")}
        found = {
            s.id: data_findings(self.ctx, s, spec, _as_of(s), **on)
            for s in self.p.steps
            if (spec := self.specs.get(s.id))
        }
        vacant = {sid for sid, vs in found.items() if any(v.code == "vacuous_arg" for v in vs)}
        live = reaching_answer(self.p.steps, self.specs, vacant, self.p.answer_spec) if vacant else set()
        return {sid: [v for v in vs if v.code != "vacuous_arg" or sid in live] for sid, vs in found.items()}

    def task_uids(self) -> frozenset[str] | None:
        if self.cfg.task_uids is not None:
            return self.cfg.task_uids
        if self.ctx is None:
            return None
        known = self.ctx.nid_index()
        return frozenset(t.strip(".:-") for t in _TOKEN.findall(self.p.question) if t.strip(".:-") in known)

    def grounding(self, s: Step, spec: OperatorSpec, task: frozenset[str]) -> None:
        found = literal_uids(spec.args, s.args)
        operands = marked(spec.args, Operand)
        if operands and self.ctx is not None:
            # untyped operands: a literal string there that is a store uid is an identifier too
            known = self.ctx.nid_index()
            for path, _ in operands:
                for where, value in literals_at(s.args, path):
                    found += [(w, v) for w, v in _literal_strings(value, where) if v in known]
        for where, uid in found:
            if uid not in task:
                self.add(
                    "grounding",
                    f"step {s.id}: literal uid {uid!r} at args.{where} is not in the task input; "
                    "take it from the task, or resolve it with resolve_entities and pass it through a $ref",
                    s.id,
                    f"args.{where}",
                    sorted(task),
                )

    def cost(self, s: Step, spec: OperatorSpec, args: Any, as_of: int | None) -> None:
        assert self.ctx is not None
        try:
            est = spec.cost(profile(self.ctx, as_of), args)
        except TGMSError:
            return
        self.estimates[s.id] = est.seconds
        if est.seconds > self.cfg.budget_s:
            self.add(
                "cost",
                f"step {s.id}: estimated {est.seconds:.2f} s exceeds the budget of {self.cfg.budget_s:.2f} s",
                s.id,
                "args",
                {
                    "estimate": est.to_dict(),
                    "budget_s": self.cfg.budget_s,
                    "suggestions": est.suggestions or ["narrow the window or the seeds"],
                },
            )


def verify(raw: Any, ctx: OpContext | None = None, config: VerifierConfig | None = None) -> Report:
    """Every violation of ``raw`` (a plan as JSON). Without a store context, the checks that need the data
    (temporal, vacuous, cost, and grounding against the question) are skipped."""
    return _Check(parse_plan(raw), ctx, config or VerifierConfig()).run()


# -- helpers ---------------------------------------------------------------------------------------------


def _strip_refs(
    args: dict[str, Any], locs: Iterable[tuple[str | int, ...]]
) -> tuple[dict[str, Any], list[str]]:
    """``args`` without the positions holding refs (a list holding one is dropped whole), and those
    positions in pydantic's dotted form."""
    import copy

    out = copy.deepcopy(args)
    removed: list[str] = []
    for loc in locs:
        cut = list(loc)
        while cut and isinstance(cut[-1], int):
            cut.pop()
        while len(cut) > 1 and any(isinstance(p, int) for p in cut):
            cut.pop()
        parent: Any = out
        for part in cut[:-1]:  # names only: the loops above cut every index off
            parent = parent[part] if isinstance(parent, dict) else None
        if isinstance(parent, dict) and cut and cut[-1] in parent:
            del parent[cut[-1]]
        if cut:
            removed.append(".".join(str(p) for p in cut))
    return out, removed


def _arg_code(spec: OperatorSpec, prob: dict[str, Any]) -> tuple[str, Any]:
    kind = str(prob.get("kind", ""))
    loc = str(prob.get("field") or "")
    if kind == "extra_forbidden":
        parent = loc.rsplit(".", 1)[0] if "." in loc else ""
        return "arg_name", arg_fields(
            spec, tuple(int(p) if p.isdigit() else p for p in parent.split(".") if p)
        )
    if kind == "missing":
        return "arg_missing", None
    if kind.endswith("_type") or kind in ("model_type", "model_attributes_type", "json_type"):
        return "arg_type", None
    return "arg_value", None


def _literal_strings(value: Any, where: str = "") -> list[tuple[str, str]]:
    """Every literal string in an argument tree (refs skipped), with its location."""
    if isinstance(value, str):
        return [(where, value)]
    if is_ref(value):
        return []
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _literal_strings(v, f"{where}.{k}" if where else k)]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _literal_strings(v, f"{where}[{i}]")]
    return []


def _as_of(s: Step) -> int | None:
    return s.args.get("as_of_tt") if isinstance(s.args.get("as_of_tt"), int) else None


def _past_page(producer: Step, spec: OperatorSpec, ref: Ref) -> str | None:
    """Why ``ref`` (``s1.rows[249]…``) picks an element past the page its producer returns when the
    producer's ``limit`` is literal (or its default) and the list is paged (it has a ``<list>_total``): the
    run would stop there (``E_LIMIT``). None where it does not, or the limit is not known here."""
    first = ref.path[0] if ref.path else None
    limit = spec.args.model_fields.get("limit")
    if not isinstance(first, Index) or limit is None or f"{ref.field}_total" not in spec.output.model_fields:
        return None
    page = producer.args.get("limit", limit.default)
    if type(page) is not int or first.i < page:
        return None
    return (
        f"element {first.i} is past the page of {page} step {ref.step} returns (a reader other than compute "
        f"reads the page); use limit >= {first.i + 1} on step {ref.step}"
    )
