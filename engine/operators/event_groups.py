"""Grouping and per-group aggregates of ``aggregate_events``, vectorized over the selected events.

Each group key becomes one or two int64 *component* codes per (expanded) event whose order is the key's
value order (uids by code point through ``uid_tables``, calendar strings through monotone codes, property
values through the documented kind order), so sorting groups by the combined code sorts them by key
ascending. A ``node`` key expands each event into one row per distinct endpoint. Aggregates that need
the events of a group in time order sort once by ``(group, event)``: events are selected in scan order
``(vt_s, eid, vid)``, so a stable sort by group keeps each group's events sorted by ``(t, eid)``.

Numbers are exact: int sums are taken as two int64 halves (no overflow at 10^7 events of 2^62 µs),
anything with a float goes through ``Fraction``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from tgms.engine.canonical import canon_float
from tgms.engine.operators.event_fields import (
    CALENDAR,
    Col,
    Columns,
    calendar_code,
    calendar_text,
    rel_codes,
    uid_tables,
)
from tgms.engine.operators.event_values import unique_inverse

#: combined group codes up to this many values are counted densely (bincount), beyond it sorted
_DENSE_MAX = 1 << 22
#: combined int64 keys (mixed-radix group codes, group x value pairs) must stay below this; past it the
#: kernels sort several arrays lexicographically instead (the tests lower both to run every path)
_COMBINE_MAX = 2.0**62
_LO_BITS = 31


def key_fields(key: str) -> tuple[str, ...]:
    """The row fields a group key fills."""
    if key == "pair":
        return ("src", "dst")
    if key == "unordered_pair":
        return ("a", "b")
    return (key.replace(".", "_"),)


def number_out(q: Fraction) -> int | float:
    return q.numerator if q.denominator == 1 else canon_float(float(q))


def exact(x: int | float) -> Fraction:
    return Fraction(x) if isinstance(x, int) else Fraction(repr(x))


Decoder = Callable[[np.ndarray], list[Any]]


@dataclass
class Grouping:
    n_groups: int
    gid: np.ndarray  # group of each expanded row (groups numbered in key order)
    ev: np.ndarray  # selection index of each expanded row (ascending)
    other: np.ndarray | None  # the other endpoint nid of each expanded row (node key only)
    keys: list[tuple[str, list[Any]]]  # (row field, value per group)
    order: np.ndarray | None = None  # expanded rows sorted by (gid, ev), built on demand

    def sorted_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(order, gid in that order, start of each group in it)."""
        if self.order is None:
            # a stable sort keeps each group's rows in event order; NumPy radix-sorts 16-bit keys
            small = self.n_groups <= 1 << 16
            self.order = np.argsort(self.gid.astype(np.uint16) if small else self.gid, kind="stable")
        g = self.gid[self.order]
        return self.order, g, np.searchsorted(g, np.arange(self.n_groups))


