"""The independent second path behind every gold answer: re-run the oracle plan on the brute-force oracles.

A suite's gold comes from executing its oracle plan with the engine's fast executor. A bug shared by the
fast operators and the executor would then be baked into the gold and score every correct system wrong,
so the gold is recomputed here by a path that shares none of that code: the same plan, but each step runs
on the reference oracles (:data:`engine.operators.oracle.ORACLES`, plain Python over every version) and
pages are cut by the reference pager (:func:`engine.operators.oracle.page`). Only the plan IR, the ref
language, canonical JSON and the mechanical reporter's ``typed_value`` are shared: they define what a
plan *means*, not how an operator computes.

The plan semantics mirrored from ``docs/plans.md`` §3: steps in :meth:`Plan.order`, refs resolved from the
producers' canonical paged payloads, except that an operator reading whole lists (``Traits.full_input``:
compute) reads a list a producer's page cut from the producer's full oracle result (untainted when that
producer is), and a list-reducing ``compute`` over truncated input refused with ``E_UPSTREAM``
(``truncated_input``) instead of counting a page. Not mirrored (they never reach a gold): the cost guard,
the plan's wall and row budgets, ``max_full_items``, and cutting a ref list to an argument's ``maxItems``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tgms.engine.api import (
    DEFAULT_LIMIT,
    ORACLES,
    LimitError,
    OracleStore,
    Plan,
    Ref,
    Step,
    Store,
    TGMSError,
    UpstreamError,
    build_plan,
    canonicalize,
    get_operator,
    oracle_page,
    resolve_ref,
    set_at,
    typed_value,
)
from tgms.pipeline.scoring.typed import score

#: operators whose payload has no pageable list (and no ``truncated``/``cursor``)
UNPAGED = frozenset({"count_temporal_motifs"})
#: a gold's cross-check: (oracle plan, answer kind, gold) -> whether the independent path agrees
GoldCheck = Callable[[dict[str, Any], str, Any], bool]
#: the error code of an answer value that does not have its kind's shape (the reporter's "unusable")
E_ANSWER_KIND = "E_ANSWER_KIND"


class SharedOracleStore(OracleStore):
    """An OracleStore that computes each belief state's version list once and shares it between calls.

    A suite cross-checks hundreds of plans against one store; the reference oracles filter every version
    per call (a copy of each), which was half of their time on CollegeMsg. The oracles only read the
    versions they are given (none mutates a version), so sharing the lists changes no result."""

    def __init__(self, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> None:
        super().__init__(nodes, edges)
        self._memo: dict[tuple[int, int | None], list[dict[str, Any]]] = {}
        self._known: dict[int | None, set[str]] = {}

    def _believed(self, versions: list[dict[str, Any]], a: int | None) -> list[dict[str, Any]]:  # type: ignore[override]
        key = (id(versions), a)
        if key not in self._memo:
            self._memo[key] = OracleStore._believed(versions, a)
        return self._memo[key]

    def known_uids(self, as_of_tt: int | None) -> set[str]:
        # the oracles only test membership in it or iterate it (none adds or removes a uid)
        if as_of_tt not in self._known:
            self._known[as_of_tt] = super().known_uids(as_of_tt)
        return self._known[as_of_tt]

    def __getstate__(self) -> dict[str, Any]:
        # the memo is keyed by the lists' id(): an unpickled copy has new lists, so it starts empty
        return {**self.__dict__, "_memo": {}, "_known": {}}


def oracle_store_for(store: Store) -> OracleStore:
    """Every node and edge version of ``store`` (all beliefs, closed versions included) as an OracleStore."""
    return SharedOracleStore(*store.public_rows())


def _read(ref: Ref, runs: dict[str, tuple[dict[str, Any], dict[str, Any]]], whole: bool) -> tuple[Any, bool]:
    """The value ``ref`` names and whether the read is incomplete: on the producer's page, or for a
    full-input reader (``whole``) on its full result when the page cut the list (an index past the page
    included; the full result is incomplete only if the oracle itself stopped early)."""
    page, full = runs[ref.step]
    try:
        got = resolve_ref(ref, page)
    except LimitError:
        if not whole:
            raise
    else:
        if not (got.truncated and whole):
            return got.value, got.truncated
    got = resolve_ref(ref, full)
    return got.value, got.truncated or bool(full.get("truncated"))


def _resolved_args(
    step: Step, runs: dict[str, tuple[dict[str, Any], dict[str, Any]]], tainted: dict[str, bool]
) -> tuple[Any, bool]:
    """The step's args with every ref replaced by its value, and whether any read was incomplete."""
    args: Any = copy.deepcopy(step.args)
    incomplete = False
    whole = get_operator(step.op).traits.full_input
    for r in sorted(step.refs, key=lambda r: [str(p) for p in r.loc]):
        value, cut = _read(r.ref, runs, whole)
        incomplete = incomplete or cut or tainted[r.ref.step]
        if r.loc:
            set_at(args, r.loc, value)
        else:
            args = value
    return args, incomplete


