"""Per-entity event sequences: ``next_event`` (``docs/operators.md`` §21; issue 27).

For each event of a selection ``a``, the next (or previous) event of a selection ``b`` whose endpoints
match it: "how long until person 3 answers person 5", "after each e-mail person 5 receives, how long until
they next send one", "the 90th percentile reply delay over every answered e-mail". Events and the
selections are those of ``list_events`` (:mod:`engine.operators.event_fields`); the matching is one
vectorized pass, no per-event Python loop:

- the match key of an event is its matched endpoints' nids (0, 1 or 2 of them, folded into one int);
- the scan position *is* the event order ``(t, eid, vid)``, so an event's place in its key's sequence is
  the code ``key << bits | position``: ``b``'s codes are sorted once, and ``a``'s once as ``key << bits |
  a-index`` (the a-index order is the position order), which makes the search targets ascending too;
- the target of an ``a`` event is a store position: the first version after its time (next, strict) or
  at it (next, not strict), and the same two bounds for previous; one ``searchsorted`` of ``key << bits |
  target`` finds every ``a``'s ``b`` (when ``b`` is ``a`` keyed alike, the search is the bound of each
  event's (key, time) run in the one sorted order), and a non-strict match that lands on ``a``'s own
  version steps once past it (a version is one position, so the step is exact under ties).

The delay summaries are over every matched row, not the page: exact (a sum split into 31-bit halves,
medians and the nearest-rank quantile by one ``np.partition``), in §1's number rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any, NoReturn

import numpy as np
from pydantic import Field, model_validator

from tgms.engine.errors import LimitError
from tgms.engine.operators.adjacency import _ranges
from tgms.engine.operators.base import Model, OneOf, OpArgs, PagedOutput, invalid_at
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import CostEstimate, StoreProfile
from tgms.engine.operators.edge_arrays import EdgeArrays
from tgms.engine.operators.event_fields import EventSelection, SelectionKeys, derived, select, uid_array
from tgms.engine.operators.event_groups import exact, number_out
from tgms.engine.operators.events import priced, selection_work
from tgms.engine.operators.lazy_rows import LazyRows, rows_of
from tgms.engine.operators.registry import operator
from tgms.engine.operators.units import Measures, Unit

SIDES = ("src", "dst")
DIRECTIONS = ("next", "previous")
MAX_WITHIN = 2**62
_SELECTION_KEYS = ("window", "src", "dst", "node", "rel_types", "where")
#: scan rows per selected event (a's and b's) for the matching: two sorts, one search, the gathers and
#: the scatter back to a's order (a whole-store reply match at 10^6: ~75 ms quiet, ~2 scan rows an event)
_PER_EVENT = 2.5


class EventSpec(SelectionKeys):
    """An event selection: the keys of list_events' selection, all optional and AND-ed."""

    def selection(self, as_of_tt: int | None) -> EventSelection:
        """As list_events' (validated) selection arguments at ``as_of_tt``."""
        return EventSelection.model_construct(
            as_of_tt=as_of_tt, **{k: getattr(self, k) for k in _SELECTION_KEYS}
        )


class Match(Model):
    a: Annotated[str, OneOf(SIDES)]
    b: Annotated[str, OneOf(SIDES)]


def _located(loc: tuple[str | int, ...], message: str, value: Any) -> NoReturn:
    invalid_at("next_event", loc, message, value)


