"""Temporal traversal (O4): temporal_reachability (``docs/operators.md`` §5), and the arc lookups
temporal_paths (:mod:`engine.operators.temporal_paths`, §6) shares.

One cached adjacency per belief state and direction holds every arc sorted by ``(from, rank)``, ``rank``
being the edge version's position in the ``(vt_s, eid, vid)`` scan order: "the arcs of u starting in
``[α, t)``" is a binary search per end on the key ``from·(n+1) + rank``, vectorized over a frontier.
Interval arcs (``vt_e > vt_s + 1``), the only ones that can be entered after they start (τ = α), also
sit in a second, smaller index.

- Earliest arrival without a wait limit: frontier label-correcting rounds in numpy (relax the arcs of
  the nodes whose arrival improved) until nothing improves; exact for interval arcs.
- ``delta_max_wait``: the frontier search over *all* reachable ``(node, arrival)`` states (a later
  arrival may leave within the limit where the earliest cannot), settled in time buckets.
- ``strict``: a state that arrived at α leaves from its *ready time* α + 1 (the start state from t_a), so
  an arc is taken at ``max(α + 1, vt_s)``; ``depart_by`` keeps the start state's arcs before it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
from pydantic import Field, model_validator

from tgms.engine.errors import CostError
from tgms.engine.operators.adjacency import Adjacency, Scope, _ranges, adjacency, scope
from tgms.engine.operators.base import (
    Model,
    OneOf,
    OpArgs,
    PagedOutput,
    TimeEnd,
    UidArg,
    Window,
    dedupe,
    invalid_at,
)
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import DEFAULT_BUDGET_S, CostEstimate, StoreProfile, memory_factor
from tgms.engine.operators.event_fields import EdgeWhere, edge_keep, edge_where_work
from tgms.engine.operators.lazy_rows import LazyRows, rows_of
from tgms.engine.operators.registry import operator

INF = np.iinfo(np.int64).max
DIRECTIONS = ("out", "in", "both")
#: run-time stops (deterministic counts, ~20 s of work) for graphs far beyond what the cost model expects
_MAX_EXPANSIONS = 200_000
_MAX_STATES = 60_000_000
#: rounds of a strict wait-limited search over interval arcs: a cycle of them open for long adds a state
#: per µs and a round per state (each hop over it takes 1 µs), which the state count alone would not stop
#: in time
_MAX_ROUNDS = 200_000
#: a strict wait-limited search is refused before it starts when it could meet more arrival times than
#: this that are no vt_s (interval arcs entered at α + 1; bounded by :func:`_drift_bound`)
_MAX_DRIFT = 2_000_000
_DRIFT_SUGGESTIONS = [
    "leave the interval edges out with `where` (e.g. on their rel_type): a strict hop over an edge "
    "already open takes 1 µs, so round a cycle of them the search meets every µs they stay open",
    "drop strict or delta_max_wait",
    "use a narrower window",
]


def _stopped(op: str, what: str, n: int, suggestions: list[str]) -> CostError:
    msg = f"{op}: stopped after {n:,} {what} (the run-time limit); narrow the query"
    return CostError(msg, op=op, limit=n, suggestions=suggestions)


Arcs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _out_arcs(
    sc: Scope,
    nodes: np.ndarray,
    alpha: np.ndarray,
    tid: np.ndarray,
    r_hi: np.ndarray | None = None,
    r_from: np.ndarray | None = None,
    mid: bool = True,
) -> Arcs:
    """Arcs usable from the states ``(nodes[i], alpha[i])`` (node ids ascending, then tid; ``alpha`` is the
    time a state can leave: its arrival, or the arrival + 1 under ``strict``): arcs starting at ``vt_s >=
    alpha`` below rank ``min(r_hi[i], r_b)`` (τ = vt_s; ``r_from[i]`` may raise the first rank when the
    arcs before it are already accounted for), plus (``mid``) interval arcs entered mid-interval (``vt_s <
    alpha < vt_e`` and ``alpha < t_b``, τ = alpha).

    Returns ``(owner, to, tau, tid, arc)``: ``owner`` indexes the states, ``arc`` is an index into the
    scope's arcs or, for mid-interval arcs, ``-1 - j`` into the scope's interval arcs."""
    base = nodes.astype(np.int64) * sc.g.stride
    r_lo = tid >> 1
    lo = np.searchsorted(sc.key, base + (r_lo if r_from is None else np.maximum(r_lo, r_from)), "left")
    if r_hi is None:
        hi = sc.ends_by_node[nodes]
    else:
        hi = np.searchsorted(sc.key, base + np.minimum(r_hi, sc.r_b), "left")
    idx, own = _ranges(lo, hi)
    if mid:
        jdx, jown = _ranges(sc.ioff[nodes], np.searchsorted(sc.ikey, base + r_lo, "left"))
    else:
        jdx = jown = np.zeros(0, dtype=np.int64)
    if len(jdx):
        ok = (sc.ive[jdx] > alpha[jown]) & (alpha[jown] < sc.t_b)
        jdx, jown = jdx[ok], jown[ok]
    return (
        np.concatenate([own, jown]),
        np.concatenate([sc.to[idx], sc.ito[jdx]]),
        np.concatenate([sc.a_vs[idx], alpha[jown]]),
        np.concatenate([sc.a_tid[idx], tid[jown]]),
        np.concatenate([idx, -1 - jdx]),
    )


def _arc_rank(sc: Scope, arc: np.ndarray) -> np.ndarray:
    """Edge rank of arcs as returned by :func:`_out_arcs`."""
    mid = arc < 0
    rank = np.empty(len(arc), dtype=np.int64)
    rank[~mid] = sc.rank[arc[~mid]]
    rank[mid] = sc.irank[-1 - arc[mid]]
    return rank


def _tids(g: Adjacency, t: np.ndarray) -> np.ndarray:
    """``Adjacency.tid`` of every time in ``t``."""
    n = len(g.vt_s)
    r = np.searchsorted(g.vt_s, t, "left").astype(np.int64)
    if not n:
        return 2 * r
    return 2 * r + ((r < n) & (g.vt_s[np.minimum(r, n - 1)] == t))


def _first_arcs(sc: Scope, src: int, depart_by: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(to, tau, tid)`` of the start state's arcs: the traveller at ``src`` at t_a may wait any time for
    the first arc (τ = max(t_a, vt_s), strict or not), which must be taken before ``depart_by``."""
    one = np.array([src], dtype=np.int64)
    _own, to, tau, tid, _arc = _out_arcs(sc, one, np.array([sc.t_a]), np.array([sc.g.tid(sc.t_a)]))
    if depart_by is not None:
        ok = tau < depart_by
        to, tau, tid = to[ok], tau[ok], tid[ok]
    return to.astype(np.int64), tau, tid


