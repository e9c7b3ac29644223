"""Longest time-respecting path: longest_temporal_path. Semantics: ``docs/operators.md`` §18.

A path follows edge direction under the time rule of DESIGN §3.4 with **strictly increasing** traversal
times: a hop over u→v valid ``[s, e)`` taken after arriving at u at α is at ``τ = max(α + 1, s)``, usable
iff ``τ < e`` and ``τ < t_b``; the traveller starts before ``t_a`` (α₀ = t_a − 1, so the first hop is at
``max(t_a, s)``). Nodes and edges may repeat (a walk): the longest node-simple path is NP-hard, while
with strictly increasing times a walk cannot loop forever and the longest is found exactly in
``max_hops`` linear rounds. Strict times also rule out the zero-time ping-pong a non-decreasing rule would
allow (a→b, b→a, a→b, ... all at one instant).

Algorithm: ``LD_r(u)``, the latest arrival at u from which r more hops are possible, is monotone (an
earlier arrival can do whatever a later one can), so one vectorized round per r over the window's arcs
gives it: ``LD_0 = t_b − 1``; an arc u→v ``[s, e)`` with ``B = min(e − 1, LD_{r−1}(v)) >= s`` allows
``LD_r(u) >= B − 1``. The longest length L is the largest r with a start whose α₀ <= LD_r; the path
returned is the least in step order, chosen greedily hop by hop: at each hop the arc of least
``(τ, eid, vid)`` whose head can still make the remaining hops (``τ <= LD_rest(v)``).

``delta_max_wait`` δ (every hop after the first at most δ after the previous one): an earlier arrival no
longer does all a later one can, so ``LD_r(u)`` becomes ``A_r(u)``, the *set* of arrivals at u from which r
more hops are possible, kept as sorted disjoint intervals per node and computed round by round,
incrementally (:mod:`engine.operators.arrival_sets`). The path is built greedily as above (``τ ∈
A_rest(v)``).
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field, model_validator

from tgms.engine.operators.arrival_sets import Arcs, arrival_rounds
from tgms.engine.operators.base import MAX_LIST, OpArgs, PagedOutput, Uid, Window, dedupe, invalid
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import CostEstimate, StoreProfile
from tgms.engine.operators.event_fields import EdgeWhere, edge_keep, edge_where_work
from tgms.engine.operators.registry import operator
from tgms.engine.operators.rows import Step
from tgms.engine.operators.simple_path import STATE_FACTOR, longest_simple
from tgms.engine.operators.sorting import stable_order
from tgms.engine.operators.traits import NonEmpty

DEFAULT_MAX_HOPS = 20
MAX_HOPS = 1_000
_NEG = np.iinfo(np.int64).min // 4  # "no continuation": below every arrival, far from overflow


class LongestPathArgs(OpArgs):
    window: Window
    src: Annotated[Uid | None, Field(description="null: from any node")] = None
    rel_types: Annotated[Annotated[list[str], Field(max_length=MAX_LIST)] | None, NonEmpty()] = None
    max_hops: Annotated[int, Field(ge=1, le=MAX_HOPS)] = DEFAULT_MAX_HOPS
    where: EdgeWhere
    simple: Annotated[bool, Field(description="no node twice")] = False
    strict: Annotated[
        bool,
        Field(description="false (simple only): a hop may be at the previous hop's time"),
    ] = True
    delta_max_wait: Annotated[
        int | None,
        Field(ge=0, description="every hop after the first at most this long after the previous one"),
    ] = None

    @model_validator(mode="after")
    def _strict_needs_walks(self) -> LongestPathArgs:
        if not self.strict and not self.simple:
            raise invalid("strict: false needs simple: true (a walk could loop at one instant without end)")
        return self


class LongestPathOut(PagedOutput):
    hops: Annotated[int, Field(description="length of the longest path (0: no usable edge)")]
    capped: Annotated[bool, Field(description="a path longer than max_hops exists")]
    nodes: Annotated[list[str], Field(description="the path's uids, hops + 1 of them ([] or [src] if 0)")]
    rows: Annotated[list[Step], Field(description="the path's steps; t = traversal time")]
    rows_total: int


#: measured on 10^6 synthetic versions (2 cores): a round costs ~0.35 scan rows per arc, the setup (arc
#: selection, the sort by tail, the first hop over every arc) ~10; priced ~2x above both
_PER_ARC_ROUND, _PER_ARC = 1.0, 20.0
#: a round with a wait limit (interval sets: two binary searches an arc, a sort of the new intervals)
#: is priced at this many plain rounds: measured ~9x a plain round (~0.1 µs an arc, 10^6 synthetic
#: versions, 2 shared cores), but the plain round is priced ~4x above its measure, so at 4x the estimate
#: stays ~1.8x above the measured time (max_hops 20 and 200, 2026-12-06)
_WAIT_ROUND = 4.0
#: the wait-limited rounds key a time as node·W + offset while that stays below this (else by rank)
_PACK_LIMIT = 2**62
#: of the versions starting before the window, the share still valid in it (modelling guess, as co_active's)
_STRADDLE = 0.05
_SIMPLE_SUGGESTIONS = ["narrow the window", "set src", "lower max_hops", "restrict rel_types or add where"]


def _cost(p: StoreProfile, a: LongestPathArgs) -> CostEstimate:
    w = a.window
    arcs = p.events_in(w.t_a, w.t_b) + _STRADDLE * p.events_in(0, w.t_a)
    if a.simple:  # the search's size is known only as it goes: priced here at one state per arc, then
        # re-priced from its state count while it runs (engine.operators.simple_path)
        return CostEstimate(
            edge_where_work(p, a.where, {"scan_row": _PER_ARC * arcs, "state": STATE_FACTOR * arcs}),
            _SIMPLE_SUGGESTIONS,
        )
    rounds = a.max_hops + 1
    per_round = _PER_ARC_ROUND * (_WAIT_ROUND if _waits(a) else 1.0)
    return CostEstimate(
        edge_where_work(
            p, a.where, {"scan_row": (per_round * rounds + _PER_ARC) * arcs, "row_out": a.max_hops}
        ),
        [f"lower max_hops (now {a.max_hops})", "narrow the window", "restrict rel_types"],
    )


def _waits(a: LongestPathArgs) -> bool:
    """Whether the wait limit can bind (no two hops of the window are further apart than t_b − 1 − t_a)."""
    return a.delta_max_wait is not None and a.delta_max_wait < a.window.t_b - 1 - a.window.t_a


class _Arcs:
    """The arcs usable in the window, grouped by tail node (a stable sort keeps scan order inside)."""

    def __init__(self, ctx: OpContext, a: LongestPathArgs) -> None:
        e = ctx.edges(a.as_of_tt)
        idx = e.overlapping(a.window.t_a, a.window.t_b, None if a.rel_types is None else dedupe(a.rel_types))
        passing = edge_keep(ctx, a.as_of_tt, a.where)
        if passing is not None:
            idx = idx[passing[idx]]
        # a stable sort by tail keeps scan order inside: a radix sort over 16-bit digits (one pass below
        # 65,536 nodes; ~10x faster than a quicksort of (tail, index) int64 keys at 10^5 arcs)
        self._n, self._scan = len(ctx.uids()), idx  # the window's versions in scan order (by_head)
        self._by_tail = stable_order(e.src[idx], self._n)
        self.e, self.pos = e, idx[self._by_tail]
        self.u, self.v = e.src[self.pos].astype(np.int64), e.dst[self.pos].astype(np.int64)
        self.s, self.end = e.vt_s[self.pos], e.vt_e[self.pos]
        self.heads = np.flatnonzero(np.r_[True, self.u[1:] != self.u[:-1]]) if len(self.pos) else self.u

    def by_head(self) -> np.ndarray:
        """The arcs (as indices of this by-tail order) in (head, scan position) order, which is (head, vt_s)
        order: the window's versions are in scan order, so a stable sort of their heads is it."""
        at_arc = np.empty(len(self.pos), np.int64)
        at_arc[self._by_tail] = np.arange(len(self.pos))
        return at_arc[stable_order(self.e.dst[self._scan], self._n)]

    def latest(self, ld: np.ndarray, n: int) -> np.ndarray:
        """One round: LD_r from LD_{r-1}."""
        out = np.full(n, _NEG, np.int64)
        if not len(self.pos):
            return out
        b = np.minimum(self.end - 1, ld[self.v])
        val = np.where(self.s <= b, b - 1, _NEG)
        out[self.u[self.heads]] = np.maximum.reduceat(val, self.heads)
        return out

    def of(self, node: int | None) -> np.ndarray:
        if node is None:
            return np.arange(len(self.pos))
        lo, hi = np.searchsorted(self.u, [node, node + 1])
        return np.arange(lo, hi)


