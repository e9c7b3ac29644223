"""The executor: run a plan's steps deterministically, keep their results by digest, trace everything.

For each step, in :meth:`Plan.order` (topological, ties in plan order):

1. a step whose dependency did not succeed is ``skipped`` (``E_UPSTREAM`` naming it); independent
   branches keep running;
2. its ``$ref`` arguments are resolved from the producers' paged payloads (:func:`engine.plan.refs.resolve`).
   A resolved list longer than the argument accepts (``maxItems``) or than ``max_ref_items`` is cut, and
   the cut is recorded;
3. **truncation taint**: the step is ``upstream_truncated`` when it read a list a producer's page cut (whole
   or through ``[*]``), when a ref list was cut in step 2, or when it read anything from a producer that
   is itself upstream-truncated. Taint follows the data a step reads: ``rows_total`` of a cut page is
   exact and carries none, ``rows[*].uid`` of it does;
   **Full reads**: an operator that reads whole lists (``Traits.full_input``: compute) reads past a cut
   page instead: the executor keeps the full result of every cut step such an operator reads (the call
   computed it before paging), and a ref to a cut list of an untainted producer resolves against it. The
   read is complete (no taint); it is recorded with the length and digest of what it read (``reads[i].
   full``), and the consumer's own result is paged as usual. Its lists are bounded by ``max_full_items``
   (longer: ``E_COST``, stage ``input``), then by the call's cost guard. Not in the taint ablation;
4. a call its operator declares list-reducing (``Traits.reduces``: compute's count, sum, topk, union, ...)
   over tainted input (a tainted producer's list, or an operator without full reads) is ``refused``
   (``E_UPSTREAM``, reason ``truncated_input``) instead of returning the count of a page;
5. the call runs through the operator envelope with the cost guard, its budget capped by what is left
   of the plan's wall budget; the envelope and the resolved arguments go into the content-addressed
   :class:`ResultStore`; the plan's row budget counts every returned list element.

The trace is deterministic apart from its timings: :attr:`Trace.digest` hashes everything but
``wall_ms`` and ``estimate_s``, so re-running a plan on the same (or a replayed) store gives the same
digest, on either backend.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tgms.engine.canonical import Dumped, digest, sha256_hex
from tgms.engine.errors import CorruptError, CostError, LimitError, NotFoundError, TGMSError, UpstreamError
from tgms.engine.execute.background import later
from tgms.engine.execute.full_reads import FullResults
from tgms.engine.execute.results import MemoryResults, ResultStore
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import DEFAULT_BUDGET_S, values_estimate
from tgms.engine.operators.envelope import run_call
from tgms.engine.operators.registry import get_operator
from tgms.engine.plan.contracts import arg_max_items
from tgms.engine.plan.model import Plan, Step
from tgms.engine.plan.refs import Ref, Star, element_part, resolve, set_at

TIMING_FIELDS = ("wall_ms", "estimate_s")


@dataclass(frozen=True)
class ExecConfig:
    budget_s: float = DEFAULT_BUDGET_S  # per call (the cost guard)
    plan_wall_s: float = 120.0  # the whole plan
    plan_rows: int = 200_000  # list elements returned over all steps
    max_ref_items: int = 10_000  # longest list a ref may pass into an argument
    max_full_items: int = 1_000_000  # longest list a full-input step (compute) may read
    taint: bool = True  # propagate truncation taint (off only for the ablation)
    check_cost: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class StepRecord:
    id: str
    op: str
    depends_on: list[str]
    status: str = "pending"  # ok | error | refused | skipped
    error: dict[str, Any] | None = None
    args_digest: str | None = None
    result_digest: str | None = None
    envelope_digest: str | None = None
    rows: int | None = None  # rows on the returned page
    rows_total: int | None = None
    truncated: bool = False  # this step's own page was cut
    upstream_truncated: bool = False  # it read incomplete evidence (transitively)
    # {ref, at, truncated}, and full: {items, digest} for a read past a producer's cut page
    reads: list[dict[str, Any]] = field(default_factory=list)
    ref_cuts: list[dict[str, Any]] = field(default_factory=list)  # {at, ref, kept, total}
    estimate_s: float | None = None
    wall_ms: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def tainted(self) -> bool:
        return self.truncated or self.upstream_truncated

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class Trace:
    plan_id: str
    plan_digest: str
    question: str
    answer_spec: dict[str, Any] | None
    steps: list[StepRecord]
    config: dict[str, Any]
    store_digest: str | None = None
    results: ResultStore = field(default_factory=MemoryResults, repr=False)
    plan: dict[str, Any] = field(default_factory=dict, repr=False)  # the plan as run (raw JSON)
    _envelopes: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    #: whole payloads of cut steps a full-input step reads (never serialized)
    full: FullResults = field(default_factory=FullResults, repr=False)

    @property
    def step_args(self) -> dict[str, dict[str, Any]]:
        """Each step's arguments as planned (refs unresolved)."""
        steps = self.plan.get("steps") or []
        return {s["id"]: s.get("args", {}) for s in steps if isinstance(s, dict) and "id" in s}

    def record(self, sid: str) -> StepRecord | None:
        return next((r for r in self.steps if r.id == sid), None)

    def envelope(self, sid: str) -> dict[str, Any] | None:
        """The result envelope of a successful step (from memory, else from the result store)."""
        rec = self.record(sid)
        if rec is None or not rec.ok or rec.envelope_digest is None:
            return None
        if sid not in self._envelopes:
            env = self.results.get(rec.envelope_digest)  # authenticated by its name
            if (
                env.get("result_digest") != rec.result_digest
                or digest(env.get("payload")) != rec.result_digest
            ):
                raise CorruptError(
                    f"the stored result of step {sid} does not match the trace's result digest",
                    step=sid,
                    result_digest=rec.result_digest,
                )
            self._envelopes[sid] = env
        return self._envelopes[sid]

    def payload(self, sid: str) -> dict[str, Any] | None:
        env = self.envelope(sid)
        return None if env is None else env["payload"]

    def resolved_args(self, sid: str) -> dict[str, Any] | None:
        rec = self.record(sid)
        if rec is None or rec.args_digest is None or not self.results.has(rec.args_digest):
            return None
        return self.results.get(rec.args_digest)

    @property
    def status(self) -> str:
        ok = [r.ok for r in self.steps]
        return "ok" if all(ok) else "failed" if not any(ok) else "partial"

    def answer(self) -> dict[str, Any] | None:
        """The value ``answer_spec.from`` names, with whether it rests on incomplete evidence."""
        if self.answer_spec is None:
            return None
        ref = Ref.parse(self.answer_spec["from"])
        rec, payload = self.record(ref.step), self.payload(ref.step)
        if rec is None or payload is None:
            return {"kind": self.answer_spec["kind"], "from": str(ref), "error": "the step did not succeed"}
        try:
            got = resolve(ref, payload)
        except TGMSError as exc:
            return {"kind": self.answer_spec["kind"], "from": str(ref), "error": exc.message}
        return {
            "kind": self.answer_spec["kind"],
            "from": str(ref),
            "value": got.value,
            "truncated": got.truncated or rec.upstream_truncated,
        }

    def to_dict(self, *, timings: bool = True, envelopes: bool = False) -> dict[str, Any]:
        steps = [r.to_dict() for r in self.steps]
        if not timings:
            for s in steps:
                for k in TIMING_FIELDS:
                    s.pop(k)
        out: dict[str, Any] = {
            "plan_id": self.plan_id,
            "plan_digest": self.plan_digest,
            "question": self.question,
            "answer_spec": self.answer_spec,
            "store_digest": self.store_digest,
            "config": self.config,
            "status": self.status,
            "steps": steps,
            "plan": self.plan,
        }
        if timings:
            out["trace_digest"] = self.digest
        if envelopes:
            out["envelopes"] = {r.envelope_digest: self.envelope(r.id) for r in self.steps if r.ok}
            out["resolved_args"] = {
                r.args_digest: self.resolved_args(r.id) for r in self.steps if r.args_digest
            }
        return out

    @property
    def digest(self) -> str:
        return digest(self.to_dict(timings=False))


