"""The claim verifier: rate each claim of an answer against the execution trace (DESIGN §3.5).

Verdicts, strongest first: ``supported``, ``weakly_supported`` (the check passes but the evidence it rests
on is incomplete), ``unsupported`` (the evidence contradicts or does not contain the claim),
``unverifiable`` (the claim cannot be checked: no evidence, an unknown or failed step, a ``from`` naming a
step the claim does not cite, a pattern whose re-execution fails).

- **count / value**: against the named trace field (``from``), or, without one, against the numbers and
  values of the cited results; a count claim whose ``from`` measures something else than a count (a time
  point, an identifier: the units of :mod:`engine.plan.units`, read off the trace's plan) is unsupported
  even when the number matches;
- **entity**: every uid must appear in the cited **results** (precision; completeness is the scorer's job)
  and be a uid of the store; a ``from`` that measures something else than identifiers is unsupported;
- **ordering**: ``a`` and ``b`` (refs into cited steps, or literal intervals that appear in the cited
  results) must stand in ``relation`` when the Allen relation is recomputed;
- **temporal_pattern**: the operator call in the assertion is re-executed on the store and its field
  compared.

Taint: a claim that reads incomplete evidence (a step that is upstream-truncated, or a ``from`` that reads
a cut list; without ``from``, any cited step that is truncated or tainted) is capped at
``weakly_supported``. ``VerifyConfig(taint=False)`` ignores completeness (the value-only ablation).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from tgms.engine.claims.answer import Answer, Claim, parse_answer
from tgms.engine.claims.evidence import (
    as_interval,
    contains_value,
    intervals_in,
    is_number,
    numbers_in,
    same_number,
    same_value,
    uids_in,
)
from tgms.engine.errors import LimitError, TGMSError
from tgms.engine.execute.executor import Trace
from tgms.engine.operators.compute_fns import allen_relation
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import run_call
from tgms.engine.operators.registry import REGISTRY, load_all
from tgms.engine.plan.refs import Ref, RefSyntaxError, resolve
from tgms.engine.plan.units import answer_unit_problem, plan_units, ref_units

VERDICTS = ("supported", "weakly_supported", "unsupported", "unverifiable")
_CMP = {"==": None, "!=": None, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@dataclass(frozen=True)
class VerifyConfig:
    taint: bool = True  # cap claims over incomplete evidence (off: value-only verification)
    reexecute_budget_s: float = 10.0  # cost budget of a pattern claim's re-execution
    #: a ``from`` (or an operand ref) naming a step the claim does not cite is unverifiable; off (the
    #: mutation ablation) it is read from whichever trace step it names
    cite_rule: bool = True


@dataclass(frozen=True)
class Verdict:
    claim: str
    type: str
    verdict: str
    reason: str
    tainted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "type": self.type,
            "verdict": self.verdict,
            "reason": self.reason,
            "tainted": self.tainted,
        }


class _Unverifiable(Exception):
    """The claim cannot be checked (verdict ``unverifiable``)."""


class _Mismatch(Exception):
    """The evidence contradicts or does not contain the claim (verdict ``unsupported``)."""


class _Checker:
    def __init__(self, trace: Trace, ctx: OpContext | None, cfg: VerifyConfig) -> None:
        self.trace = trace
        self.ctx = ctx
        self.cfg = cfg
        self.known = ctx.nid_index() if ctx is not None else None
        load_all()  # the operators' traits say which cited steps computed an Allen relation
        self.units = plan_units(trace.plan)  # what each step's outputs measure (the verifier's units)

    def measures(self, c: Claim, kind: str) -> None:
        """A claim of ``kind`` must read a ``from`` that measures what the kind needs (a count claim
        against a time point is refused even when the numbers agree)."""
        if c.source is None:
            return
        try:
            ref = Ref.parse(c.source)
        except RefSyntaxError:
            return  # read() reports it
        tree = ref_units(self.units, ref)
        if kind == "entity" and tree.item is not None:
            kind = "entity_set"  # uids read off a list
        problem = answer_unit_problem(kind, tree)
        if problem is not None:
            raise _Mismatch(f"{c.source} is {problem}, which a {c.type} claim cannot state")

    # -- evidence
    def cited(self, c: Claim) -> dict[str, dict[str, Any]]:
        if not c.evidence:
            raise _Unverifiable("the claim cites no evidence")
        out = {}
        for sid in c.evidence:
            rec = self.trace.record(sid)
            if rec is None:
                raise _Unverifiable(f"cites {sid!r}, which is not a step of the trace")
            try:
                payload = self.trace.payload(sid)
            except TGMSError as exc:
                raise _Unverifiable(
                    f"the result of {sid} is not available: {exc.code}: {exc.message}"
                ) from None
            if payload is None:
                raise _Unverifiable(f"cites {sid}, which did not succeed ({rec.status})")
            out[sid] = payload
        return out

    def read(self, c: Claim, text: str, cited: dict[str, dict[str, Any]]) -> tuple[Any, bool]:
        """The value a ref string names in the cited evidence, and whether the read is incomplete."""
        try:
            ref = Ref.parse(text)
        except RefSyntaxError as exc:
            raise _Unverifiable(f"{text!r} is not a ref: {exc}") from None
        payload = cited.get(ref.step)
        if payload is None and not self.cfg.cite_rule:  # the ablation: any step of the trace will do
            payload = self.trace.payload(ref.step) if self.trace.record(ref.step) is not None else None
        if payload is None:
            raise _Unverifiable(f"{text} names step {ref.step}, which the claim does not cite")
        rec = self.trace.record(ref.step)
        assert rec is not None
        try:
            got = resolve(ref, payload)
        except LimitError as exc:  # the element exists but the page did not return it: not checkable
            raise _Unverifiable(f"{text} is beyond the returned page: {exc.message}") from None
        except TGMSError as exc:
            raise _Mismatch(f"{text} does not resolve in the trace: {exc.message}") from None
        return got.value, got.truncated or rec.upstream_truncated

    def any_tainted(self, c: Claim) -> bool:
        return any((r := self.trace.record(s)) is not None and r.tainted for s in c.evidence)

    # -- per type
    def count_or_value(self, c: Claim, cited: dict[str, dict[str, Any]]) -> tuple[str, bool]:
        if c.type == "count":
            self.measures(c, "count")
        if c.source is not None:
            actual, tainted = self.read(c, c.source, cited)
            if c.type == "count" and isinstance(actual, list):
                actual = len(actual)  # the count of the named list (incomplete when the list was cut)
            if not same_value(c.value, actual):
                raise _Mismatch(f"{c.source} is {_show(actual)}, not {_show(c.value)}")
            return f"equals {c.source}", tainted
        hits = [s for s, p in cited.items() if contains_value(p, c.value)]
        if not hits:
            raise _Mismatch(f"{_show(c.value)} appears in none of the cited results {list(cited)}")
        return f"found in the results of {hits}", self.any_tainted(c)

    def entity(self, c: Claim, cited: dict[str, dict[str, Any]]) -> tuple[str, bool]:
        if self.known is not None:
            fabricated = [u for u in c.uids if u not in self.known]
            if fabricated:
                raise _Mismatch(f"{fabricated} are not uids of the store")
        self.measures(c, "entity")
        if c.source is not None:
            value, tainted = self.read(c, c.source, cited)
            pool = uids_in(value, self.known)
            where = c.source
        else:
            pool = set().union(*(uids_in(p, self.known) for p in cited.values()))
            tainted, where = self.any_tainted(c), f"the results of {list(cited)}"
        missing = [u for u in c.uids if u not in pool]
        if missing:
            raise _Mismatch(f"{missing} do not appear in {where}")
        return f"every uid appears in {where}", tainted

    def operand(
        self, c: Claim, x: Any, cited: dict[str, dict[str, Any]], name: str
    ) -> tuple[tuple[int, int], bool]:
        if isinstance(x, str):
            value, tainted = self.read(c, x, cited)
            iv = as_interval(value)
            if iv is None:
                raise _Mismatch(f"{name} = {x} is {_show(value)}, not an interval or instant")
            return iv, tainted
        iv = as_interval(x)
        if iv is None:
            raise _Mismatch(f"{name} = {_show(x)} is not an interval [s, e), {{vt_s, vt_e}} or an instant")
        # a literal operand must be in the cited results, or be an operand a cited step computing an
        # Allen relation was given (the plan's literal, echoed)
        echoed: list[Any] = []
        for sid in cited:
            env = self.trace.envelope(sid)
            spec = REGISTRY.get(env["op"]) if env is not None else None
            if env is not None and spec is not None and spec.traits.computes_allen(env["args_echo"]):
                echoed += spec.traits.allen.operands(env["args_echo"])  # type: ignore[union-attr]
        grounded = (
            any(iv in intervals_in(p) for p in cited.values())
            or any(isinstance(x, int) and same_number(x, n) for p in cited.values() for n in numbers_in(p))
            or any(e is not None and as_interval(e) == iv for e in echoed)
        )
        if not grounded:
            raise _Mismatch(f"{name} = {_show(x)} does not appear in the cited results")
        return iv, self.any_tainted(c)

    def ordering(self, c: Claim, cited: dict[str, dict[str, Any]]) -> tuple[str, bool]:
        a, ta = self.operand(c, c.a, cited, "a")
        b, tb = self.operand(c, c.b, cited, "b")
        rel = allen_relation(a, b)
        if rel != c.relation:
            raise _Mismatch(f"a {list(a)} is {rel} b {list(b)}, not {c.relation}")
        return f"recomputed: a {rel} b", ta or tb

    def pattern(self, c: Claim, cited: dict[str, dict[str, Any]]) -> tuple[str, bool]:
        if self.ctx is None:
            raise _Unverifiable("re-executing a pattern needs the store")
        a = c.assertion or {}
        try:
            env = run_call(self.ctx, a["op"], a["args"], budget_s=self.cfg.reexecute_budget_s).envelope
        except TGMSError as exc:
            raise _Unverifiable(f"re-executing {a['op']} failed: {exc.code}: {exc.message}") from None
        try:
            got = resolve(Ref.parse(f"re.{a['field']}"), env["payload"])
        except (RefSyntaxError, TGMSError) as exc:
            raise _Mismatch(f"the re-executed {a['op']} has no {a['field']}: {exc}") from None
        if not _holds(got.value, a.get("cmp", "=="), a["value"]):
            raise _Mismatch(
                f"re-executed {a['op']}: {a['field']} = {_show(got.value)}, not {a.get('cmp', '==')} "
                f"{_show(a['value'])}"
            )
        return f"re-executed {a['op']}: {a['field']} {a.get('cmp', '==')} {_show(a['value'])}", (
            got.truncated or self.any_tainted(c)
        )

    def check(self, c: Claim) -> Verdict:
        try:
            cited = self.cited(c)
            if c.source is not None:
                src = c.source.split(".", 1)[0]
                if src not in c.evidence and self.cfg.cite_rule:
                    raise _Unverifiable(f"from names step {src}, which the claim does not cite")
            fn = {
                "count": self.count_or_value,
                "value": self.count_or_value,
                "entity": self.entity,
                "ordering": self.ordering,
                "temporal_pattern": self.pattern,
            }[c.type]
            reason, tainted = fn(c, cited)
        except _Unverifiable as exc:
            return Verdict(c.id, c.type, "unverifiable", str(exc))
        except _Mismatch as exc:
            return Verdict(c.id, c.type, "unsupported", str(exc))
        if tainted and self.cfg.taint:
            return Verdict(
                c.id, c.type, "weakly_supported", reason + "; the evidence is incomplete (truncated)", True
            )
        return Verdict(c.id, c.type, "supported", reason, tainted)


def _holds(x: Any, cmp: str, y: Any) -> bool:
    if cmp == "==":
        return same_value(y, x)
    if cmp == "!=":
        return not same_value(y, x)
    if cmp == "contains":
        return isinstance(x, list) and any(same_value(y, v) for v in x)
    return is_number(x) and is_number(y) and bool(_CMP[cmp](x, y))  # type: ignore[misc]


def _show(x: Any, width: int = 80) -> str:
    text = repr(x)
    return text if len(text) <= width else text[: width - 3] + "..."


def verify_claims(
    answer: Answer | dict[str, Any],
    trace: Trace,
    ctx: OpContext | None = None,
    config: VerifyConfig | None = None,
) -> list[Verdict]:
    """One verdict per claim, in the answer's order."""
    ans = answer if isinstance(answer, Answer) else parse_answer(answer)
    checker = _Checker(trace, ctx, config or VerifyConfig())
    return [checker.check(c) for c in ans.claims]