class NextEventArgs(OpArgs):
    a: EventSpec
    b: Annotated[EventSpec | None, Field(description="null: the same as a")] = None
    match: Annotated[
        list[Match],
        Field(
            max_length=2,
            default_factory=list,
            description="b's endpoint equals a's",
        ),
    ]
    direction: Annotated[str, OneOf(DIRECTIONS)] = "next"
    strict: Annotated[bool, Field(description="false: b.t may equal a.t")] = True
    within: Annotated[
        Annotated[int, Field(ge=0, le=MAX_WITHIN)] | None,
        Field(description="µs: |b.t - a.t| <= within"),
    ] = None
    unmatched: Annotated[bool, Field(description="also a events without b")] = False
    all: Annotated[bool, Field(description="every b within, a row each")] = False
    quantile: Annotated[
        Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None,
        Field(description="q of delay_quantile (nearest rank)"),
    ] = None
    order: Annotated[str, OneOf(("asc", "desc"))] = "asc"

    @model_validator(mode="after")
    def _distinct_matches(self) -> NextEventArgs:
        seen: set[tuple[str, str]] = set()
        for i, m in enumerate(self.match):
            if (m.a, m.b) in seen:
                _located(("match", i), f"match repeats {{a: {m.a}, b: {m.b}}}", m.model_dump())
            seen.add((m.a, m.b))
        if self.all and self.within is None:
            _located(("all",), "all needs within: every b within that many µs of its a", True)
        return self


class NextEventRow(Model):
    src: str
    dst: str
    rel_type: str
    t: int
    eid: int
    b_src: Annotated[str | None, Measures(Unit.ID)]
    b_dst: Annotated[str | None, Measures(Unit.ID)]
    b_t: Annotated[int | None, Measures(Unit.TIME)]
    b_eid: Annotated[int | None, Measures(Unit.ID)]
    delay: Annotated[int | None, Measures(Unit.DURATION), Field(description="|b.t - a.t| µs")]


Stat = Annotated[int | float | None, Measures(Unit.DURATION)]


class NextEventOut(PagedOutput):
    rows: Annotated[list[NextEventRow], Field(description="by a's (t, eid, vid); desc: reversed")]
    rows_total: int
    n_a: Annotated[int, Measures(Unit.COUNT), Field(description="a events selected")]
    n_matched: Annotated[int, Measures(Unit.COUNT), Field(description="a events with a b")]
    delay_min: Annotated[int | None, Measures(Unit.DURATION)]
    delay_max: Annotated[int | None, Measures(Unit.DURATION)]
    delay_mean: Stat
    delay_median: Stat
    delay_quantile: Annotated[
        int | None, Measures(Unit.DURATION), Field(description="null without `quantile`")
    ]


def _cost(p: StoreProfile, a: NextEventArgs) -> CostEstimate:
    n, work = selection_work(p, a.a.selection(a.as_of_tt))
    if a.b is not None:
        n_b, work_b = selection_work(p, a.b.selection(a.as_of_tt))
        work = {k: work.get(k, 0.0) + work_b.get(k, 0.0) for k in {*work, *work_b}}
        n += n_b
    work["scan_row"] = work.get("scan_row", 0.0) + _PER_EVENT * n
    work["row_out"] = work.get("row_out", 0.0) + min(a.limit, n)
    return priced(n, work, ["page with a smaller limit"])


def _keys(e: EdgeArrays, pos: np.ndarray, sides: list[str], n_nodes: int) -> np.ndarray:
    """The match key of the events at ``pos``: their ``sides`` endpoints' nids folded into one int."""
    whole = len(pos) == e.n  # every version: the columns as they are
    key = None
    for side in sides:
        col = getattr(e, side)
        nid = col if whole else col[pos]
        key = nid.astype(np.int64) if key is None else key * n_nodes + nid
    return np.zeros(len(pos), np.int64) if key is None else key


def _time_runs(e: EdgeArrays) -> tuple[np.ndarray, np.ndarray]:
    """(the run of equal ``vt_s`` each scan position is in, every run's first position and then ``n``):
    cached per belief state, with the edge arrays."""

    def build() -> tuple[np.ndarray, np.ndarray]:
        vt = e.vt_s
        new = np.empty(len(vt), bool)
        new[:1] = True
        np.not_equal(vt[1:], vt[:-1], out=new[1:])
        run = np.cumsum(new, dtype=np.int32 if len(vt) < 2**31 else np.int64) - 1
        return run, np.append(np.flatnonzero(new), len(vt))

    runs: tuple[np.ndarray, np.ndarray] = derived(e, "time_runs", build)
    return runs