@operator(
    name="longest_temporal_path",
    family="longest_path",
    args=LongestPathArgs,
    output=LongestPathOut,
    cost=_cost,
    budgeted=True,  # the node-simple search re-prices itself from its state count
    manual=(
        "Finds the longest time-respecting path (most hops) inside `window`, from `src` or from any node: "
        "each hop follows edge direction at a time strictly after the previous hop (τ = max(arrival + 1, "
        "vt_s), τ < vt_e and τ < t_b; the first hop at max(t_a, vt_s)); nodes may repeat. Looks up to "
        "max_hops (default 20, at most 1000; `capped` says a longer path exists); `where` (edge predicates) "
        "limits the edges it may use. `simple: true`: no node twice (exact search; E_COST if too dense); "
        "then `strict: false` allows a hop at the time of the previous one. delta_max_wait δ: every hop "
        "after the first at most δ after the previous one (τ_next − τ_prev ≤ δ; 'each message at most an "
        "hour after the previous one'), for walks and simple paths. Of the longest paths it "
        "returns the earliest: least (τ, eid, vid) at the first hop where two differ. `rows` are its steps "
        "{vid, eid, src, dst, rel_type, t}, `nodes` its uids, `hops` its length."
    ),
    example={
        "args": {"window": {"t_a": 1082000000000000, "t_b": 1083000000000000}, "src": "n9", "max_hops": 10},
        "outputs": ["hops", "nodes", "rows"],
        "note": "a→b at 1, b→c at 1, b→c at 3: hops 2 via b→c at 3 (a hop at the same time does not chain)",
    },
)
def longest_temporal_path(
    ctx: OpContext, a: LongestPathArgs, budget_s: float | None = None
) -> dict[str, Any]:
    src = None if a.src is None else ctx.require_known([a.src], a.as_of_tt, "src")[0]
    t_a, t_b = a.window.t_a, a.window.t_b
    n = len(ctx.uids())
    arcs = _Arcs(ctx, a)
    if a.simple:
        return _simple(ctx, a, arcs, src, n, budget_s)
    if _waits(a):
        assert a.delta_max_wait is not None
        return _waiting(ctx, a, arcs, src, a.delta_max_wait)

    def startable(ld: np.ndarray) -> bool:
        return bool(ld[src] >= t_a - 1) if src is not None else bool((ld >= t_a - 1).any())

    lds = [np.full(n, t_b - 1, np.int64)]
    capped = False
    for r in range(1, a.max_hops + 2):
        nxt = arcs.latest(lds[-1], n)
        if not startable(nxt):
            break
        if r > a.max_hops:
            capped = True
            break
        lds.append(nxt)
    hops = len(lds) - 1
    steps, nodes = _greedy(arcs, lds, src, t_a, t_b, hops)
    return _payload(ctx, arcs, steps, [t for _, t in nodes[1:]], a.src, capped)


