"""The node-simple longest time-respecting path: ``longest_temporal_path`` with ``simple: true``.

A node-simple path visits no node twice (the start included). Finding the longest is NP-hard in general,
so this is an exact depth-first search over the window's arcs, bounded by the cost guard: it counts the
states it expands and, every :data:`CHECK_EVERY` of them, re-prices itself (``recheck``) against the
call's budget, so a window too dense to search is refused with ``E_COST`` and its suggestions, never
answered with a guess. The count is deterministic (no clock), so the same store and arguments are refused
or answered the same way on every run; an unguarded call stops at :data:`MAX_STATES` (``E_LIMIT``).

The time rule is the operator's, with ``strict: false`` allowing a hop at the same instant as the one
before (τ = max(α, s) instead of max(α + 1, s)): a node-simple path cannot loop at one instant, so the
non-decreasing rule of people's questions ("no earlier than the previous message") is safe here. With a
wait limit δ a hop after the first must be at τ ≤ α + δ: the search just drops the other candidates.

Candidates at each state are tried least ``(τ, eid, vid)`` first, so the search meets paths in the
operator's step order: the first path it reaches of each length d is the least path of length d, and the
answer is the one of the greatest length found (up to ``max_hops``; one hop further tells ``capped``).
Pruning: a branch stops once no unvisited node remains, and the whole search stops at the first path of
``max_hops + 1`` hops (the answer is then capped, and its path was met on the way).
The oracle (``oracle/longest_path.py``) enumerates the same paths by plain scans of the edge list.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tgms.engine.errors import LimitError
from tgms.engine.operators.cost import CostEstimate, recheck

#: states between two re-pricings of the search (one numpy selection each: ~10-20 µs)
CHECK_EVERY = 4_096
#: what one expanded state is priced at, in the cost model's "state" units (a traversal state costs ~0.4
#: µs in numpy; a search state is one Python iteration with a small numpy selection: 569,344 states took
#: 2.27 s at 10^6 edge versions, ~4 µs or ~9x, 2026-12-06; priced 12x)
STATE_FACTOR = 12.0
#: the hard stop of an unguarded search (no budget to re-price against)
MAX_STATES = 20_000_000


@dataclass(frozen=True)
class SimplePathResult:
    hops: int
    capped: bool
    steps: list[int]  # positions (into the arc arrays) of the path's hops
    times: list[int]  # τ of each hop


def longest_simple(
    u: np.ndarray,
    v: np.ndarray,
    s: np.ndarray,
    end: np.ndarray,
    order: np.ndarray,
    n_nodes: int,
    src: int | None,
    t_a: int,
    t_b: int,
    max_hops: int,
    strict: bool,
    budget_s: float | None,
    suggestions: list[str],
    delta: int | None = None,
) -> SimplePathResult:
    """The least longest node-simple path over arcs ``u→v`` valid ``[s, end)``, grouped by ``u`` (sorted);
    ``order`` ranks arcs by ``(eid, vid)`` (the tie-break after τ). ``src`` None: from any node."""
    step = 1 if strict else 0
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]]) if len(u) else np.zeros(0, np.int64)
    first_of = np.full(n_nodes + 1, -1, np.int64)
    first_of[u[starts]] = starts
    ends = np.r_[starts[1:], len(u)] if len(u) else np.zeros(0, np.int64)
    last_of = np.full(n_nodes + 1, -1, np.int64)
    last_of[u[starts]] = ends
    seen = np.zeros(n_nodes, bool)
    limit = max_hops + 1  # one past the cap: tells whether a longer path exists
    best_steps: list[list[int]] = [[]]  # best_steps[d]: the first (least) path of d hops met
    best_times: list[list[int]] = [[]]
    path: list[int] = []
    times: list[int] = []
    states = 0
    distinct = len(np.unique(np.r_[u, v])) if len(u) else 0

    def candidates(node: int | None, alpha: int, first: bool = False) -> tuple[np.ndarray, np.ndarray]:
        if node is None:
            idx = np.arange(len(u))
        else:
            lo = first_of[node]
            if lo < 0:
                return np.zeros(0, np.int64), np.zeros(0, np.int64)
            idx = np.arange(lo, last_of[node])
        tau = np.maximum(alpha + step, s[idx])
        ok = (tau < end[idx]) & (tau < t_b) & ~seen[v[idx]]
        if delta is not None and not first:
            ok &= tau - alpha <= delta
        if node is None:
            ok &= u[idx] != v[idx]  # a self-loop revisits its node
        idx, tau = idx[ok], tau[ok]
        rank = np.lexsort((order[idx], tau))
        return idx[rank], tau[rank]

    # an explicit stack of (candidate arcs, their τ, next index): recursion would hit Python's limit
    alpha0 = t_a - 1 if strict else t_a
    if src is not None:
        seen[src] = True
    stack = [(*candidates(src, alpha0, first=True), 0)]
    while stack:
        idx, tau, i = stack[-1]
        if i >= len(idx) or len(path) + 2 > distinct:
            stack.pop()
            if path:
                arc = path.pop()
                times.pop()
                seen[v[arc]] = False
                if not path and src is None:
                    seen[u[arc]] = False
            continue
        stack[-1] = (idx, tau, i + 1)
        arc, t = int(idx[i]), int(tau[i])
        if seen[v[arc]] or (not path and src is None and seen[u[arc]]):
            continue
        if not path and src is None:
            seen[u[arc]] = True
        seen[v[arc]] = True
        path.append(arc)
        times.append(t)
        if len(path) == len(best_steps):  # the first path of this length: the least one
            best_steps.append(list(path))
            best_times.append(list(times))
        states += 1
        if states % CHECK_EVERY == 0:
            _check(states, budget_s, suggestions)
        if len(path) == limit:
            # a path one past the cap: the answer is capped, and its path, the least of max_hops hops, was
            # met on the way here (the first path of each length is the least), so nothing else can change
            break
        stack.append((*candidates(int(v[arc]), t), 0))
    longest = len(best_steps) - 1
    hops = min(longest, max_hops)
    return SimplePathResult(hops, longest > max_hops, best_steps[hops], best_times[hops])


def _check(states: int, budget_s: float | None, suggestions: list[str]) -> None:
    if budget_s is None:
        if states >= MAX_STATES:
            raise LimitError(
                f"longest_temporal_path: the node-simple search passed {MAX_STATES:,} states",
                limit=MAX_STATES,
                suggestions=suggestions,
            )
        return
    est = CostEstimate({"state": STATE_FACTOR * states}, suggestions)
    recheck("longest_temporal_path", est, f"the node-simple search passed {states:,} states", budget_s)