def _targets(e: EdgeArrays, pos: np.ndarray, after: bool) -> np.ndarray:
    """Per position: the first store position whose time is > its time (``after``), else >= it."""
    if len(pos) * 16 < e.n:  # a few events: a search each
        return np.searchsorted(e.vt_s, e.vt_s[pos], "right" if after else "left")
    run, starts = _time_runs(e)
    return starts[(run if len(pos) == e.n else run[pos]) + int(after)]


def _bits(n: int) -> int:
    """Bits that hold 0..n (codes are ``key << bits | low``: shifts and masks, no division)."""
    return max(int(n).bit_length(), 1)


def _run_bounds(key: np.ndarray, t: np.ndarray, after: bool) -> np.ndarray:
    """For events sorted by (key, position): the index of the first event of each one's (key, time) run,
    or (``after``) one past the run's last."""
    new = np.empty(len(key), bool)
    new[:1] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    new[1:] |= t[1:] != t[:-1]
    starts = np.flatnonzero(new)
    run = np.cumsum(new) - 1
    return np.append(starts[1:], len(key))[run] if after else starts[run]


def _whole_order(e: EdgeArrays, sides: list[str], n_nodes: int, key: np.ndarray) -> np.ndarray:
    """Every version's code ``(key << bits) | position`` (``key``: its ``sides`` endpoints folded, as
    :func:`_keys` gives it for the whole store), ascending: the one sort of a whole-store selection, cached
    per belief state and sides (8 bytes a version each), so a whole-span question after the first does not
    sort 10^6 codes again (read-only: callers derive new arrays from it)."""

    def build() -> np.ndarray:
        code = (key << _bits(e.n)) | np.arange(e.n, dtype=np.int64)
        code.sort()
        code.flags.writeable = False
        return code

    order: np.ndarray = derived(e, ("match_order", tuple(sides), n_nodes), build)
    return order


@dataclass
class Matched:
    """``b``: b's scan position for each a event, in a's order (-1: none); ``hit``: the a-indices with a
    b, ascending; ``b_hit``: their b positions; ``delay``: their delays."""

    b: np.ndarray
    hit: np.ndarray
    b_hit: np.ndarray
    delay: np.ndarray


@dataclass
class Codes:
    """Both selections as sorted match codes: ``ia``, the a-indices in (key, position) order, with their
    scan positions ``ap_s`` and keys ``key_s``; ``base``, each one's ``key << bits_b``; ``code_b``, b's codes
    ``key << bits_b | position`` ascending (a's own when ``alike``: b is a, keyed alike); ``whole``: a is
    every version (its a-index is its position)."""

    ia: np.ndarray
    ap_s: np.ndarray
    key_s: np.ndarray
    base: np.ndarray
    code_b: np.ndarray
    alike: bool
    whole: bool


def _codes(
    e: EdgeArrays, ap: np.ndarray, pb: np.ndarray, a: NextEventArgs, n_nodes: int, same: bool
) -> Codes:
    sides_a, sides_b = [m.a for m in a.match], [m.b for m in a.match]
    alike = same and sides_a == sides_b  # b is a, keyed alike: b's order is a's
    ka = _keys(e, ap, sides_a, n_nodes)
    kb = ka if alike else _keys(e, pb, sides_b, n_nodes)
    bits_b, bits_a = _bits(e.n), _bits(len(ap))
    remapped = bool(len(a.match) and _bits(max(n_nodes, 1) ** len(a.match)) + bits_b > 62)
    if remapped:  # codes would overflow
        _, inv = np.unique(np.concatenate([ka, kb]), return_inverse=True)
        inv = inv.reshape(-1).astype(np.int64)
        ka, kb = inv[: len(ka)], inv[len(ka) :]
    whole = len(ap) == e.n  # every version: the a-index is the position
    # a by (key, a-index), which is (key, position)
    if whole and not remapped:
        code_a = _whole_order(e, sides_a, n_nodes, ka)
    else:
        code_a = (ka << bits_a) | np.arange(len(ap), dtype=np.int64)
        code_a.sort()  # in place: the codes are a fresh array
    ia = code_a & ((1 << bits_a) - 1)
    key_s = code_a >> bits_a
    del code_a
    ap_s = ia if whole else ap[ia]
    base = key_s << bits_b  # b's codes are (key, position)
    if alike:
        code_b = base | ap_s
    elif len(pb) == e.n and not remapped:
        code_b = _whole_order(e, sides_b, n_nodes, kb)
    else:
        code_b = (kb << bits_b) | pb
        code_b.sort()
    return Codes(ia, ap_s, key_s, base, code_b, alike, whole)


