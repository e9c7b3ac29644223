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
``vacuous``               vacuous_arg (a window with no events for an event operator, t1 == t2, an empty
                          uid list, a burst series too short to score)
``grounding``             grounding (a literal uid that is not in the task input)
``cost``                  cost (a step's estimate exceeds the call budget), plan_cost (the plan's)
========================  ==================================================================================

Steps whose arguments contain refs are priced at run time by the executor (their values are unknown here).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.errors import TGMSError
from engine.operators.base import parse_args
from engine.operators.context import OpContext
from engine.operators.cost import DEFAULT_BUDGET_S, profile
from engine.operators.registry import REGISTRY, OperatorSpec, load_all
from engine.plan.contracts import ANY, arg_fields, arg_types, compatible, literal_uids, ref_target
from engine.plan.model import Parsed, Step, Violation, parse_plan
from engine.plan.refs import is_ref
from engine.timeutil import OPEN_END

CHECKS = ("structure", "output_contracts", "args", "temporal", "vacuous", "grounding", "cost")
DEFAULT_PLAN_BUDGET_S = 60.0
#: operators whose window selects events by vt_s (an eventless window gives a trivially empty answer)
EVENT_WINDOW_OPS = ("count_temporal_motifs", "find_temporal_motif_instances", "burst_detection")
EVENT_METRICS = ("edge_event_count", "new_node_rate", "reciprocity")
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


# -- the dataset's valid-time extent ----------------------------------------------------------------------


@dataclass(frozen=True)
class Extent:
    lo: int | None  # least vt_s
    last_start: int | None  # greatest vt_s
    hi: int | None  # exclusive end of anything valid; None: something is valid forever

    def to_dict(self) -> dict[str, Any]:
        return {"vt_min": self.lo, "vt_max": self.last_start, "valid_until": self.hi}