def _components(
    key: str, cols: Columns, ev: np.ndarray, node: np.ndarray | None, bucket: tuple[int, int] | None
) -> list[tuple[str, np.ndarray, Decoder]]:
    ctx, e, pos = cols.ctx, cols.e, cols.pos
    if key in ("src", "dst", "node", "pair", "unordered_pair"):
        _, rank, by_rank = uid_tables(ctx)

        def dec(c: np.ndarray) -> list[Any]:
            return by_rank[c].tolist()

        s, d = rank[e.src[pos][ev]], rank[e.dst[pos][ev]]
        if key == "node":
            assert node is not None
            return [("node", rank[node], dec)]
        if key == "src":
            return [("src", s, dec)]
        if key == "dst":
            return [("dst", d, dec)]
        if key == "pair":
            return [("src", s, dec), ("dst", d, dec)]
        return [("a", np.minimum(s, d), dec), ("b", np.maximum(s, d), dec)]
    if key == "rel_type":
        codes, names = rel_codes(ctx, e, cols.as_of_tt)
        arr = np.array(names, dtype=object)
        return [("rel_type", codes[pos][ev], lambda c: arr[c].tolist())]
    if key == "t":  # the exact time: codes in time order
        times, code = np.unique(e.vt_s[pos][ev], return_inverse=True)
        return [("t", code.astype(np.int64), lambda c: times[c].tolist())]
    if key == "bucket":  # the span's number: |t|, |origin| < 2^62, so t - origin fits int64
        assert bucket is not None  # the arguments' check
        width, origin = bucket
        number = (e.vt_s[pos][ev].astype(np.int64) - origin) // width
        low = int(number.min()) if len(number) else 0
        if len(number) and int(number.max()) - low <= _DENSE_MAX:  # few spans: the offset is the code
            return [("bucket", number - low, lambda c: (c + low).tolist())]
        numbers, code = np.unique(number, return_inverse=True)
        return [("bucket", code.astype(np.int64), lambda c: numbers[c].tolist())]
    if key in CALENDAR:
        # code + 1, with 0 for a null key (an event past year 9999): nulls sort first
        code, null = calendar_code(e.vt_s[pos][ev].astype(np.int64), key)
        code = code + 1 if null is None else np.where(null, 0, code + 1)
        text = key in ("month", "day", "week")

        def dec_cal(c: np.ndarray) -> list[Any]:
            live = np.flatnonzero(c > 0)
            vals = (calendar_text(key, c[live] - 1) if text else c[live] - 1).tolist()
            out: list[Any] = [None] * len(c)
            for i, v in zip(live.tolist(), vals, strict=True):
                out[i] = v
            return out

        return [(key, code, dec_cal)]
    # prop.<name>: a coded column, codes already in value order
    col = cols.get(key)
    uniq = col.uniq or []
    return [(key.replace(".", "_"), col.values[ev], lambda c: [uniq[i] for i in c.tolist()])]


def group(cols: Columns, group_by: list[str], bucket: tuple[int, int] | None = None) -> Grouping:
    """Groups of the selected events by ``group_by`` (``[]``: one group, even over no events); ``bucket``:
    the (width, origin) of the ``bucket`` key."""
    e, pos = cols.e, cols.pos
    n = len(pos)
    ev = np.arange(n, dtype=np.int64)
    node = other = None
    if "node" in group_by:
        src, dst = e.src[pos].astype(np.int64), e.dst[pos].astype(np.int64)
        two = src != dst  # a self-loop is one row
        per = 1 + two.astype(np.int64)
        first = np.cumsum(per) - per  # each event's rows are adjacent, in event order
        node, other = np.empty(int(per.sum()), dtype=np.int64), np.empty(int(per.sum()), dtype=np.int64)
        node[first], other[first] = src, dst
        node[first[two] + 1], other[first[two] + 1] = dst[two], src[two]
        ev = np.repeat(ev, per)
    if not group_by:
        return Grouping(1, np.zeros(n, dtype=np.int64), ev, None, [])
    comps = [c for k in group_by for c in _components(k, cols, ev, node, bucket)]
    m = len(ev)
    if m == 0:
        return Grouping(0, np.zeros(0, dtype=np.int64), ev, other, [(f, []) for f, _, _ in comps])
    codes = [c for _, c, _ in comps]
    sizes = [int(c.max()) + 1 for c in codes]
    uniqs: list[np.ndarray | None]  # each component's distinct values, when re-densified
    if float(np.prod([float(s) for s in sizes])) >= _COMBINE_MAX:  # re-densify each component first
        dense = [unique_inverse(c) for c in codes]
        uniqs = [u for u, _ in dense]
        codes = [inv for _, inv in dense]
        sizes = [len(u) for u, _ in dense]
    else:
        uniqs = [None] * len(codes)
    if float(np.prod([float(s) for s in sizes])) < _COMBINE_MAX:
        combined = np.zeros(m, dtype=np.int64)
        for c, s in zip(codes, sizes, strict=True):
            combined = combined * s + c
        total = int(np.prod(sizes))
        if total <= max(4 * m, _DENSE_MAX) and _DENSE_MAX:
            present = np.bincount(combined, minlength=total) > 0
            gid_of = np.cumsum(present) - 1
            gid, group_codes = gid_of[combined], np.flatnonzero(present)
        else:
            group_codes, gid = unique_inverse(combined)
        per_comp = []
        rest = group_codes
        for s in reversed(sizes):
            per_comp.append(rest % s)
            rest = rest // s
        per_comp.reverse()
    else:  # three huge keys: sort rows lexicographically
        o = np.lexsort(codes[::-1])
        stacked = np.stack([c[o] for c in codes])
        change = np.ones(m, dtype=bool)
        change[1:] = (stacked[:, 1:] != stacked[:, :-1]).any(axis=0)
        gid = np.empty(m, dtype=np.int64)
        gid[o] = np.cumsum(change) - 1
        per_comp = [c[o][change] for c in codes]
    keys = []
    for (field, _, dec), u, gc in zip(comps, uniqs, per_comp, strict=True):
        keys.append((field, dec(u[gc] if u is not None else gc)))
    return Grouping(len(per_comp[0]), gid.astype(np.int64), ev, other, keys)