def _match(
    e: EdgeArrays, ap: np.ndarray, pb: np.ndarray, a: NextEventArgs, n_nodes: int, same: bool
) -> Matched:
    """Every a event's b (``ap``, ``pb``: the selections' scan positions; ``same``: b is a)."""
    if not len(ap) or not len(pb):
        none = np.zeros(0, np.int64)
        return Matched(np.full(len(ap), -1, np.int64), none, none, none)
    sc = _codes(e, ap, pb, a, n_nodes, same)
    ia, ap_s, base, code_b, whole = sc.ia, sc.ap_s, sc.base, sc.code_b, sc.whole
    nxt = a.direction == "next"
    after = nxt == a.strict  # search from the first version after a's time (else: at a's time)
    if sc.alike:  # b's codes are a's: the search is a run bound of the sorted order
        i = _run_bounds(sc.key_s, e.vt_s[ap_s], after)
    else:  # one search for every a (the targets are ascending in this order)
        i = np.searchsorted(code_b, base | _targets(e, ap, after)[ia], "left")
    # next: the first b at or after the target; previous: the last before it
    last = len(code_b) - 1
    if not nxt:
        i -= 1
    c = code_b[np.minimum(i, last) if nxt else np.maximum(i, 0)]
    if not a.strict:  # a's own version is never its b: step once past it
        own = c == base | ap_s
        i = i + own if nxt else i - own
        c = code_b[np.minimum(i, last) if nxt else np.maximum(i, 0)]
    # the code found is b's when it is in range and of a's key
    ok = (i <= last) & (c < base + (1 << _bits(e.n))) if nxt else (i >= 0) & (c >= base)
    b = np.empty(len(ap), np.int64)
    b[ia] = np.where(ok, c - base, -1)
    del c, ok, i, base, sc
    hit = np.flatnonzero(b >= 0)
    b_hit = b[hit]
    delay = e.vt_s[b_hit] - e.vt_s[hit if whole else ap[hit]]
    if not nxt:
        delay = -delay
    if a.within is not None:
        far = delay > a.within
        b[hit[far]] = -1
        hit, b_hit, delay = hit[~far], b_hit[~far], delay[~far]
    return Matched(b, hit, b_hit, delay)


#: the most (a, b) pairs ``all`` gives (each a row; its arrays are 16 bytes a pair before any row is built)
MAX_PAIRS = 10_000_000