def dataset_extent(ctx: OpContext, as_of_tt: int | None) -> Extent:
    def build() -> Extent:
        p = profile(ctx, as_of_tt)
        if p.vt_min is None:
            return Extent(None, None, 0)
        vt_e = ctx.edges(as_of_tt).vt_e
        if bool((vt_e >= OPEN_END).any()):
            return Extent(p.vt_min, p.vt_max, None)
        return Extent(p.vt_min, p.vt_max, int(vt_e.max()))

    return ctx.cached(("plan_extent", as_of_tt), build)


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
        for s in self.p.steps:
            consumer = self.specs.get(s.id)
            for r in s.refs:
                producer = by_id.get(r.ref.step)
                pspec = self.specs.get(r.ref.step) if producer else None
                if pspec is None:
                    continue
                tgt = ref_target(pspec, r.ref)
                if not tgt.ok:
                    self.add(
                        "output_field",
                        f"step {s.id}: {r.where} = {r.ref}: {tgt.message}; {tgt.at} is not a declared output",
                        s.id,
                        r.where,
                        list(tgt.legal),
                    )
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
            if not tgt.ok:
                self.add(
                    "answer_field",
                    f"answer_spec.from = {spec.source}: {tgt.message}",
                    spec.source.step,
                    "answer_spec.from",
                    list(tgt.legal),
                )
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
                if any(
                    loc == r
                    or loc.startswith(r + ".")
                    or (r.startswith(loc + ".") and prob.get("kind") == "missing")
                    for r in removed
                ):
                    continue
                if not self.on("args"):
                    continue
                code, legal = _arg_code(spec, prob)
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
        task = self.task_uids()
        for s in self.p.steps:
            spec = self.specs.get(s.id)
            if spec is None:
                continue
            parsed = self.literal_args(s, spec) if self.on("args") or self.on("cost") else None
            as_of = s.args.get("as_of_tt") if isinstance(s.args.get("as_of_tt"), int) else None
            if self.ctx is not None and (self.on("temporal") or self.on("vacuous")):
                self.temporal(s, spec, as_of)
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

    def task_uids(self) -> frozenset[str] | None:
        if self.cfg.task_uids is not None:
            return self.cfg.task_uids
        if self.ctx is None:
            return None
        known = self.ctx.nid_index()
        return frozenset(t.strip(".:-") for t in _TOKEN.findall(self.p.question) if t.strip(".:-") in known)

    def grounding(self, s: Step, spec: OperatorSpec, task: frozenset[str]) -> None:
        found = literal_uids(spec.args, s.args)
        if spec.name == "compute" and self.ctx is not None:
            # compute's operands are untyped: a literal string there that is a store uid is an identifier too
            known = self.ctx.nid_index()
            found += [(w, v) for w, v in _literal_strings(s.args) if v in known]
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

    def temporal(self, s: Step, spec: OperatorSpec, as_of: int | None) -> None:
        assert self.ctx is not None
        ext = dataset_extent(self.ctx, as_of)
        if ext.lo is None:
            if self.on("vacuous") and spec.edge_arrays:
                self.add(
                    "vacuous_arg",
                    f"step {s.id}: nothing is believed at as_of_tt={as_of}",
                    s.id,
                    "args.as_of_tt",
                )
            return
        prof = profile(self.ctx, as_of)
        hi = ext.hi if ext.hi is not None else OPEN_END
        legal = ext.to_dict()
        for where, w in _windows(s.args):
            if self.on("temporal") and (w["t_b"] <= ext.lo or w["t_a"] >= hi):
                self.add(
                    "temporal_extent",
                    f"step {s.id}: {where} [{w['t_a']}, {w['t_b']}) lies outside the dataset's "
                    f"valid-time extent [{ext.lo}, {hi})",
                    s.id,
                    f"args.{where}",
                    legal,
                )
            elif (
                self.on("vacuous") and _event_window(spec, s.args) and prof.events_in(w["t_a"], w["t_b"]) == 0
            ):
                self.add(
                    "vacuous_arg",
                    f"step {s.id}: {where} [{w['t_a']}, {w['t_b']}) contains no events, so the "
                    "answer is empty whatever the data",
                    s.id,
                    f"args.{where}",
                    _nearest_events(prof.vt_sorted, w["t_a"], w["t_b"]),
                )
        for name, t in _time_points(s.op, s.args):
            if self.on("temporal") and not ext.lo <= t < hi:
                self.add(
                    "temporal_extent",
                    f"step {s.id}: {name}={t} lies outside the dataset's valid-time extent [{ext.lo}, {hi})",
                    s.id,
                    f"args.{name}",
                    legal,
                )
        period = _period(s.op, s.args)
        if period is not None and self.on("temporal") and (period[1] <= ext.lo or period[0] >= hi):
            self.add(
                "temporal_extent",
                f"step {s.id}: the period [t1, t2) = [{period[0]}, {period[1]}) lies outside "
                f"the dataset's valid-time extent [{ext.lo}, {hi})",
                s.id,
                "args.t1",
                legal,
            )
        if not self.on("vacuous"):
            return
        for where, value in _uid_lists(s.args):
            if value == []:
                self.add(
                    "vacuous_arg",
                    f"step {s.id}: args.{where} is an empty list, which selects nothing",
                    s.id,
                    f"args.{where}",
                )
        if s.op == "burst_detection":
            self._burst(s)

    def _burst(self, s: Step) -> None:
        w, stride = s.args.get("window"), s.args.get("stride")
        if not (isinstance(w, dict) and isinstance(stride, int) and stride > 0):
            return
        if not all(isinstance(w.get(k), int) for k in ("t_a", "t_b")) or w["t_b"] <= w["t_a"]:
            return
        params = s.args.get("params") if isinstance(s.args.get("params"), dict) else {}
        win = params.get("w") if isinstance(params.get("w"), int) else 7
        mh = params.get("min_history") if isinstance(params.get("min_history"), int) else min(3, win)
        n = -(-(w["t_b"] - w["t_a"]) // stride)
        if n <= mh:
            need = (w["t_b"] - w["t_a"]) // (mh + 1)
            self.add(
                "vacuous_arg",
                f"step {s.id}: {n} bucket(s) of stride {stride}: with min_history {mh} no bucket "
                "can be scored",
                s.id,
                "args.stride",
                {"stride_at_most": max(need, 1)},
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
        for part in cut[:-1]:
            parent = parent[part] if isinstance(parent, (dict, list)) else None
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


def _windows(args: dict[str, Any]) -> list[tuple[str, dict[str, int]]]:
    """Literal windows ``{t_a, t_b}`` (ints, t_a < t_b) anywhere in the args, with their location."""
    out: list[tuple[str, dict[str, int]]] = []

    def walk(v: Any, where: str) -> None:
        if isinstance(v, dict) and not is_ref(v):
            ta, tb = v.get("t_a"), v.get("t_b")
            if where.endswith("window") and all(
                isinstance(x, int) and not isinstance(x, bool) for x in (ta, tb)
            ):
                if ta < tb:  # type: ignore[operator]
                    out.append((where, {"t_a": ta, "t_b": tb}))  # type: ignore[dict-item]
                return
            for k, x in v.items():
                walk(x, f"{where}.{k}" if where else k)

    walk(args, "")
    return out


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


def _int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _time_points(op: str, args: dict[str, Any]) -> list[tuple[str, int]]:
    """Literal time *points* (a snapshot time): ``t_valid``, and diff_snapshots' ``t1`` and ``t2``."""
    names = ("t_valid", "t1", "t2") if op == "diff_snapshots" else ("t_valid",)
    return [(n, args[n]) for n in names if _int(args.get(n))]


def _period(op: str, args: dict[str, Any]) -> tuple[int, int] | None:
    """neighborhood_evolution's period ``[t1, t2)`` (an interval, not two points)."""
    t1, t2 = args.get("t1"), args.get("t2")
    if op == "neighborhood_evolution" and _int(t1) and _int(t2) and t1 < t2:
        return (t1, t2)
    return None


def _uid_lists(args: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for key in ("seeds", "node_filter"):
        if key in args:
            out.append((key, args[key]))
    scope = args.get("scope")
    if isinstance(scope, dict) and "seeds" in scope:
        out.append(("scope.seeds", scope["seeds"]))
    return out


def _event_window(spec: OperatorSpec, args: dict[str, Any]) -> bool:
    return spec.name in EVENT_WINDOW_OPS or (
        spec.name == "graph_metric_timeseries" and args.get("metric") in EVENT_METRICS
    )


def _nearest_events(vt: np.ndarray, t_a: int, t_b: int) -> dict[str, Any]:
    i = int(np.searchsorted(vt, t_a, "left"))
    return {
        "previous_event": int(vt[i - 1]) if i > 0 else None,
        "next_event": int(vt[i]) if i < len(vt) else None,
        "window_length": t_b - t_a,
    }