# -- aggregates -----------------------------------------------------------------------------------------


def _t(cols: Columns, gr: Grouping) -> np.ndarray:
    return cols.e.vt_s[cols.pos][gr.ev].astype(np.int64)


def agg_count(gr: Grouping) -> list[Any]:
    return np.bincount(gr.gid, minlength=gr.n_groups).tolist()


def agg_first_last(cols: Columns, gr: Grouping, last: bool) -> list[Any]:
    order, g, starts = gr.sorted_rows()
    if not gr.n_groups or not len(g):
        return [None] * gr.n_groups
    t = _t(cols, gr)[order]
    ends = np.append(starts[1:], len(g))
    return t[ends - 1].tolist() if last else t[starts].tolist()


def agg_value_at(cols: Columns, gr: Grouping, field: str, last: bool) -> list[Any]:
    """``field``'s value at each group's first (``last``: last) event in (vt_s, eid, vid) order: a group's
    rows are in event order after the stable sort, so its first row is its first event."""
    order, g, starts = gr.sorted_rows()
    if not gr.n_groups or not len(g):
        return [None] * gr.n_groups
    ends = np.append(starts[1:], len(g))
    rows = order[ends - 1] if last else order[starts]
    return cols.get(field).take(gr.ev[rows]).objects()


def agg_gaps(cols: Columns, gr: Grouping, fn: str, param: int | None) -> list[Any]:
    """min_gap / max_gap / mean_gap / median_gap / sessions / max_session(_events) / max_in_window /
    count_within_first over each group's sorted event times."""
    order, g, starts = gr.sorted_rows()
    G = gr.n_groups
    if not G or not len(g):
        return [None if fn.endswith(("gap", "session")) else 0] * G
    t = _t(cols, gr)[order]
    ends = np.append(starts[1:], len(g))
    cnt = ends - starts
    if fn == "count_within_first":
        assert param is not None
        near = (t - t[starts][g] < param).astype(np.int64)  # the first event itself included: less one
        return (np.add.reduceat(near, starts) - 1).tolist()
    if fn == "max_in_window":
        assert param is not None
        m = len(t)
        rel = t - t[starts][g]  # time since the group's first event
        stride = int(rel.max()) + param + 1
        if float(G) * stride < _COMBINE_MAX:
            # rows sorted by (g, t) are sorted by g * stride + rel: count the rows before each key + width
            key = g * stride + rel
            within = np.searchsorted(key, key + param, "left") - np.arange(m)
            return np.maximum.reduceat(within, starts).tolist()
        # rank each query (g, t + width) among the rows (g, t); queries sort before equal rows
        kg = np.concatenate([g, g])
        kt = np.concatenate([t + param, t])
        kind = np.concatenate([np.zeros(m, dtype=np.int8), np.ones(m, dtype=np.int8)])
        merged = np.lexsort((kind, kt, kg))
        where = np.empty(2 * m, dtype=np.int64)
        where[merged] = np.arange(2 * m)
        i = np.arange(m)
        within = (where[:m] - i) - i  # rows before the query, minus rows before row i
        return np.maximum.reduceat(within, starts).tolist()
    if fn == "mean_gap":
        first, last = t[starts], t[ends - 1]
        return [None if c < 2 else number_out(Fraction(int(b - a), int(c - 1)))
                for a, b, c in zip(first.tolist(), last.tolist(), cnt.tolist(), strict=True)]  # fmt: skip
    d = np.diff(t)
    internal = np.ones(len(d), dtype=bool)
    internal[starts[1:] - 1] = False  # the gap from one group's last event to the next group's first
    if fn == "sessions":
        assert param is not None
        split = np.concatenate([(d > param) & internal, [False]]).astype(np.int64)
        return (np.add.reduceat(split, starts) + 1).tolist()
    if fn in ("max_session", "max_session_events"):
        assert param is not None
        # a session starts at a group's first event or after a gap over `param`; its duration is its last
        # time minus its first, the longest per group (0: every session a single event)
        begins = np.zeros(len(t), dtype=bool)
        begins[starts] = True
        begins[1:] |= d > param
        first = np.maximum.accumulate(np.where(begins, np.arange(len(t)), 0))
        if fn == "max_session_events":  # the events in the largest session: position in it, plus one
            return np.maximum.reduceat(np.arange(len(t)) - first + 1, starts).tolist()
        return np.maximum.reduceat(t - t[first], starts).tolist()
    multi = cnt >= 2
    out: list[Any] = [None] * G
    if not multi.any():
        return out
    if fn == "median_gap":  # the gaps of each group, in group order: only each group's gaps need sorting
        gs, ds = _by_group(gr, g[:-1][internal], d[internal], False, ordered=True, grouped=True)
        return _int_medians(gs, ds, *_runs(gs), out)
    if fn == "min_gap":
        d = np.where(internal, d, np.iinfo(np.int64).max)
        red = np.minimum.reduceat(d, starts[multi])
    else:
        d = np.where(internal, d, -1)
        red = np.maximum.reduceat(d, starts[multi])
    for gi, v in zip(np.flatnonzero(multi).tolist(), red.tolist(), strict=True):
        out[gi] = v
    return out