def _pairs(
    e: EdgeArrays, ap: np.ndarray, pb: np.ndarray, a: NextEventArgs, n_nodes: int, same: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``all``: every (a, b) pair, b on a's side of its time within ``within`` (a-indices ascending, each
    a's b's nearest first), b's scan positions and the delays. The b's of an a are one range of b's sorted
    codes: from a's target to the first version past ``t ± within`` (one search per a, a second for the a's
    whose nearest b is within the bound; no loop)."""
    none = np.zeros(0, np.int64)
    if not len(ap) or not len(pb):
        return none, none, none
    assert a.within is not None  # the args model requires it with all
    sc = _codes(e, ap, pb, a, n_nodes, same)
    nxt = a.direction == "next"
    # next: (t, t + within] (strict) or [t, t + within]; previous: [t - within, t) or [t - within, t].
    # One search finds each a's near end (as _match's does); the nearest b decides whether an a has any
    # (most have none within the bound), and only those search for the far end
    near = np.searchsorted(sc.code_b, sc.base | _targets(e, ap, nxt == a.strict)[sc.ia], "left")
    last = len(sc.code_b) - 1
    at = np.minimum(near, last) if nxt else np.maximum(near - 1, 0)
    code = sc.code_b[at]
    pos = code - sc.base  # the nearest b's position, when it is of a's key
    ok = (near <= last) & (pos < (1 << _bits(e.n))) if nxt else (near >= 1) & (pos >= 0)
    t = e.vt_s[sc.ap_s].astype(np.int64)
    edge = t + a.within if nxt else t - a.within
    b_t = e.vt_s[np.where(ok, pos, 0)].astype(np.int64)
    some = np.flatnonzero(ok & ((b_t <= edge) if nxt else (b_t >= edge)))
    far_pos = np.searchsorted(e.vt_s, edge[some], "right" if nxt else "left")
    far = np.searchsorted(sc.code_b, sc.base[some] | far_pos, "left")
    start, end = (near[some], far) if nxt else (far, near[some])
    total = int((end - start).sum())
    if total > MAX_PAIRS:
        raise LimitError(
            f"next_event all: {total:,} pairs, more than {MAX_PAIRS:,}; narrow a, b or within",
            field="within", pairs=total, max_pairs=MAX_PAIRS,
        )  # fmt: skip
    idx, own = _ranges(start, end)
    if not nxt:  # nearest first: each a's range read backwards
        idx = start[own] + end[own] - 1 - idx
    own = some[own]  # back to the sorted a's
    b_pos = sc.code_b[idx] - sc.base[own]
    keep = b_pos != sc.ap_s[own]  # a's own version is never its b (it is in range when not strict)
    a_idx, b_pos = sc.ia[own[keep]], b_pos[keep]
    order = np.argsort(a_idx, kind="stable")  # a's order; each a's b's keep their order
    a_idx, b_pos = a_idx[order], b_pos[order]
    delay = np.abs(e.vt_s[b_pos].astype(np.int64) - e.vt_s[ap[a_idx]].astype(np.int64))
    return a_idx, b_pos, delay


def _exact_sum(d: np.ndarray) -> int:
    """The exact sum of non-negative int64 values below 2**62 (two int64 sums of 31-bit halves)."""
    return (int(np.sum(d >> 31)) << 31) + int(np.sum(d & (2**31 - 1)))


def summaries(d: np.ndarray, quantile: float | None) -> dict[str, Any]:
    """delay_min .. delay_quantile of the matched delays ``d`` (all null when there are none)."""
    n = len(d)
    if not n:
        return dict.fromkeys(("delay_min", "delay_max", "delay_mean", "delay_median", "delay_quantile"))
    rank = None if quantile is None else math.ceil(exact(quantile) * n)  # nearest rank, 1-based
    kth = sorted({(n - 1) // 2, n // 2, *(() if rank is None else (rank - 1,))})
    part = np.partition(d, kth)
    return {
        "delay_min": int(d.min()),
        "delay_max": int(d.max()),
        "delay_mean": number_out(Fraction(_exact_sum(d), n)),
        "delay_median": number_out(Fraction(int(part[(n - 1) // 2]) + int(part[n // 2]), 2)),
        "delay_quantile": None if rank is None else int(part[rank - 1]),
    }


#: a row's fields of its b (null in the row of an a without one)
_B_FIELDS = ("b_src", "b_dst", "b_t", "b_eid", "delay")


class SequenceRows(LazyRows):
    """The rows as (a, b) scan positions (b = -1: no b); a page's rows are built when read."""

    canonical_rows = True  # uids, rel types, ints and nulls

    def __init__(self, ctx: OpContext, e: EdgeArrays, a_pos: np.ndarray, b_pos: np.ndarray) -> None:
        super().__init__(np.arange(len(a_pos)))
        self._ctx, self._e, self._a, self._b = ctx, e, a_pos, b_pos

    def _build(self, idx: np.ndarray) -> list[dict[str, Any]]:
        e, uids = self._e, uid_array(self._ctx)
        ap, pb = self._a[idx], self._b[idx]
        has = pb >= 0
        pbc = np.where(has, pb, ap)  # any valid position; masked below
        ta, tb = e.vt_s[ap].astype(np.int64), e.vt_s[pbc].astype(np.int64)
        cols = {
            "src": uids[e.src[ap]].tolist(),
            "dst": uids[e.dst[ap]].tolist(),
            "rel_type": e.col_at("rel_type", ap).to_pylist(),
            "t": ta.tolist(),
            "eid": e.key_at("eid", ap).tolist(),
            "b_src": uids[e.src[pbc]].tolist(),
            "b_dst": uids[e.dst[pbc]].tolist(),
            "b_t": tb.tolist(),
            "b_eid": e.key_at("eid", pbc).tolist(),
            "delay": np.abs(tb - ta).tolist(),
        }
        if not has.all():  # an a without a b: its b fields are null
            keep = has.tolist()
            for k in _B_FIELDS:
                cols[k] = [v if h else None for v, h in zip(cols[k], keep, strict=True)]
        return rows_of(cols)