def earliest_arrival(
    sc: Scope, src: int, strict: bool = False, depart_by: int | None = None, hops: np.ndarray | None = None
) -> np.ndarray:
    """Earliest arrival by nid (INF = unreached), no wait limit: label-correcting rounds over the nodes
    whose arrival improved (a node's earliest arrival dominates its later ones, strict or not). The start
    state is apart: its arcs are fired once; a return to ``src`` is an ordinary arrival.

    The rounds are synchronous (each fires its frontier from the arrivals the round before left), so after
    round k a node's arrival is the earliest over walks of at most k hops: the round that first reaches a
    node is its fewest hops, written into ``hops`` when given (0 = unreached)."""
    return earliest_arrivals(sc, [src], strict, depart_by, hops)[0]


def earliest_arrivals(
    sc: Scope, srcs: list[int], strict: bool, depart_by: int | None, hops: np.ndarray | None
) -> np.ndarray:
    """:func:`earliest_arrival` from each of ``srcs`` at once, a row each (``len(srcs) × n_nodes``): its
    rounds over labels ``(walk, node)`` numbered ``walk · n + node`` (labels of different walks never
    meet), so one loop of rounds serves every walk. ``hops``: flat, ``len(srcs) · n``."""
    n = sc.g.n_nodes
    arr = np.full(len(srcs) * n, INF, dtype=np.int64)
    for i, src in enumerate(srcs):
        to, tau, _tid = _first_arcs(sc, src, depart_by)
        np.minimum.at(arr, i * n + to, tau)
        if hops is not None:
            hops[i * n + to] = 1
    frontier = np.flatnonzero(arr < INF)
    step = 1 if strict else 0
    k = 1
    while len(frontier):
        k += 1
        ready = arr[frontier] + step
        own, to, tau, _tid, _arc = _out_arcs(sc, frontier % n, ready, _tids(sc.g, ready))
        label = frontier[own] - frontier[own] % n + to
        better = tau < arr[label]
        label, tau = label[better], tau[better]
        if not len(label):
            break
        if hops is not None:
            hops[label[arr[label] == INF]] = k
        np.minimum.at(arr, label, tau)
        improved = np.zeros(len(arr), dtype=bool)  # the labels that improved, once each, in label order
        improved[label] = True
        frontier = np.flatnonzero(improved)
    return arr.reshape(len(srcs), n)