def _field_codes(cols: Columns, gr: Grouping, field: str) -> tuple[np.ndarray, np.ndarray]:
    """(int64 code per expanded row, present mask) of a field for count_distinct (equal code = equal
    value)."""
    e, pos = cols.e, cols.pos
    if field == "other":
        assert gr.other is not None
        return gr.other, np.ones(len(gr.ev), dtype=bool)
    if field in ("pair", "unordered_pair"):
        s, d = e.src[pos][gr.ev].astype(np.int64), e.dst[pos][gr.ev].astype(np.int64)
        if field == "unordered_pair":
            s, d = np.minimum(s, d), np.maximum(s, d)
        return s * (1 << 31) + d, np.ones(len(gr.ev), dtype=bool)
    if field in ("src", "dst"):
        return getattr(e, field)[pos][gr.ev].astype(np.int64), np.ones(len(gr.ev), dtype=bool)
    if field == "rel_type":
        return rel_codes(cols.ctx, e, cols.as_of_tt)[0][pos][gr.ev], np.ones(len(gr.ev), dtype=bool)
    col = cols.get(field)
    if col.kind == "int":
        present = np.ones(len(gr.ev), dtype=bool) if col.null is None else ~col.null[gr.ev]
        return col.values[gr.ev], present
    if col.kind == "str":
        _, inv = unique_inverse(col.values[gr.ev])
        return inv, np.ones(len(gr.ev), dtype=bool)
    codes = col.values[gr.ev]
    return codes, col.per_code(lambda x: x is not None)[gr.ev]