def _run_step(step: Step, args: Any, ostore: OracleStore) -> tuple[dict[str, Any], dict[str, Any]]:
    """The step's canonical payload as the fast path would return it (the oracle's, paged from offset 0),
    and the oracle's whole canonical payload."""
    if not isinstance(args, dict):
        raise UpstreamError(f"step {step.id}: its args resolved to a {type(args).__name__}, not an object")
    full = canonicalize(ORACLES[step.op](ostore, copy.deepcopy(args)))
    if step.op in UNPAGED:
        return full, full
    limit = DEFAULT_LIMIT if args.get("limit") is None else args["limit"]
    return oracle_page(full, limit, 0), full


def _run_plan(plan: Plan, ostore: OracleStore) -> dict[str, dict[str, Any]]:
    """Every step's canonical paged oracle payload; the first failing step raises its ``TGMSError``."""
    runs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    tainted: dict[str, bool] = {}
    for step in plan.order():
        if step.op not in ORACLES:
            raise UpstreamError(f"step {step.id}: no oracle for operator {step.op!r}", op=step.op)
        args, incomplete = _resolved_args(step, runs, tainted)
        # calls whose result is wrong on part of a list, as the operator declares (plan semantics, shared
        # with the executor: Traits.reduces, e.g. compute's list fns)
        traits = get_operator(step.op).traits
        if incomplete and isinstance(args, dict) and traits.reduces_list(args):
            raise UpstreamError(
                f"step {step.id}: {traits.reducing_call(step.op, args)} over incomplete input would give a "
                "wrong number",
                reason="truncated_input",
            )
        runs[step.id] = _run_step(step, args, ostore)
        tainted[step.id] = incomplete
    return {sid: page for sid, (page, _) in runs.items()}


def _error(kind: Any, code: str, message: str) -> dict[str, Any]:
    return {"kind": kind, "error": {"code": code, "message": message}}


def oracle_answer(plan_json: dict[str, Any], ostore: OracleStore) -> dict[str, Any]:
    """The typed answer ``{"kind", "value"}`` of ``plan_json`` computed on the oracles alone.

    ``{"kind", "error": {"code", "message"}}`` instead when the plan does not build, a step or a ref fails
    (the ``TGMSError`` code), or the answer value lacks its kind's shape (:data:`E_ANSWER_KIND`).
    """
    spec = plan_json.get("answer_spec") if isinstance(plan_json, dict) else None
    kind = spec.get("kind") if isinstance(spec, dict) else None
    try:
        plan = build_plan(plan_json)
        if plan.answer_spec is None:
            return _error(kind, "E_SCHEMA", "the plan has no answer_spec")
        payloads = _run_plan(plan, ostore)
        src = plan.answer_spec.source
        raw = resolve_ref(src, payloads[src.step]).value
    except TGMSError as exc:
        return _error(kind, exc.code, exc.message)
    try:
        return {"kind": kind, "value": typed_value(plan.answer_spec.kind, raw)}
    except ValueError as exc:
        return _error(kind, E_ANSWER_KIND, f"{src} is {exc} for a {kind} answer")


def agree(kind: str, gold: Any, other: dict[str, Any]) -> bool:
    """Whether the oracle path's answer ``other`` scores as ``gold`` (never when it is an error)."""
    if "error" in other or "value" not in other:
        return False
    return score(kind, gold, other["value"])


def oracle_agrees(ostore: OracleStore, plan_json: dict[str, Any], kind: str, gold: Any) -> bool:
    """Whether the oracles' answer to ``plan_json`` scores as ``gold``: the cross-check of one gold."""
    return agree(kind, gold, oracle_answer(plan_json, ostore))