def _payload(
    ctx: OpContext, arcs: _Arcs, steps: list[int], times: list[int], src: str | None, capped: bool
) -> dict[str, Any]:
    """The answer of a path whose hops are the edge versions at scan positions ``steps``, taken at
    ``times``: its rows and nodes (``[src]`` or ``[]`` for no hop)."""
    uids, e = ctx.uids(), arcs.e
    rel = e.col_at("rel_type", np.array(steps, np.int64)).to_pylist() if steps else []
    rows = [
        {"vid": int(e.vid[p]), "eid": int(e.eid[p]), "src": uids[int(e.src[p])], "dst": uids[int(e.dst[p])],
         "rel_type": rt, "t": t}
        for p, t, rt in zip(steps, times, rel, strict=True)
    ]  # fmt: skip
    path = [rows[0]["src"], *(r["dst"] for r in rows)] if rows else ([src] if src is not None else [])
    return {"hops": len(rows), "capped": capped, "nodes": path, "rows": rows, "rows_total": len(rows)}


def _greedy(
    arcs: _Arcs, lds: list[np.ndarray], src: int | None, t_a: int, t_b: int, hops: int
) -> tuple[list[int], list[tuple[int, int]]]:
    """(scan positions of the steps, [(node, arrival)] from the start) of the least longest path."""
    node, alpha = src, t_a - 1
    steps: list[int] = []
    visited: list[tuple[int, int]] = []
    for i in range(hops):
        rest = lds[hops - i - 1]
        cand = arcs.of(node)
        tau = np.maximum(alpha + 1, arcs.s[cand])
        ok = (tau < arcs.end[cand]) & (tau < t_b) & (tau <= rest[arcs.v[cand]])
        cand, tau = cand[ok], tau[ok]
        # the least (τ, eid, vid): ties in τ are few, so (eid, vid) are read for those alone
        tie = np.flatnonzero(tau == tau.min())  # not empty: LD guarantees a hop
        pos = arcs.pos[cand[tie]]
        k = int(tie[np.lexsort((arcs.e.key_at("vid", pos), arcs.e.key_at("eid", pos)))[0]])
        if not visited:
            visited.append((int(arcs.u[cand[k]]), alpha))
        steps.append(int(arcs.pos[cand[k]]))
        node, alpha = int(arcs.v[cand[k]]), int(tau[k])
        visited.append((node, alpha))
    return steps, visited