def _add_new(seen: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(seen ∪ keys, mask of keys not in seen)`` for a sorted ``seen`` and sorted distinct ``keys``."""
    if not len(seen):
        return keys, np.ones(len(keys), dtype=bool)
    at = np.searchsorted(seen, keys)
    new = seen[np.minimum(at, len(seen) - 1)] != keys
    return np.insert(seen, at[new], keys[new]), new


class _Seen:
    """The ``(node, arrival)`` states met in one time bucket. While every arrival is t_a or some vt_s, a
    state's key is ``node·span + tid`` (tid is one-to-one with those times); a strict search over interval
    arcs also meets other times (α + 1 on an arc entered after it started), and then the keys are exact
    ``(node, time)`` pairs, kept in lexicographic order."""

    def __init__(self, span: int, by_tid: bool) -> None:
        self.span, self.by_tid = span, by_tid
        self.keys = np.zeros(0, dtype=np.int64)
        self.nodes = np.zeros(0, dtype=np.int64)
        self.times = np.zeros(0, dtype=np.int64)

    def add(self, node: np.ndarray, time: np.ndarray, tid: np.ndarray) -> np.ndarray:
        """Positions of the states not met before (one per distinct state), ordered by (node, time)."""
        if self.by_tid:
            keys, pos = np.unique(node * self.span + tid, return_index=True)
            self.keys, new = _add_new(self.keys, keys)
            return pos[new]
        order = np.lexsort((time, node))
        n, t = node[order], time[order]
        first = np.r_[True, (n[1:] != n[:-1]) | (t[1:] != t[:-1])] if len(n) else np.zeros(0, dtype=bool)
        pos, n, t = order[first], n[first], t[first]
        k = len(self.nodes)
        nodes, times = np.concatenate([self.nodes, n]), np.concatenate([self.times, t])
        fresh = np.r_[np.zeros(k, dtype=bool), np.ones(len(n), dtype=bool)]
        o = np.lexsort((fresh, times, nodes))  # a state met before sorts before its new copy
        nodes, times, fresh = nodes[o], times[o], fresh[o]
        dup = np.r_[False, (nodes[1:] == nodes[:-1]) & (times[1:] == times[:-1])] if len(o) else fresh
        self.nodes, self.times = nodes[~dup], times[~dup]
        return pos[o[fresh & ~dup] - k]


def _drift_bound(sc: Scope, src: int, depart_by: int | None) -> int:
    """An upper bound of the states of a strict wait-limited search whose arrival is no vt_s: each is
    ``(w, α + 1)`` from a state ``(u, α)`` over an interval arc u→w ``[s, e)`` open at α + 1, with ``α >=
    max(s, earliest strict arrival at u)`` (no wait limit: a lower bound of every arrival) and ``α + 1 <
    min(e, t_b)``; summed over the scope's interval arcs."""
    ea = earliest_arrival(sc, src, True, depart_by)
    tails = sc.ikey // sc.g.stride
    first = np.maximum(np.maximum(sc.g.vt_s[sc.irank], ea[tails]), sc.t_a)
    last = np.minimum(sc.ive, sc.t_b) - 1
    return int(np.clip(last - np.minimum(first, last), 0, None).sum())


#: states per time bucket the wait-limited search aims at (bounds its dedup set and its rounds)
_BUCKET_EVENTS = 4096


def earliest_arrival_waiting(
    sc: Scope, src: int, delta: int, strict: bool = False, depart_by: int | None = None
) -> np.ndarray:
    """Earliest arrival by nid when every intermediate wait is at most ``delta``: every reachable
    ``(node, arrival)`` state is explored (no single-label pruning), each once.

    States are settled in time buckets (by rank of their arrival): a state only creates states at the
    same or a later time, so when a bucket has no frontier left its states are final and its dedup set is
    dropped; states for later buckets wait in per-bucket lists.

    A state fires the arcs of its node starting within delta of its arrival; an arc fired by one state
    gives the same child state whichever state fired it. Ranges of states of one node are therefore
    clipped against each other (within a round) and against everything fired in earlier buckets (whose
    states are all earlier, so their ranges end no later).

    ``strict``: a state leaves from its ready time α + 1 (arcs starting after α, or an interval arc
    entered at α + 1: a wait of 1, so none with ``delta`` 0). The start state (src at t_a, any wait, first
    arc before ``depart_by``) is fired apart; a return to src is an ordinary state."""
    g = sc.g
    mid = not strict or delta >= 1  # a strict hop over an open interval arc waits 1
    if strict and mid and len(sc.ito):
        drift = _drift_bound(sc, src, depart_by)
        if drift > _MAX_DRIFT:
            msg = (
                f"temporal_reachability: a strict search with delta_max_wait could meet {drift:,} arrivals "
                f"on interval edges entered after they started (limit {_MAX_DRIFT:,})"
            )
            raise CostError(msg, op="temporal_reachability", limit=_MAX_DRIFT, drift=drift,
                            suggestions=_DRIFT_SUGGESTIONS)  # fmt: skip
    arr = np.full(g.n_nodes, INF, dtype=np.int64)
    span = 2 * len(g.vt_s) + 2
    step = 1 if strict else 0
    # last usable rank (exclusive) for an arrival at the vt_s of rank r_a + i
    hi_tab = np.searchsorted(g.vt_s, g.vt_s[sc.r_a : sc.r_b] + delta, "right")
    n_buckets = max(1, min(256, (sc.r_b - sc.r_a) // _BUCKET_EVENTS))
    bounds = 2 * np.linspace(sc.r_a, sc.r_b, n_buckets + 1).astype(np.int64)[1:-1]
    pending: list[list[tuple[np.ndarray, ...]]] = [[] for _ in range(n_buckets)]

    def defer(to: np.ndarray, tau: np.ndarray, tid: np.ndarray) -> None:
        if not len(to):
            return
        b = np.searchsorted(bounds, tid, "right")
        order = np.argsort(b, kind="stable")
        b, to, tau, tid = b[order], to[order], tau[order], tid[order]
        cuts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]]).tolist()
        for c, e in zip(cuts, [*cuts[1:], len(b)], strict=True):
            pending[int(b[c])].append((to[c:e], tau[c:e], tid[c:e]))

    # the start state may wait any time for its first arc; it fired src's arcs starting before depart_by
    defer(*_first_arcs(sc, src, depart_by))
    fired = np.zeros(g.n_nodes, dtype=np.int64)  # rank up to which a node's arcs fired in earlier buckets
    fired[src] = sc.r_b if depart_by is None else min(sc.r_b, int(np.searchsorted(g.vt_s, depart_by, "left")))
    now_hi = np.zeros(g.n_nodes, dtype=np.int64)
    by_tid = not strict or not len(sc.ito)  # every arrival is t_a or some vt_s
    n_states = n_rounds = 0
    for b in range(n_buckets):
        if not pending[b]:
            continue
        to, tau, ctid = (np.concatenate(x) for x in zip(*pending[b], strict=True))
        pending[b] = []
        seen = _Seen(span, by_tid)
        while len(to):
            pos = seen.add(to, tau, ctid)
            if not len(pos):
                break
            node, alpha, tid = to[pos], tau[pos], ctid[pos]
            n_states += len(pos)
            n_rounds += 1
            if n_states > _MAX_STATES or (not by_tid and n_rounds > _MAX_ROUNDS):
                sugg = ["use a narrower window", "use a smaller delta_max_wait, or none"]
                if strict and len(sc.ito):
                    sugg = _DRIFT_SUGGESTIONS
                if n_states > _MAX_STATES:
                    raise _stopped("temporal_reachability", "(node, arrival) states", _MAX_STATES, sugg)
                raise _stopped("temporal_reachability", "rounds", _MAX_ROUNDS, sugg)
            np.minimum.at(arr, node, alpha)
            # a non-start state leaves only by arcs starting within delta of its arrival
            exact = (tid & 1).astype(bool)
            r_hi = np.empty(len(pos), dtype=np.int64)
            r_hi[exact] = hi_tab[(tid[exact] >> 1) - sc.r_a]
            r_hi[~exact] = np.searchsorted(g.vt_s, alpha[~exact] + delta, "right")
            np.maximum.at(now_hi, node, r_hi)
            ready = alpha + step
            rtid = _tids(g, ready) if strict else tid
            same = np.flatnonzero(node[1:] == node[:-1])  # the next state of the node fires from here
            r_hi[same] = np.minimum(r_hi[same], rtid[same + 1] >> 1)
            _own, to, tau, ctid, _arc = _out_arcs(sc, node, ready, rtid, r_hi, fired[node], mid)
            to = to.astype(np.int64)
            later = np.searchsorted(bounds, ctid, "right") > b
            if later.any():
                defer(to[later], tau[later], ctid[later])
                now = ~later
                to, tau, ctid = to[now], tau[now], ctid[now]
        np.maximum(fired, now_hi, out=fired)
    return arr


