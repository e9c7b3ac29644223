"""Oracle of ``next_event``: for every ``a`` event, a plain scan of every ``b`` event.

The selections are list_events' oracle selections (``selected_events``: a loop over the believed versions);
the b of an a event is found by testing every candidate (another version, matching endpoints, on the right
side of a's time, within the bound) and keeping the least (next) or greatest (previous) by
``(t, eid, vid)``. Statistics are computed by hand from the sorted delays with ``Fraction``. The fast path
instead sorts match codes and searches them all at once (``engine/operators/sequences.py``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.errors import InvalidArgError, SchemaError
from tgms.engine.operators.oracle.events import SELECTION, selected_events
from tgms.engine.operators.oracle.store import (
    OracleStore,
    bool_arg,
    check_keys,
    choice_arg,
    int_arg,
    is_number,
)

SIDES = ("src", "dst")
OPTIONAL = ("b", "match", "direction", "strict", "within", "unmatched", "all", "quantile", "order")


def _spec(args: dict[str, Any], name: str) -> dict[str, Any] | None:
    raw = args.get(name)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SchemaError(f"{name} must be an event selection object", field=name)
    unknown = sorted(set(raw) - set(SELECTION))
    if unknown:
        raise SchemaError(f"{name}: unknown key(s) {unknown}", field=name, unknown=unknown)
    return raw


def _matches(raw: Any) -> list[tuple[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SchemaError("match must be a list", field="match")
    for m in raw:  # shapes first: a shape error anywhere is E_SCHEMA
        if not isinstance(m, dict) or set(m) - {"a", "b"}:
            raise SchemaError("a match is an object {a, b}", field="match")
        if any(not isinstance(m.get(k), str) for k in ("a", "b")):
            raise SchemaError("a match's a and b are strings", field="match")
    out: list[tuple[str, str]] = []
    for i, m in enumerate(raw):
        if m["a"] not in SIDES or m["b"] not in SIDES:
            raise InvalidArgError("match sides are src or dst", field=f"match.{i}")
        if (m["a"], m["b"]) in out:
            raise InvalidArgError("match repeats an entry", field=f"match.{i}")
        out.append((m["a"], m["b"]))
    if len(out) > 2:
        raise InvalidArgError("match holds at most 2 entries", field="match")
    return out


def _quantile(args: dict[str, Any]) -> float | None:
    q = args.get("quantile")
    if q is None:
        return None
    if not is_number(q):
        raise SchemaError("quantile must be a number", field="quantile")
    if not 0 < q < 1:
        raise InvalidArgError("quantile must lie in (0, 1)", field="quantile")
    return q


def _stats(delays: list[int], q: float | None) -> dict[str, Any]:
    if not delays:
        return dict.fromkeys(("delay_min", "delay_max", "delay_mean", "delay_median", "delay_quantile"))
    ds = sorted(delays)
    n = len(ds)
    mean = Fraction(sum(ds), n)
    median = Fraction(ds[(n - 1) // 2] + ds[n // 2], 2)
    rank = None if q is None else math.ceil(Fraction(str(q)) * n)  # the q·n-th smallest, rounded up
    return {
        "delay_min": ds[0],
        "delay_max": ds[-1],
        "delay_mean": mean.numerator if mean.denominator == 1 else float(mean),
        "delay_median": median.numerator if median.denominator == 1 else float(median),
        "delay_quantile": None if rank is None else ds[rank - 1],
    }


def oracle_next_event(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["a"], OPTIONAL, "next_event")
    a_spec, b_spec = _spec(args, "a"), _spec(args, "b")
    assert a_spec is not None  # check_keys refuses a missing or null a
    matches = _matches(args.get("match"))
    forward = choice_arg(args, "direction", ("next", "previous"), "next") == "next"
    strict = bool_arg(args, "strict", True)
    within = int_arg(args, "within", None, 0, 2**62)
    unmatched = bool_arg(args, "unmatched", False)
    every = bool_arg(args, "all", False)
    q = _quantile(args)
    order = choice_arg(args, "order", ("asc", "desc"), "asc")
    if every and within is None:
        raise InvalidArgError("all needs within", field="all")
    as_of = {"as_of_tt": args.get("as_of_tt")}
    events_a = selected_events(store, {**a_spec, **as_of})
    events_b = events_a if b_spec is None else selected_events(store, {**b_spec, **as_of})

    rows: list[dict[str, Any]] = []
    delays: list[int] = []
    n_matched = 0
    for ev in events_a:
        best: tuple[tuple[int, int, int], dict[str, Any]] | None = None
        every_b: list[tuple[tuple[int, int, int], dict[str, Any]]] = []
        for c in events_b:
            if c["vid"] == ev["vid"]:
                continue  # never a's own version
            if any(c[side_b] != ev[side_a] for side_a, side_b in matches):
                continue
            gap = c["vt_s"] - ev["vt_s"]
            if forward and not (gap > 0 or (gap == 0 and not strict)):
                continue
            if not forward and not (gap < 0 or (gap == 0 and not strict)):
                continue
            if within is not None and abs(gap) > within:
                continue
            key = (c["vt_s"], c["eid"], c["vid"])
            every_b.append((key, c))
            if best is None or (key < best[0] if forward else key > best[0]):
                best = (key, c)
        row = {k: ev[k] for k in ("src", "dst", "rel_type", "eid")} | {"t": ev["vt_s"]}
        if best is None:
            if unmatched:
                rows.append(row | dict.fromkeys(("b_src", "b_dst", "b_t", "b_eid", "delay")))
            continue
        n_matched += 1
        # all: every candidate, nearest first (next: ascending (t, eid, vid); previous: descending)
        chosen = sorted(every_b, key=lambda kc: kc[0], reverse=not forward) if every else [best]
        for _, b in chosen:
            delay = abs(b["vt_s"] - ev["vt_s"])
            delays.append(delay)
            rows.append(row | {"b_src": b["src"], "b_dst": b["dst"], "b_t": b["vt_s"], "b_eid": b["eid"]})
            rows[-1]["delay"] = delay
    if order == "desc":
        rows.reverse()
    out = {"rows": rows, "rows_total": len(rows), "n_a": len(events_a), "n_matched": n_matched}
    return canonicalize(out | _stats(delays, q))
