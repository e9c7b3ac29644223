"""The plan IR: a JSON DAG of operator steps, parsed into small immutable typed nodes (DESIGN §3.5).

::

    {"plan_id": "p1", "question": "...",
     "steps": [{"id": "s1", "op": "temporal_reachability", "args": {...}, "depends_on": []},
               {"id": "s2", "op": "compute", "args": {"fn": "count", "input": {"$ref": "s1.rows"}},
                "depends_on": ["s1"]}],
     "answer_spec": {"kind": "count", "from": "s1.rows_total"}}

:func:`build_plan` turns the JSON into a :class:`Plan` or raises ``E_SCHEMA`` listing every structural
violation at once: the shape, step ids (syntax, duplicates), at most :data:`MAX_STEPS` steps,
``depends_on`` naming known steps, acyclicity, ref syntax and ref scope (a ref may only name a step in its
own ``depends_on``). A built plan is therefore always a well-formed DAG; whether its operators, fields,
arguments and uids make sense is the static verifier's job (:mod:`engine.plan.verifier`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from tgms.engine.canonical import digest
from tgms.engine.errors import SchemaError
from tgms.engine.plan.refs import STEP_ID, Ref, RefSyntaxError, find_refs, loc_str

MAX_STEPS = 12
#: answer kinds (pipeline scoring: counts/values exact, entity sets by set equality, intervals by IoU)
ANSWER_KINDS = ("count", "value", "boolean", "entity", "entity_set", "interval", "relation", "rows")
PLAN_KEYS = ("plan_id", "question", "steps", "answer_spec")
STEP_KEYS = ("id", "op", "args", "depends_on")


@dataclass(frozen=True)
class Violation:
    """One problem with a plan: which rule, where, why, and what would be legal instead."""

    code: str
    message: str
    step: str | None = None
    field: str | None = None
    legal: Any = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "code": self.code,
            "step": self.step,
            "field": self.field,
            "message": self.message,
        }
        if self.legal is not None:
            d["legal"] = self.legal
        return d


@dataclass(frozen=True)
class StepRef:
    """A ref inside a step's args: where it stands (``loc``) and what it names."""

    loc: tuple[str | int, ...]
    ref: Ref

    @property
    def where(self) -> str:
        return "args." + loc_str(self.loc) if self.loc else "args"


@dataclass(frozen=True)
class Step:
    id: str
    op: str
    args: dict[str, Any]
    depends_on: tuple[str, ...]
    refs: tuple[StepRef, ...] = ()
    index: int = 0  # position in the plan (breaks ties in the topological order)


@dataclass(frozen=True)
class AnswerSpec:
    kind: str
    source: Ref  # the JSON key is "from"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "from": str(self.source)}


@dataclass(frozen=True)
class Plan:
    plan_id: str
    question: str
    steps: tuple[Step, ...]
    answer_spec: AnswerSpec | None
    raw: dict[str, Any] = field(compare=False, repr=False, default_factory=dict)

    def step(self, sid: str) -> Step:
        return next(s for s in self.steps if s.id == sid)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.steps)

    @property
    def digest(self) -> str:
        return digest(self.raw)

    def order(self) -> list[Step]:
        """Deterministic topological order: Kahn's algorithm, ready steps taken in plan order."""
        return topo_order(self.steps)


def topo_order(steps: tuple[Step, ...] | list[Step]) -> list[Step]:
    by_id = {s.id: s for s in steps}
    indeg = {s.id: sum(d in by_id for d in set(s.depends_on)) for s in steps}
    out: list[Step] = []
    ready = sorted((s for s in steps if indeg[s.id] == 0), key=lambda s: s.index)
    while ready:
        s = ready.pop(0)
        out.append(s)
        for t in steps:
            if s.id in t.depends_on:
                indeg[t.id] -= 1
                if indeg[t.id] == 0:
                    ready.append(t)
                    ready.sort(key=lambda x: x.index)
    return out