# -- temporal_reachability --------------------------------------------------------------------------


#: the most sources one temporal_reachability call walks from (a list ``src``)
MAX_SOURCES = 1000
#: one uid, or a list of them (one walk from each): one marked position, grounded uid by uid
Sources = Annotated[
    Annotated[list[str], Field(min_length=1, max_length=MAX_SOURCES)] | str,
    UidArg(),
]


class ReachabilityArgs(OpArgs):
    src: Sources
    window: Window
    delta_max_wait: Annotated[int, Field(ge=0)] | None = None
    direction: Annotated[str, OneOf(DIRECTIONS)] = "out"
    where: EdgeWhere
    strict: Annotated[
        bool, Field(description="each edge after the first strictly after the arrival at its tail")
    ] = False
    depart_by: Annotated[
        TimeEnd | None,
        Field(description="the first edge out of src is taken before this time; in (t_a, t_b]"),
    ] = None
    hops: Annotated[
        bool,
        Field(description="rows also give hops, the fewest edges to the node"),
    ] = False

    @model_validator(mode="after")
    def _departure_in_window(self) -> ReachabilityArgs:
        if self.hops and self.delta_max_wait is not None:
            invalid_at(
                "temporal_reachability",
                ("hops",),
                "hops is not available with delta_max_wait (an earlier arrival no longer does all a "
                "later one can, so the fewest hops are not found round by round); leave one out",
                True,
            )
        w, d = self.window, self.depart_by
        if d is not None and not w.t_a < d <= w.t_b:
            invalid_at(
                "temporal_reachability",
                ("depart_by",),
                f"depart_by must lie in (t_a, t_b] = ({w.t_a}, {w.t_b}]",
                d,
            )
        return self