def trace_from_dict(d: dict[str, Any], results: ResultStore | None = None) -> Trace:
    """Rebuild a trace from its JSON (``tgms plan run`` output); envelopes embedded in it are added to the
    result store (checked against their digests when read)."""
    res = results if results is not None else MemoryResults()
    for obj in list((d.get("envelopes") or {}).values()) + list((d.get("resolved_args") or {}).values()):
        if obj is not None:
            res.put(obj)
    fields = StepRecord.__dataclass_fields__
    steps = [StepRecord(**{k: v for k, v in s.items() if k in fields}) for s in d.get("steps", [])]
    return Trace(
        d.get("plan_id", ""),
        d.get("plan_digest", ""),
        d.get("question", ""),
        d.get("answer_spec"),
        steps,
        d.get("config", {}),
        d.get("store_digest"),
        res,
        d.get("plan") or {},
    )


# -- running a plan -------------------------------------------------------------------------------------


def _list_cap(spec_name: str, loc: tuple[str | int, ...], config: ExecConfig) -> int:
    spec = get_operator(spec_name)
    cap = arg_max_items(spec, loc)
    most = config.max_full_items if spec.traits.full_input and config.taint else config.max_ref_items
    return min(cap, most) if cap is not None else most


def _narrow(ref: Ref, producer_op: str | None) -> list[str]:
    """What to do instead of a whole read too large for the step: read less of each row, or let the
    producer (or the engine's grouping operator) reduce it before it crosses to compute."""
    out = [f"narrow step {ref.step} (a window, a filter) or group it there"]
    if not ref.path:  # whole rows: one field of each is read as a column, far cheaper
        out.append(f"read only the field a reducer needs: {ref}[*].<field>")
    if producer_op == "list_events":
        out.append("group, count or take medians of events in the engine with aggregate_events")
    return out