@operator(
    name="next_event",
    family="sequences",
    args=NextEventArgs,
    output=NextEventOut,
    cost=_cost,
    manual=(
        "For each event of selection `a`, the next event of selection `b` whose endpoints match it, and "
        "the delay. `a`, `b`: list_events' selections (window, src, dst, node, rel_types, where); `b` null"
        " = `a`. `match` (0..2 {a, b}, each src|dst): b's endpoint equals a's; a reply to a→b is [{a: dst,"
        " b: src}, {a: src, b: dst}], the recipient's next message [{a: dst, b: src}]. b is the first by "
        "(t, eid, vid) with b.t > a.t (direction previous: the last with b.t < a.t; strict false: >= / <=,"
        " never a itself); `within` µs bounds the delay; `unmatched` also lists a events without b; `all`"
        " (with within): every b within the bound, a row each (pairs: replies within a minute). `rows`"
        " by a's time; over all matched rows, not the page: delay_min, delay_max, delay_mean, delay_median"
        " and delay_quantile (the ceil(q·n)-th smallest for `quantile` q). Example: the 90th percentile "
        "reply delay."
    ),
    example={
        "args": {
            "a": {"rel_types": ["msg"]},
            "match": [{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}],
            "quantile": 0.9,
            "limit": 10,
        },
        "outputs": ["delay_quantile", "n_matched", "delay_median"],
        "note": "a→b at 10, b→a at 15 and 40: the reply to the first is at 15, delay 5",
    },
)
def next_event(ctx: OpContext, a: NextEventArgs) -> dict[str, Any]:
    e, ap, _ = select(ctx, a.a.selection(a.as_of_tt), "a.")
    same = a.b is None
    pb = ap if a.b is None else select(ctx, a.b.selection(a.as_of_tt), "b.")[1]
    if a.all:
        a_idx, b_pos, delay = _pairs(e, ap, pb, a, len(ctx.uids()), same)
        n_matched = len(np.unique(a_idx))
        if a.unmatched:  # each a without a b once, in its place
            lone = np.setdiff1d(np.arange(len(ap)), a_idx, assume_unique=False)
            a_idx = np.concatenate([a_idx, lone])
            b_pos = np.concatenate([b_pos, np.full(len(lone), -1, np.int64)])
            order = np.argsort(a_idx, kind="stable")
            a_idx, b_pos = a_idx[order], b_pos[order]
        rows_a, rows_b = ap[a_idx], b_pos
    else:
        m = _match(e, ap, pb, a, len(ctx.uids()), same)
        rows_a, rows_b = (ap, m.b) if a.unmatched else (ap[m.hit], m.b_hit)
        n_matched, delay = len(m.delay), m.delay
    if a.order == "desc":
        rows_a, rows_b = rows_a[::-1], rows_b[::-1]
    rows = SequenceRows(ctx, e, rows_a, rows_b)
    return {
        "rows": rows,
        "rows_total": len(rows),
        "n_a": len(ap),
        "n_matched": n_matched,
        **summaries(delay, a.quantile),
    }