class ReachRow(Model):
    uid: str
    earliest_arrival: int
    hops: Annotated[int | None, Field(description="with hops: true only")] = None
    src: Annotated[str | None, Field(description="with a list of src only: the walk's source")] = None


class ReachabilityOut(PagedOutput):
    rows: list[ReachRow]
    rows_total: int


def _widest_window(p: StoreProfile, t_a: int, t_b: int, seconds: Callable[[int], float]) -> list[str]:
    """Suggest "use a window of at most N µs": the widest ``[t_a, t_a + N)`` whose estimate
    (``seconds(t_b')``, increasing in ``t_b'``) fits the default budget; [] if none narrower helps."""
    budget = DEFAULT_BUDGET_S
    if seconds(t_b) <= budget:
        return []
    lo = int(np.searchsorted(p.vt_sorted, t_a, "right"))  # candidate ends: the window's event times
    hi = int(np.searchsorted(p.vt_sorted, t_b, "left"))
    if lo >= hi or seconds(int(p.vt_sorted[lo])) > budget:
        return []
    while hi - lo > 1:  # invariant: ending at vt_sorted[lo] fits, at vt_sorted[hi] (or t_b) does not
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if seconds(int(p.vt_sorted[mid])) <= budget else (lo, mid)
    width = int(p.vt_sorted[lo]) - t_a
    return [f"use a window of at most {width} µs (t_b <= {t_a + width})"]