@dataclass
class Parsed:
    """What parsing got out of a raw plan: the steps that parsed, and every structural violation."""

    plan_id: str = ""
    question: str = ""
    steps: list[Step] = field(default_factory=list)
    answer_spec: AnswerSpec | None = None
    violations: list[Violation] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    #: ids of steps refused while parsing (reported once, there): a dependent naming one is not told again
    #: that no such step exists
    refused: set[str] = field(default_factory=set)

    def add(
        self, code: str, message: str, step: str | None = None, fld: str | None = None, legal: Any = None
    ) -> None:
        self.violations.append(Violation(code, message, step, fld, legal))


#: why an argument name can be a boolean: YAML 1.1 reads an unquoted on, off, yes, no as one
_BOOL_KEY = ' (YAML reads an unquoted on/off/yes/no key as a boolean: quote it, "on":)'


def _odd_keys(value: Any, loc: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], Any]]:
    """Every object key in ``value`` that is not a string, with where it stands."""
    out: list[tuple[tuple[str | int, ...], Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                out.append((loc, k))
            else:
                out += _odd_keys(v, (*loc, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _odd_keys(v, (*loc, i))
    return out


def _parse_step(p: Parsed, i: int, raw: Any) -> None:
    where = f"steps[{i}]"
    if not isinstance(raw, dict):
        p.add("schema", f"{where} must be an object", fld=where)
        return
    sid = raw.get("id")
    label = sid if isinstance(sid, str) else where
    bad = False
    for key in sorted(set(raw) - set(STEP_KEYS), key=str):
        hint = _BOOL_KEY if isinstance(key, bool) else ""
        p.add("schema", f"{where}: unknown key {key!r}{hint}", label, str(key), list(STEP_KEYS))
        bad = True
    if not isinstance(sid, str) or not STEP_ID.fullmatch(sid):
        p.add("schema", f"{where}: id must be a string matching {STEP_ID.pattern}", label, "id")
        return
    op = raw.get("op")
    if not isinstance(op, str) or not op:
        p.add("schema", f"step {sid}: op must be a non-empty string", sid, "op")
        bad = True
    args = raw.get("args", {})
    if not isinstance(args, dict):
        p.add("schema", f"step {sid}: args must be an object", sid, "args")
        bad = True
    for loc, key in _odd_keys(args) if isinstance(args, dict) else ():
        at = "args." + loc_str(loc) if loc else "args"
        hint = _BOOL_KEY if isinstance(key, bool) else ""
        p.add("schema", f"step {sid}: {at}: an argument name must be a string, not {key!r}{hint}", sid, at)
        bad = True
    deps = raw.get("depends_on", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        p.add("schema", f"step {sid}: depends_on must be a list of step ids", sid, "depends_on")
        bad = True
    if bad or not isinstance(op, str):  # (a non-str op is bad already: the test narrows op's type)
        p.refused.add(sid)
        return
    refs: list[StepRef] = []
    for loc, obj in find_refs(args):
        at = "args." + loc_str(loc) if loc else "args"
        if set(obj) != {"$ref"}:
            p.add("ref_syntax", f"step {sid}: a ref object has exactly one key $ref", sid, at)
            continue
        try:
            ref = Ref.parse(obj["$ref"])
        except RefSyntaxError as exc:
            p.add("ref_syntax", f"step {sid}: {exc}", sid, at)
            continue
        refs.append(StepRef(loc, ref))
    p.steps.append(Step(sid, op, copy.deepcopy(args), tuple(deps), tuple(refs), i))


def _parse_answer_spec(p: Parsed, raw: Any) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict) or set(raw) - {"kind", "from"}:
        p.add("schema", "answer_spec must be an object {kind, from}", fld="answer_spec")
        return
    kind, src = raw.get("kind"), raw.get("from")
    if kind not in ANSWER_KINDS:
        p.add(
            "schema",
            f"answer_spec.kind must be one of {list(ANSWER_KINDS)}",
            fld="answer_spec.kind",
            legal=list(ANSWER_KINDS),
        )
        return
    if isinstance(src, dict) and set(src) == {"$ref"}:
        src = src["$ref"]
    try:
        p.answer_spec = AnswerSpec(kind, Ref.parse(src))
    except RefSyntaxError as exc:
        p.add("ref_syntax", f"answer_spec.from: {exc}", fld="answer_spec.from")


def _check_graph(p: Parsed) -> None:
    ids = [s.id for s in p.steps]
    seen: set[str] = set()
    for s in p.steps:
        if s.id in seen:
            p.add("duplicate_id", f"step id {s.id!r} is used more than once", s.id, "id")
        seen.add(s.id)
    for s in p.steps:
        for d in s.depends_on:
            if d not in seen and d not in p.refused:
                p.add(
                    "unknown_dependency",
                    f"step {s.id}: depends_on names no step {d!r}",
                    s.id,
                    "depends_on",
                    ids,
                )
        for r in s.refs:
            if r.ref.step == s.id:
                p.add(
                    "ref_scope",
                    f"step {s.id}: {r.where} refers to the step itself",
                    s.id,
                    r.where,
                    list(s.depends_on),
                )
            elif r.ref.step not in s.depends_on:
                p.add(
                    "ref_scope",
                    f"step {s.id}: {r.where} refers to {r.ref.step}, which is not in its depends_on",
                    s.id,
                    r.where,
                    list(s.depends_on),
                )
    if len(set(ids)) == len(ids):
        order = {t.id for t in topo_order(p.steps)}
        stuck = [s.id for s in p.steps if s.id not in order]
        if stuck:
            selfdep = [s.id for s in p.steps if s.id in s.depends_on]
            why = f" ({', '.join(selfdep)} depends on itself)" if selfdep else ""
            p.add(
                "cycle",
                f"depends_on is cyclic: steps {stuck} can never run{why}",
                stuck[0],
                "depends_on",
                stuck,
            )
    if p.answer_spec is not None and p.answer_spec.source.step not in seen | p.refused:
        p.add(
            "answer_spec",
            f"answer_spec.from names no step {p.answer_spec.source.step!r}",
            fld="answer_spec.from",
            legal=ids,
        )


def parse_plan(raw: Any) -> Parsed:
    """Parse leniently: every structural violation, and every step that parsed (for further checks)."""
    p = Parsed()
    if not isinstance(raw, dict):
        p.add("schema", "a plan must be a JSON object {plan_id, question, steps, answer_spec}")
        return p
    p.raw = copy.deepcopy(raw)
    for key in sorted(set(raw) - set(PLAN_KEYS), key=str):
        p.add("schema", f"unknown plan key {key!r}", fld=str(key), legal=list(PLAN_KEYS))
    pid = raw.get("plan_id", "")
    if not isinstance(pid, str):
        p.add("schema", "plan_id must be a string", fld="plan_id")
    else:
        p.plan_id = pid
    q = raw.get("question", "")
    if not isinstance(q, str):
        p.add("schema", "question must be a string", fld="question")
    else:
        p.question = q
    steps = raw.get("steps")
    if not isinstance(steps, list) or not steps:
        p.add("schema", "steps must be a non-empty list", fld="steps")
        steps = []
    elif len(steps) > MAX_STEPS:
        p.add(
            "too_many_steps",
            f"a plan has at most {MAX_STEPS} steps (got {len(steps)})",
            fld="steps",
            legal=MAX_STEPS,
        )
    for i, s in enumerate(steps):
        _parse_step(p, i, s)
    _parse_answer_spec(p, raw.get("answer_spec"))
    _check_graph(p)
    return p


def build_plan(raw: Any) -> Plan:
    """A :class:`Plan`, or ``E_SCHEMA`` with ``details.violations`` listing every structural problem."""
    p = parse_plan(raw)
    if p.violations:
        first = p.violations[0]
        raise SchemaError(
            f"malformed plan: {first.message}"
            + (f" (+{len(p.violations) - 1} more)" if len(p.violations) > 1 else ""),
            violations=[v.to_dict() for v in p.violations],
        )
    return Plan(p.plan_id, p.question, tuple(p.steps), p.answer_spec, p.raw)