def _waiting(ctx: OpContext, a: LongestPathArgs, arcs: _Arcs, src: int | None, delta: int) -> dict[str, Any]:
    """Walks with every hop after the first at most ``delta`` after the previous one: rounds of arrival
    sets, then the least longest walk hop by hop."""
    t_a, t_b = a.window.t_a, a.window.t_b
    n = len(ctx.uids())
    # no arrival passes the last start by more than one per hop (an open arc entered again and again), so
    # times past `top` need no telling apart: the sets are cut there, far enough that the -1 a round
    # shifts them by never brings the cut down to an arrival
    top = min(t_b - 1, max(t_a, int(arcs.s.max()) if len(arcs.s) else t_a) + 2 * (a.max_hops + 3))
    width = top - (t_a - 1) + 1
    pack = (t_a - 1, width) if (n + 1) * width < _PACK_LIMIT else None
    by_head = arcs.by_head()  # (head, vt_s): the fast order for the lookups
    first = by_head if src is None else arcs.of(src)  # the first hops, at max(t_a, s) whatever the wait
    tau0 = np.maximum(t_a, arcs.s[first])
    usable = (tau0 < arcs.end[first]) & (tau0 < t_b)
    first, tau0 = first[usable], tau0[usable]
    tail_order = np.empty(len(by_head), np.int64)
    tail_order[by_head] = np.arange(len(by_head))  # the arcs in (tail, vt_s) order, as indices of by_head
    rounds = Arcs(arcs.u[by_head], arcs.v[by_head], arcs.s[by_head], arcs.end[by_head])
    spans, capped, able = arrival_rounds(
        rounds, arcs.v[first], tau0, n, (t_a, t_b), delta, a.max_hops, top, pack, tail_order
    )
    hops = len(spans) - 1
    node, alpha = src, t_a - 1
    steps: list[int] = []
    times: list[int] = []
    for i in range(hops):
        cand = first[able] if i == 0 else arcs.of(node)  # the first hop: among those able
        tau = np.maximum(alpha + 1, arcs.s[cand])
        ok = (tau < arcs.end[cand]) & (tau < t_b) & spans[hops - i - 1].contains(arcs.v[cand], tau)
        if i:
            ok &= tau - alpha <= delta
        cand, tau = cand[ok], tau[ok]
        tie = np.flatnonzero(tau == tau.min())  # not empty: the arrival sets guarantee a hop
        pos = arcs.pos[cand[tie]]
        k = int(tie[np.lexsort((arcs.e.key_at("vid", pos), arcs.e.key_at("eid", pos)))[0]])
        steps.append(int(arcs.pos[cand[k]]))
        node, alpha = int(arcs.v[cand[k]]), int(tau[k])
        times.append(alpha)
    return _payload(ctx, arcs, steps, times, a.src, capped)


def _simple(
    ctx: OpContext, a: LongestPathArgs, arcs: _Arcs, src: int | None, n: int, budget_s: float | None
) -> dict[str, Any]:
    """``simple: true``: the exact search of engine.operators.simple_path over the window's arcs."""
    e = arcs.e
    # each arc's rank by (eid, vid): the tie-break after τ
    rank = np.empty(len(arcs.pos), np.int64)
    rank[np.lexsort((e.key_at("vid", arcs.pos), e.key_at("eid", arcs.pos)))] = np.arange(len(arcs.pos))
    found = longest_simple(
        arcs.u, arcs.v, arcs.s, arcs.end, rank, n, src, a.window.t_a, a.window.t_b, a.max_hops, a.strict,
        budget_s, _SIMPLE_SUGGESTIONS, a.delta_max_wait,
    )  # fmt: skip
    steps = arcs.pos[np.array(found.steps, np.int64)].tolist() if found.steps else []
    return _payload(ctx, arcs, steps, found.times, a.src, found.capped)