def _wait_states_per_arc(delta: int, width: int) -> float:
    """(node, arrival) states per arc of a wait-limited search. Measured on the synthetic graph (5% interval
    edges, a tenth of them open-ended): 20–110, growing with delta / window, because a state passes through
    every interval edge open at its arrival. Instantaneous-only graphs stay near 1 (an overestimate there)."""
    return 30.0 + 40.0 * math.log10(1.0 + 100.0 * delta / width)


def _reachability_work(p: StoreProfile, a: ReachabilityArgs, t_b: int) -> dict[str, float]:
    t_a = a.window.t_a
    arcs = float(p.events_in(t_a, t_b) * (2 if a.direction == "both" else 1))
    reached = min(float(p.n_nodes), arcs)
    # label correcting: ~0.3 scan per arc, a couple of binary searches and one row per reached node
    work = {"scan_row": 0.3 * arcs, "state": reached, "row_out": 0.25 * reached}
    # the adjacency index is built on first use and cached; priced on every call so a cold call is not
    # admitted at a fraction of its time (a warm call is overpriced by at most this term)
    work["index_row"] = float(p.n_edges * (2 if a.direction == "both" else 1)) * memory_factor(p.n_edges)
    if a.delta_max_wait is not None and a.delta_max_wait < t_b - t_a - 1:
        per_arc = _wait_states_per_arc(a.delta_max_wait, t_b - t_a) * (2.5 if a.direction == "both" else 1.0)
        states = min(arcs * per_arc, p.n_nodes * (arcs + 1))  # "both": interval edges pass either way
        work["scan_row"] += 1.5 * states  # ~0.3 µs per state (expand, dedupe)
    return edge_where_work(p, a.where, work)


def _sources(a: ReachabilityArgs) -> list[str]:
    """The walks' sources: ``src``, or its list without repeats (first kept), in the given order."""
    return [a.src] if isinstance(a.src, str) else dedupe(a.src)


def _walks_work(p: StoreProfile, a: ReachabilityArgs, t_b: int) -> dict[str, float]:
    """One walk's work times the walks (the adjacency index, built once, counted once)."""
    one = _reachability_work(p, a, t_b)
    k = len(_sources(a))
    return {name: v if name == "index_row" else v * k for name, v in one.items()}


def _reachability_cost(p: StoreProfile, a: ReachabilityArgs) -> CostEstimate:
    t_a, t_b = a.window.t_a, a.window.t_b

    def seconds(end: int) -> float:
        return CostEstimate(_walks_work(p, a, end)).seconds

    sugg = _widest_window(p, t_a, t_b, seconds)
    if a.direction == "both":
        sugg.append("use direction 'out' or 'in' (half the arcs)")
    if a.delta_max_wait is not None and a.delta_max_wait < t_b - t_a - 1:
        sugg.append(f"drop delta_max_wait or use delta_max_wait >= {t_b - t_a - 1} (one label per node)")
    if len(_sources(a)) > 1:
        sugg.append("fewer sources (the walks cost one each)")
    return CostEstimate(_walks_work(p, a, t_b), sugg)