def _op_of(trace: Trace, ref: Ref) -> str | None:
    """The operator of the step ``ref`` reads."""
    rec = trace.record(ref.step)
    return rec.op if rec is not None else None


def _too_many(step: Step, ref: Ref, items: int, cap: int, producer_op: str | None = None) -> CostError:
    """A full-input step's read of more elements than it may read: refused whole (stage ``input``)."""
    return CostError(
        f"step {step.id} would read {items} elements of {ref}; a {step.op} step reads at most {cap}",
        stage="input",
        ref=str(ref),
        items=items,
        max_items=cap,
        suggestions=_narrow(ref, producer_op),
    )


def _reads_whole(op: str) -> bool:
    try:
        return get_operator(op).traits.full_input
    except NotFoundError:  # the step fails when it runs, with this error
        return False


def _full_readers(plan: Plan) -> set[str]:
    """The steps some full-input step reads: their full results are kept if their page is cut."""
    return {r.ref.step for s in plan.steps if _reads_whole(s.op) for r in s.refs}


class Executor:
    def __init__(
        self, ctx: OpContext, results: ResultStore | None = None, config: ExecConfig | None = None
    ) -> None:
        self.ctx = ctx
        self.results = results if results is not None else MemoryResults()
        self.config = config or ExecConfig()
        self._keep_full: set[str] = set()  # the run's steps whose full result a later step reads

    def run(self, plan: Plan, *, store_digest: str | None = None) -> Trace:
        cfg = self.config
        records = {s.id: StepRecord(s.id, s.op, list(s.depends_on)) for s in plan.steps}
        trace = Trace(
            plan.plan_id,
            plan.digest,
            plan.question,
            plan.answer_spec.to_dict() if plan.answer_spec else None,
            [records[s.id] for s in plan.order()],
            cfg.to_dict(),
            store_digest,
            self.results,
            plan.raw,
        )
        started = time.perf_counter()
        rows_used = 0
        self._keep_full = _full_readers(plan) if cfg.taint else set()
        for step in plan.order():
            rec = records[step.id]
            failed = [d for d in step.depends_on if not records[d].ok]
            if failed:
                rec.status = "skipped"
                rec.error = UpstreamError(
                    f"step {step.id} not run: its dependencies {failed} did not succeed", failed=failed
                ).to_dict()
                continue
            left = cfg.plan_wall_s - (time.perf_counter() - started)
            if left <= 0:
                rec.status = "error"
                rec.error = LimitError(
                    f"the plan's wall budget of {cfg.plan_wall_s} s is spent", budget_s=cfg.plan_wall_s
                ).to_dict()
                continue
            rows_used = self._run_step(step, rec, trace, min(cfg.budget_s, left), rows_used)
        return trace

    def _read(
        self,
        step: Step,
        ref: Ref,
        trace: Trace,
        budget_s: float,
        dumped: Dumped,
        pending: list[Callable[[], None]],
    ) -> tuple[Any, bool, dict[str, Any] | None]:
        """The value ``ref`` names for ``step``, whether the read is incomplete, and what a full read
        (past the producer's cut page) read: ``{items, digest}``, its digest filled in by ``pending``."""
        producer = trace.record(ref.step)
        payload = trace.payload(ref.step)
        assert producer is not None and payload is not None  # dependencies succeeded
        full_input = get_operator(step.op).traits.full_input and self.config.taint
        try:
            got = resolve(ref, payload)
        except LimitError:  # an index past the page: a full read may still find it
            if not full_input or not trace.full.has(ref.step):
                raise
        else:
            if not got.truncated or not full_input or not trace.full.has(ref.step):
                return got.value, got.truncated or producer.upstream_truncated, None
        self._price_full_read(step, ref, trace, budget_s)
        whole = trace.full.read(ref)
        # the producer's whole result is exact unless it rests on a cut read itself or its operator
        # stopped early (an operator's own ``truncated``, a list shorter than its total)
        incomplete = whole.truncated or trace.full.stopped_early(ref.step) or producer.upstream_truncated
        value = whole.value
        if whole.column is not None:  # read from an int64 column: dumped and ordered from it
            dumped.note_ints(value, whole.column)
        items = len(value) if isinstance(value, list) else 1
        # the whole result is read canonical (FullResults), so is what a ref picks from it: no second walk;
        # its text is kept, so the step's arguments and envelope, which hold it, splice it in. Its digest
        # is taken beside the call and filled in when the step ends (_run_step)
        data = dumped.data(value)
        taken = later(lambda: sha256_hex(data), len(data))
        full = {"items": items, "digest": ""}
        pending.append(lambda: full.__setitem__("digest", taken()))
        return value, incomplete, full

    def _price_full_read(self, step: Step, ref: Ref, trace: Trace, budget_s: float) -> None:
        """The cost guard for a read past a cut page, before the whole list is built: building,
        canonicalizing and digesting it is priced like the call's own walk of it (``values_estimate``)
        and held to the step's budget, so a 10^6-row read over budget is refused in milliseconds, not
        after the seconds it would take (``E_COST``, stage ``input``). A list longer than any step may
        read (``max_full_items``) is refused here too, unbuilt (unguarded: when it has been built)."""
        shape = trace.full.shape(ref.step, ref.field)
        if shape is None or not self.config.check_cost:
            return
        items, first = shape
        if ref.path and not isinstance(ref.path[0], Star):
            return  # one element picked out of the list, not the list
        if items > self.config.max_full_items:
            raise _too_many(step, ref, items, self.config.max_full_items, _op_of(trace, ref))
        # a column read walks the field's values; any other read builds and walks every whole row
        if trace.full.reads_column(ref) and first is not None:
            try:  # what the read takes of each element: the projection's part of the first one
                first = element_part(ref, first)
            except TGMSError:
                return  # the read fails on its own, with its own error
        est = values_estimate(items, first, _narrow(ref, _op_of(trace, ref)))
        if est.seconds > budget_s:
            raise CostError(
                f"step {step.id}: reading all {items} elements of {ref} would take an estimated "
                f"{est.seconds:.2f} s, over the budget of {budget_s:.2f} s",
                stage="input",
                ref=str(ref),
                items=items,
                estimate=est.to_dict(),
                budget_s=budget_s,
                suggestions=est.suggestions,
            )

    def _resolve(
        self,
        step: Step,
        rec: StepRecord,
        trace: Trace,
        budget_s: float,
        dumped: Dumped,
        pending: list[Callable[[], None]],
    ) -> dict[str, Any]:
        args = copy.deepcopy(step.args)
        for r in sorted(step.refs, key=lambda r: [str(p) for p in r.loc]):
            value, tainted, full = self._read(step, r.ref, trace, budget_s, dumped, pending)
            if isinstance(value, list) and r.loc:
                cap = _list_cap(step.op, r.loc, self.config)
                if len(value) > cap and get_operator(step.op).traits.full_input and self.config.taint:
                    # a step that reduces whole lists gets the whole list or nothing: a cut one would
                    # answer for part of it
                    raise _too_many(step, r.ref, len(value), cap, _op_of(trace, r.ref))
                if len(value) > cap:
                    rec.ref_cuts.append({"at": r.where, "ref": str(r.ref), "kept": cap, "total": len(value)})
                    value = value[:cap]
                    tainted = True
            read = {"ref": str(r.ref), "at": r.where, "truncated": tainted}
            rec.reads.append(read if full is None else {**read, "full": full})
            if tainted and self.config.taint:
                rec.upstream_truncated = True
            if r.loc:
                set_at(args, r.loc, value)
            else:
                args = value
        return args

    def _run_step(self, step: Step, rec: StepRecord, trace: Trace, budget_s: float, rows_used: int) -> int:
        """One step, its record complete when it returns: the digests taken beside its call (its full
        reads' and its arguments', engine/execute/background.py) are filled in."""
        pending: list[Callable[[], None]] = []
        try:
            return self._run_step_call(step, rec, trace, budget_s, rows_used, pending)
        finally:
            for fill_in in pending:
                fill_in()

    def _run_step_call(
        self,
        step: Step,
        rec: StepRecord,
        trace: Trace,
        budget_s: float,
        rows_used: int,
        pending: list[Callable[[], None]],
    ) -> int:
        t0 = time.perf_counter()
        dumped = Dumped()  # a whole read's text, dumped once for the read, the arguments and the envelope
        try:
            args = self._resolve(step, rec, trace, budget_s, dumped, pending)
            if isinstance(args, dict):  # its text built now; hashed and stored beside the call when large
                taken = self.results.put_later(args, dumped=dumped)
                pending.append(lambda: setattr(rec, "args_digest", taken()))
            spec = get_operator(step.op)
            if rec.upstream_truncated and isinstance(args, dict) and spec.traits.reduces_list(args):
                srcs = [x["ref"] for x in rec.reads if x["truncated"]]
                what = spec.traits.reducing_call(step.op, args)
                raise UpstreamError(
                    f"step {step.id}: {what} over incomplete input {srcs} would give a "
                    "wrong number; use the producer's *_total field, or raise its limit to cover the result",
                    reason="truncated_input",
                    reads=srcs,
                )
            result = run_call(
                self.ctx, step.op, args, budget_s=budget_s, check_cost=self.config.check_cost, dumped=dumped
            )
        except TGMSError as exc:
            rec.status = (
                "refused"
                if exc.code == "E_COST" or exc.details.get("reason") == "truncated_input"
                else "error"
            )
            rec.error = exc.to_dict()
            if (
                exc.code == "E_COST"
                and budget_s < self.config.budget_s
                and exc.details.get("stage") != "input"
            ):
                # the plan's remaining wall time was the limit: record the plan budget, not the remaining
                # time (a timing), so the trace stays deterministic
                rec.error = LimitError(
                    f"step {step.id}: the estimate exceeds what is left of the plan's wall budget of "
                    f"{self.config.plan_wall_s} s",
                    plan_wall_s=self.config.plan_wall_s,
                    estimate=exc.details.get("estimate"),
                    stage=exc.details.get("stage", "estimate"),
                    suggestions=exc.details.get("suggestions"),
                ).to_dict()
            rec.wall_ms = round((time.perf_counter() - t0) * 1e3, 3)
            return rows_used
        env = result.envelope
        payload = env["payload"]
        returned = sum(len(payload[name]) for name in spec.lists)
        rec.estimate_s = round(result.estimate_s, 6)
        rec.wall_ms = round((time.perf_counter() - t0) * 1e3, 3)
        if rows_used + returned > self.config.plan_rows:
            rec.status = "error"
            rec.error = LimitError(
                f"step {step.id} returned {returned} rows; the plan's row budget of "
                f"{self.config.plan_rows} is spent",
                budget=self.config.plan_rows,
                used=rows_used,
                suggestions=["lower this step's limit"],
            ).to_dict()
            return rows_used
        rec.status = "ok"
        # run_call's envelope is canonical
        rec.envelope_digest = self.results.put(env, canonical=True, dumped=dumped)
        trace._envelopes[step.id] = env
        rec.result_digest = env["result_digest"]
        rec.rows = len(payload["rows"]) if isinstance(payload.get("rows"), list) else None
        rec.rows_total = payload.get("rows_total") if isinstance(payload.get("rows_total"), int) else None
        rec.truncated = bool(payload.get("truncated", False))
        if rec.truncated and step.id in self._keep_full and result.full is not None:
            trace.full.keep(step.id, result.full)
        return rows_used + returned


def execute(
    plan: Plan,
    ctx: OpContext,
    results: ResultStore | None = None,
    config: ExecConfig | None = None,
    *,
    store_digest: str | None = None,
) -> Trace:
    return Executor(ctx, results, config).run(plan, store_digest=store_digest)