def agg_count_distinct(cols: Columns, gr: Grouping, field: str) -> list[Any]:
    code, present = _field_codes(cols, gr, field)
    g = gr.gid[present]
    code = code[present]
    if not len(g):
        return [0] * gr.n_groups
    span = int(code.max()) - int(code.min()) + 1
    if float(gr.n_groups) * span < _COMBINE_MAX:  # one int64 sort of (group, value) pairs
        pairs = np.sort(g * span + (code - int(code.min())))
        first = np.concatenate([[True], pairs[1:] != pairs[:-1]])
        return np.bincount(pairs[first] // span, minlength=gr.n_groups).tolist()
    o = np.lexsort((code, g))
    g, code = g[o], code[o]
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (code[1:] != code[:-1])
    return np.bincount(g[new], minlength=gr.n_groups).tolist()


def _numeric(cols: Columns, gr: Grouping, field: str) -> tuple[np.ndarray, np.ndarray, int, bool] | None:
    """(group of each numeric value, the values as int64 multiples of 1/D, D, whether every expanded
    row has one), or None when the values do not scale into int64 exactly (then the caller goes through
    Fractions). Non-numbers and nulls are skipped."""
    col: Col = cols.get(field)
    if col.kind == "int":
        if col.null is None:
            return gr.gid, col.values[gr.ev], 1, True
        keep = ~col.null[gr.ev]
        return gr.gid[keep], col.values[gr.ev][keep], 1, bool(keep.all())
    uniq = col.uniq or []
    is_num = [isinstance(u, (int, float)) and not isinstance(u, bool) for u in uniq]
    exacts = [exact(u) if k else Fraction(0) for u, k in zip(uniq, is_num, strict=True)]
    denom = math.lcm(*(q.denominator for q in exacts)) if exacts else 1
    scaled = [q * denom for q in exacts]
    if any(abs(q) >= 2**62 for q in scaled):
        return None
    per_code = np.array([int(q) for q in scaled], dtype=np.int64)
    codes = col.values[gr.ev]
    keep = np.array(is_num, dtype=bool)[codes] if uniq else np.zeros(len(codes), dtype=bool)
    return gr.gid[keep], per_code[codes[keep]], denom, bool(keep.all())


def _fraction_values(cols: Columns, gr: Grouping, field: str) -> tuple[np.ndarray, list[Fraction]]:
    col = cols.get(field)
    vals = col.objects()
    keep = [isinstance(x, (int, float)) and not isinstance(x, bool) for x in (vals[i] for i in gr.ev)]
    g = gr.gid[np.array(keep, dtype=bool)] if len(keep) else gr.gid[:0]
    return g, [exact(vals[i]) for i, k in zip(gr.ev.tolist(), keep, strict=True) if k]


def agg_numeric(cols: Columns, gr: Grouping, fn: str, field: str) -> list[Any]:
    G = gr.n_groups
    out: list[Any] = [0 if fn == "sum" else None] * G
    scaled = _numeric(cols, gr, field)
    if scaled is None:
        return _numeric_fractions(cols, gr, fn, field, out)
    g, v, denom, whole = scaled
    if not len(g):
        return out
    g, v = _by_group(gr, g, v, whole, ordered=fn in ("median", "min", "max"))
    starts, ends = _runs(g)
    cnt = (ends - starts).tolist()
    if fn in ("sum", "mean"):
        # two int64 halves: each half-sum stays far below 2^63 for any realistic group size
        hi = np.add.reduceat(v >> _LO_BITS, starts).tolist()
        lo = np.add.reduceat(v & ((1 << _LO_BITS) - 1), starts).tolist()
        sums = [(h << _LO_BITS) + x for h, x in zip(hi, lo, strict=True)]
        res = [Fraction(s, denom * (c if fn == "mean" else 1)) for s, c in zip(sums, cnt, strict=True)]
    elif fn == "min":
        res = [Fraction(x, denom) for x in v[starts].tolist()]
    elif fn == "max":
        res = [Fraction(x, denom) for x in v[ends - 1].tolist()]
    else:
        if denom == 1:
            return _int_medians(g, v, starts, ends, out)
        lo_i, hi_i = starts + (ends - starts - 1) // 2, starts + (ends - starts) // 2
        res = [Fraction(a + b, 2 * denom) for a, b in zip(v[lo_i].tolist(), v[hi_i].tolist(), strict=True)]
    for gi, r in zip(g[starts].tolist(), res, strict=True):
        out[gi] = number_out(r)
    return out


def _runs(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start and end (exclusive) of each run of equal group ids in ``g`` (grouped, non-empty)."""
    starts = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))
    return starts, np.append(starts[1:], len(g))


def _int_medians(
    g: np.ndarray, v: np.ndarray, starts: np.ndarray, ends: np.ndarray, out: list[Any]
) -> list[Any]:
    """Each group's median of the ints ``v`` (grouped by ``g``, ascending within each run ``starts..ends``):
    the middle one, or the middle two's sum halved, summed as Python ints (an int prop may be near 2^63,
    where an int64 sum would wrap); ``x / 2`` is the correctly rounded float of the exact half, as
    ``float(Fraction(x, 2))`` is."""
    lo_i, hi_i = starts + (ends - starts - 1) // 2, starts + (ends - starts) // 2
    halves = [a + b for a, b in zip(v[lo_i].tolist(), v[hi_i].tolist(), strict=True)]
    mid = [x >> 1 if not x & 1 else canon_float(x / 2) for x in halves]
    for gi, m in zip(g[starts].tolist(), mid, strict=True):
        out[gi] = m
    return out


def _by_group(
    gr: Grouping, g: np.ndarray, v: np.ndarray, whole: bool, *, ordered: bool, grouped: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``g`` and ``v`` with their rows grouped (groups ascending); with ``ordered`` each group's values
    ascending too (median, min, max), else in event order.

    Values already ascending in event order (``t``: events are selected in time order) need only the
    stable sort by group, which ``Grouping`` radix-sorts and shares with the other aggregates when every
    row has a value; otherwise one int64 sort of combined (group, value) keys where they fit, else a
    two-key lexsort (the slowest: ~1.5x the combined sort at 10^6). ``grouped``: ``g`` ascends already
    (each group's rows together), so the combined keys are runs a stable sort merges (~3x faster)."""
    if not ordered or bool(np.all(v[1:] >= v[:-1])):
        if grouped:
            return g, v
        if whole:
            o, gs, _ = gr.sorted_rows()
            return gs, v[o]
        o = np.argsort(g.astype(np.uint16) if gr.n_groups <= 1 << 16 else g, kind="stable")
        return g[o], v[o]
    lo = int(v.min())
    span = int(v.max()) - lo + 1
    if float(gr.n_groups) * span < _COMBINE_MAX:
        pairs = g * span + (v - lo)
        pairs.sort(kind="stable" if grouped else "quicksort")
        gs = pairs // span
        return gs, pairs - gs * span + lo
    o = np.lexsort((v, g))
    return g[o], v[o]


def _numeric_fractions(cols: Columns, gr: Grouping, fn: str, field: str, out: list[Any]) -> list[Any]:
    """The exact per-group statistics through Fractions (values that do not scale into int64)."""
    g, vals = _fraction_values(cols, gr, field)
    by: dict[int, list[Fraction]] = {}
    for gi, x in zip(g.tolist(), vals, strict=True):
        by.setdefault(gi, []).append(x)
    for gi, xs in by.items():
        if fn == "sum":
            out[gi] = number_out(sum(xs, Fraction(0)))
        elif fn == "mean":
            out[gi] = number_out(sum(xs, Fraction(0)) / len(xs))
        elif fn == "min":
            out[gi] = number_out(min(xs))
        elif fn == "max":
            out[gi] = number_out(max(xs))
        else:
            s = sorted(xs)
            k = len(s)
            out[gi] = number_out((s[(k - 1) // 2] + s[k // 2]) / 2)
    return out