@operator(
    name="temporal_reachability",
    family="traversal",
    args=ReachabilityArgs,
    output=ReachabilityOut,
    cost=_reachability_cost,
    manual=(
        "Returns every node reachable from `src` by a time-respecting path inside `window`, with its "
        "earliest arrival, as `rows` {uid, earliest_arrival} ordered by (earliest_arrival, uid); src itself "
        "is not listed. The traveller is at src at t_a; an edge valid [s, e) reached at time a is used at "
        "max(a, s) if that is < e and < t_b, arriving then. direction 'in' walks edges backwards (time still "
        "runs forward), 'both' uses either orientation. delta_max_wait bounds every intermediate wait (not "
        "the wait at src before the first edge); the search then explores every (node, arrival) state. "
        "strict: true makes every edge after the first be taken strictly after the arrival at its tail "
        "(max(a + 1, s): a message passed on in a later instant, not the same one). depart_by: the first "
        "edge out of src is taken before it (in (t_a, t_b]; 'a message src sent on day D' is a window from "
        "D with depart_by = D + 1 day); a later return to src is an ordinary stop. `where` (edge "
        "predicates) limits the edges it may use. hops: true adds to each row `hops`, the fewest edges of a "
        "time-respecting path to the node by the same rules (it may arrive later than earliest_arrival; not "
        "with delta_max_wait). src may be a list of uids: a walk from each, rows also give src (whose "
        "walk; group them by src to count each one's reach)."
    ),
    example={
        "args": {"src": "n9", "window": {"t_a": 1082000000000000, "t_b": 1083000000000000}, "limit": 50},
        "outputs": ["rows", "rows_total"],
        "note": "S->X at 0, X->A at 1 and 3, A->B at 6: with delta_max_wait 3 B is reached at 6 via the "
        "later arrival A@3 (waits 3 and 3); with delta_max_wait 2 only X@0 and A@1.",
    },
)
def temporal_reachability(ctx: OpContext, a: ReachabilityArgs) -> dict[str, Any]:
    sources = _sources(a)
    nids = ctx.require_known(sources, a.as_of_tt, "src")
    t_a, t_b = a.window.t_a, a.window.t_b
    g = adjacency(ctx, a.as_of_tt, a.direction)
    keep = edge_keep(ctx, a.as_of_tt, a.where)
    unbounded = a.delta_max_wait is None or a.delta_max_wait >= t_b - t_a - 1  # no wait can exceed it
    sc = scope(g, t_a, t_b, keep=keep) if unbounded else scope(g, t_a, t_b, local=True, keep=keep)
    n = g.n_nodes
    flat_hops = np.zeros(len(nids) * n, dtype=np.int64) if a.hops and unbounded else None
    together = earliest_arrivals(sc, nids, a.strict, a.depart_by, flat_hops) if unbounded else None
    rank = ctx.uid_rank()
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
    for i, src in enumerate(nids):
        hops = None if flat_hops is None else flat_hops[i * n : (i + 1) * n]
        if together is not None:  # the walks' rounds taken together
            arr = together[i]
        else:
            assert a.delta_max_wait is not None
            arr = earliest_arrival_waiting(sc, src, a.delta_max_wait, a.strict, a.depart_by)
        arr[src] = INF  # src itself is never listed (a return to it is an ordinary stop)
        reached = np.flatnonzero(arr < INF)
        order = reached[np.lexsort((rank[reached], arr[reached]))]  # by (earliest_arrival, uid)
        parts.append((order, arr[order], None if hops is None else hops[order]))
    rows = ReachRows(ctx.uids(), None if isinstance(a.src, str) else sources, parts)
    return {"rows": rows, "rows_total": len(rows)}


class ReachRows(LazyRows):
    """temporal_reachability's rows as arrays (each walk's reached nodes, arrivals and hops, walk after
    walk); a row {uid, earliest_arrival[, hops][, src]} is built only when read (a page, or a column)."""

    canonical_rows = True

    def __init__(
        self,
        uids: list[str],
        sources: list[str] | None,
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]],
    ) -> None:
        def cat(arrays: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)

        self._uids, self._sources = uids, sources
        self._node = cat([p[0] for p in parts])
        self._time = cat([p[1] for p in parts])
        with_hops = bool(parts) and parts[0][2] is not None
        self._hops = cat([p[2] for p in parts if p[2] is not None]) if with_hops else None
        self._walk = cat([np.full(len(p[0]), i, dtype=np.int64) for i, p in enumerate(parts)])
        super().__init__(np.arange(len(self._node)))

    def _build(self, pos: np.ndarray) -> list[dict[str, Any]]:
        cols = {"uid": self.column_at("uid", pos), "earliest_arrival": self._time[pos].tolist()}
        if self._hops is not None:
            cols["hops"] = self._hops[pos].tolist()
        if self._sources is not None:
            cols["src"] = self.column_at("src", pos)
        return rows_of(cols)

    def column_at(self, name: str, pos: np.ndarray) -> list[Any]:
        if name == "uid":
            return [self._uids[i] for i in self._node[pos].tolist()]
        if name == "src":
            assert self._sources is not None
            return [self._sources[w] for w in self._walk[pos].tolist()]
        got = self.int_column(name)
        assert got is not None
        return got[pos].tolist()

    def has_column(self, name: str) -> bool:
        return (
            name in ("uid", "earliest_arrival")
            or (name == "hops" and self._hops is not None)
            or (name == "src" and self._sources is not None)
        )

    def int_column(self, name: str) -> np.ndarray | None:
        if name == "earliest_arrival":
            return self._time
        return self._hops if name == "hops" else None

    def column(self, name: str) -> list[Any]:
        return self.column_at(name, self._pos)
