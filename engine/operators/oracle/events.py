"""Oracles of ``list_events`` and ``aggregate_events``: plain Python over the believed version dicts.

Every event is a dict; every field is read by :func:`field_value` (calendar keys through ``datetime``);
groups are dicts of event lists; every statistic is computed by hand, exactly (``Fraction``), from the
group's events sorted by ``(t, eid)``. Semantics: ``docs/operators.md`` §15–§16.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.errors import InvalidArgError, SchemaError
from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    check_keys,
    edge_key,
    edge_row,
    int_arg,
    is_int,
    is_number,
    require_known,
    str_list_arg,
    window_arg,
)

CAL = ("year", "month", "day", "week", "hour", "dow", "month_of_year")
FIELDS = ("src", "dst", "rel_type", "eid", "t", "vt_e", *CAL)
NUMERIC = ("eid", "t", "vt_e", "year", "hour", "dow", "month_of_year")
OPS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "exists", "missing")
KEYS = ("src", "dst", "node", "pair", "unordered_pair", "rel_type", "t", "bucket", *CAL)
FNS = ("count", "count_distinct", "first_t", "last_t", "first_value", "last_value", "sum", "mean", "min",
       "max", "median", "min_gap", "max_gap", "mean_gap", "median_gap", "max_in_window", "sessions",
       "count_within_first", "max_session", "max_session_events")  # fmt: skip
FIELD_FNS = ("count_distinct", "first_value", "last_value", "sum", "mean", "min", "max", "median")
SELECTION = ("window", "src", "dst", "node", "rel_types", "where")
EPOCH = dt.datetime(1970, 1, 1)
YEAR_10000_US = (dt.datetime(9999, 12, 31) - EPOCH) // dt.timedelta(microseconds=1) + 86_400_000_000


def _bad(msg: str, **kw: Any) -> InvalidArgError:
    return InvalidArgError(msg, **kw)


# -- values ---------------------------------------------------------------------------------------------


def calendar(t: int, key: str) -> Any:
    if t >= YEAR_10000_US:
        return None
    d = EPOCH + dt.timedelta(microseconds=t)
    iso = d.isocalendar()
    return {
        "year": d.year,
        "month": f"{d.year:04d}-{d.month:02d}",
        "day": d.strftime("%Y-%m-%d") if d.year >= 1000 else f"{d.year:04d}-{d.month:02d}-{d.day:02d}",
        "week": f"{iso[0]:04d}-W{iso[1]:02d}",
        "hour": d.hour,
        "dow": iso[2],
        "month_of_year": d.month,
    }[key]


def field_value(ev: dict[str, Any], name: str) -> Any:
    if name in ("t", "vt_s"):  # vt_s: another name of t
        return ev["vt_s"]
    if name in ("src", "dst", "rel_type", "eid", "vt_e"):
        return ev[name]
    if name in CAL:
        return calendar(ev["vt_s"], name)
    return ev["props"].get(name[5:])


def _kind(x: Any) -> str:
    if x is None:
        return "null"
    if x is True or x is False:
        return "bool"
    if isinstance(x, (int, float)):
        return "number"
    if isinstance(x, str):
        return "str"
    return "other"


def holds(x: Any, op: str, v: Any) -> bool:
    if op == "exists":
        return x is not None
    if op == "missing":
        return x is None
    if op == "in":
        return any(holds(x, "eq", w) for w in v)
    if op == "not_in":
        return x is not None and not any(holds(x, "eq", w) for w in v)
    if _kind(x) != _kind(v) or _kind(x) in ("null", "other"):
        return False
    if op == "eq":
        return x == v
    if op == "ne":
        return x != v
    if _kind(x) == "bool":
        return False
    if op == "lt":
        return x < v
    if op == "le":
        return x <= v
    if op == "gt":
        return x > v
    return x >= v


def _num(x: Any) -> Fraction:
    return Fraction(x) if isinstance(x, int) else Fraction(str(x))


def _out(q: Fraction) -> Any:
    return q.numerator if q.denominator == 1 else float(q)  # canonicalize rounds to 9 decimals


def _order_key(x: Any) -> tuple[Any, ...]:
    k = _kind(x)
    if k == "null":
        return (0,)
    if k == "bool":
        return (1, 1 if x else 0)
    if k == "number":
        return (2, _num(x))
    if k == "str":
        return (3, x)
    return (4, json.dumps(x, sort_keys=True, separators=(",", ":")))


# -- arguments ------------------------------------------------------------------------------------------


def _is_scalar(v: Any) -> bool:
    if isinstance(v, float) and not math.isfinite(v):  # not a JSON number: a shape error
        return False
    return isinstance(v, (str, bool, int, float))


def _field(name: Any, where: str) -> str:
    if not isinstance(name, str):
        raise SchemaError(f"{where} must be a string", field=where)
    if name in FIELDS or name == "vt_s" or (name.startswith("prop.") and len(name) > 5):  # vt_s = t
        return name
    raise _bad(f"unknown event field {name!r}", field=where)


def _value_shape(v: Any, where: str) -> None:
    if v is None:
        return
    if isinstance(v, list):
        if not all(_is_scalar(x) for x in v):
            raise SchemaError(f"{where}: list values must be scalars", field=where)
        return
    if not _is_scalar(v):
        raise SchemaError(f"{where} must be a number, string or boolean", field=where)


def _op(p: dict[str, Any], where: str) -> str:
    op = p.get("op")
    if op is None:
        raise SchemaError(f"{where}.op missing", field=where)
    if not isinstance(op, str):
        raise SchemaError(f"{where}.op must be a string", field=where)
    if op not in OPS:
        raise _bad(f"{where}.op must be one of {list(OPS)}", field=where)
    return op


def _obj(p: Any, keys: set[str], required: set[str], where: str) -> dict[str, Any]:
    if not isinstance(p, dict):
        raise SchemaError(f"{where} must be an object", field=where)
    if set(p) - keys:
        raise SchemaError(f"{where}: unknown key(s) {sorted(set(p) - keys)}", field=where)
    for k in required:
        if p.get(k) is None:
            raise SchemaError(f"{where}.{k} missing", field=where)
    return p


def _list(x: Any, where: str, hi: int) -> list[Any]:
    if x is None:
        return []
    if not isinstance(x, list):
        raise SchemaError(f"{where} must be a list", field=where)
    if len(x) > hi:
        raise _bad(f"{where} holds at most {hi} entries", field=where)
    return x


def _predicates(raw: Any) -> list[tuple[str, str, Any, str | None]]:
    out = []
    for i, p in enumerate(_list(raw, "where", 32)):
        w = f"where[{i}]"
        p = _obj(p, {"field", "op", "value", "other"}, {"field", "op"}, w)
        if p.get("other") is not None and not isinstance(p["other"], str):
            raise SchemaError(f"{w}.other must be a string", field=w)
        _value_shape(p.get("value"), w)
        op = _op(p, w)
        field = _field(p["field"], w)
        value, other = p.get("value"), p.get("other")
        unary = op in ("exists", "missing")
        if unary and (value is not None or other is not None):
            raise _bad(f"{w}: {op} takes neither value nor other", field=w)
        if not unary and (value is None) == (other is None):
            raise _bad(f"{w}: needs exactly one of value, other", field=w)
        if other is not None:
            _field(other, w)
            if op in ("in", "not_in"):
                raise _bad(f"{w}: {op} takes a value list", field=w)
        if value is not None and (op in ("in", "not_in")) != isinstance(value, list):
            raise _bad(f"{w}: value shape does not fit {op}", field=w)
        out.append((field, op, value, other))
    return out


def selected_events(store: OracleStore, args: dict[str, Any]) -> list[dict[str, Any]]:
    """The believed events passing every filter, in (vt_s, eid, vid) order (args already checked)."""
    a = as_of_arg(args)
    t_a, t_b = (0, 2**62) if args.get("window") in (None, {}) else window_arg(args["window"])  # {}: none
    preds = _predicates(args.get("where"))
    # one uid or a list; [] selects nothing
    lists = {k: str_list_arg(args, k, allow_single=True) for k in ("src", "dst", "node")}
    rels = str_list_arg(args, "rel_types")
    if rels is not None and any(r == "" for r in rels):
        raise _bad("rel_types entries must be non-empty", field="rel_types")
    known = store.known_uids(a)
    for k, v in lists.items():
        if v is not None:
            require_known(v, known, k)
    out = []
    for ev in sorted(store.believed_edges(a), key=edge_key):
        if not t_a <= ev["vt_s"] < t_b:
            continue
        if lists["src"] is not None and ev["src"] not in lists["src"]:
            continue
        if lists["dst"] is not None and ev["dst"] not in lists["dst"]:
            continue
        if lists["node"] is not None and ev["src"] not in lists["node"] and ev["dst"] not in lists["node"]:
            continue
        if rels is not None and ev["rel_type"] not in rels:
            continue
        if _passes(ev, preds):
            out.append(ev)
    return out


def _passes(ev: dict[str, Any], preds: list[tuple[str, str, Any, str | None]]) -> bool:
    for field, op, value, other in preds:
        if not holds(field_value(ev, field), op, field_value(ev, other) if other is not None else value):
            return False
    return True


def edge_filter(raw: Any) -> Callable[[dict[str, Any]], bool]:
    """The graph operators' edge predicates (``where``, checked here): a test of one edge version."""
    preds = _predicates(raw)
    return lambda ev: _passes(ev, preds)


# -- list_events ----------------------------------------------------------------------------------------


def oracle_list_events(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, (), (*SELECTION, "order"), "list_events")
    order = "asc" if args.get("order") is None else args["order"]
    if not isinstance(order, str):
        raise SchemaError("order must be a string", field="order")
    if order not in ("asc", "desc"):
        raise _bad("order must be asc or desc", field="order")
    rows = [edge_row(ev) for ev in selected_events(store, args)]
    if order == "desc":
        rows.reverse()
    return canonicalize({"rows": rows, "rows_total": len(rows)})


# -- aggregate_events -----------------------------------------------------------------------------------


def _key_fields(k: str) -> list[str]:
    return {"pair": ["src", "dst"], "unordered_pair": ["a", "b"]}.get(k, [k.replace(".", "_")])


def _aggregates(raw: Any, group_by: list[str]) -> list[dict[str, Any]]:
    if raw is None:
        raw = [{"fn": "count"}]
    aggs = _list(raw, "aggregates", 16)
    if not aggs:
        raise _bad("aggregates needs at least one entry", field="aggregates")
    out = []
    for i, g in enumerate(aggs):
        w = f"aggregates[{i}]"
        g = _obj(g, {"fn", "field", "as", "width", "gap", "where"}, {"fn"}, w)
        for k in ("fn", "field", "as"):
            if g.get(k) is not None and not isinstance(g[k], str):
                raise SchemaError(f"{w}.{k} must be a string", field=w)
        for k in ("width", "gap"):
            if g.get(k) is not None and not is_int(g[k]):
                raise SchemaError(f"{w}.{k} must be an integer", field=w)
        fn, field, name = g["fn"], g.get("field"), g.get("as")
        width, gap = g.get("width"), g.get("gap")
        if fn not in FNS:
            raise _bad(f"{w}.fn must be one of {list(FNS)}", field=w)
        if width is not None and not 1 <= width <= 2**62:
            raise _bad(f"{w}.width out of range", field=w)
        if gap is not None and not 0 <= gap <= 2**62:
            raise _bad(f"{w}.gap out of range", field=w)
        if name is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
            raise _bad(f"{w}.as is not a name", field=w)
        if (field is not None) != (fn in FIELD_FNS):
            raise _bad(f"{w}: field does not fit {fn}", field=w)
        takes_width = fn in ("max_in_window", "count_within_first")
        if (width is not None) != takes_width or (gap is not None) != (
            fn in ("sessions", "max_session", "max_session_events")
        ):
            raise _bad(f"{w}: width/gap do not fit {fn}", field=w)
        if field is not None:
            if fn == "count_distinct" and field == "other":
                if "node" not in group_by:
                    raise _bad(f"{w}: other needs a node key", field=w)
            elif not (fn == "count_distinct" and field in ("pair", "unordered_pair")):
                _field(field, w)
                numeric = field in NUMERIC or field == "vt_s"  # vt_s: another name of t
                any_field = fn in ("count_distinct", "first_value", "last_value")
                if not any_field and not numeric and not field.startswith("prop."):
                    raise _bad(f"{w}: {fn} needs a numeric field", field=w)
        if name is None:
            name = fn if field is None else f"{fn}_{field}".replace(".", "_")
        # the aggregate's own filter: only a group's events that pass every predicate count for it
        preds = _predicates(g.get("where")) if g.get("where") is not None else []
        out.append({"fn": fn, "field": field, "name": name, "width": width, "gap": gap, "where": preds})
    return out


def _check_group_by(raw: Any) -> list[str]:
    keys = _list(raw, "group_by", 3)
    for k in keys:
        if not isinstance(k, str):
            raise SchemaError("group_by entries must be strings", field="group_by")
        if k not in KEYS and not (k.startswith("prop.") and len(k) > 5):
            raise _bad(f"unknown group key {k!r}", field="group_by")
    if len(set(keys)) != len(keys):
        raise _bad("group_by repeats a key", field="group_by")
    return keys


def _bucket_arg(args: dict[str, Any], group_by: list[str]) -> tuple[int, int] | None:
    """(width, origin) of the ``bucket`` key: the span ⌊(t − origin) / width⌋ an event lies in."""
    raw = args.get("bucket")
    if raw is None:
        if "bucket" in group_by:
            raise _bad("the group key bucket needs the argument bucket", field="bucket")
        return None
    b = _obj(raw, {"width", "origin"}, {"width"}, "bucket")
    width = int_arg(b, "width", 1, 1, 2**62)
    origin = int_arg(b, "origin", None, -(2**62), 2**62)
    if "bucket" not in group_by:
        raise _bad("bucket without the group key bucket", field="bucket")
    if origin is None:
        origin = window_arg(args["window"])[0] if args.get("window") is not None else 0
    return width, origin


def _group_keys(ev: dict[str, Any], k: str, bucket: tuple[int, int] | None) -> list[tuple[Any, ...]]:
    """The key values (one tuple per row field) an event contributes under key ``k`` (node: one per
    distinct endpoint)."""
    if k == "bucket":
        assert bucket is not None
        return [((field_value(ev, "t") - bucket[1]) // bucket[0],)]
    if k == "node":
        return [(u,) for u in sorted({ev["src"], ev["dst"]})]
    if k == "pair":
        return [(ev["src"], ev["dst"])]
    if k == "unordered_pair":
        return [tuple(sorted((ev["src"], ev["dst"])))]
    v = field_value(ev, k)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return [(v,)]


def _distinct_value(ev: dict[str, Any], field: str, node: str | None) -> Any:
    if field == "other":
        return ev["dst"] if ev["src"] == node else ev["src"]
    if field == "pair":
        return (ev["src"], ev["dst"])
    if field == "unordered_pair":
        return tuple(sorted((ev["src"], ev["dst"])))
    v = field_value(ev, field)
    return None if v is None else _order_key(v)  # 1 and 1.0 are one value; True and 1 are not


#: the aggregates of an empty group that are 0 (counts and sums); the rest are null
ZERO_WHEN_EMPTY = (
    "sum", "count_distinct", "sessions", "max_in_window", "count_within_first", "max_session_events",
)  # fmt: skip


def _agg(fn: str, g: dict[str, Any], evs: list[tuple[dict[str, Any], str | None]]) -> Any:
    evs = sorted(evs, key=lambda x: (x[0]["vt_s"], x[0]["eid"], x[0]["vid"]))
    ts = [e["vt_s"] for e, _ in evs]
    if fn == "count":
        return len(evs)
    if fn == "first_t":
        return ts[0]
    if fn == "last_t":
        return ts[-1]
    if fn in ("first_value", "last_value"):
        at = evs[0][0] if fn == "first_value" else evs[-1][0]
        return field_value(at, g["field"])
    gaps = [b - a for a, b in itertools.pairwise(ts)]
    if fn == "min_gap":
        return min(gaps) if gaps else None
    if fn == "max_gap":
        return max(gaps) if gaps else None
    if fn == "mean_gap":
        return _out(Fraction(sum(gaps), len(gaps))) if gaps else None
    if fn == "median_gap":  # the middle gap, or the mean of the middle two
        if not gaps:
            return None
        ordered, half = sorted(gaps), len(gaps) // 2
        return ordered[half] if len(gaps) % 2 else _out(Fraction(ordered[half - 1] + ordered[half], 2))
    if fn == "sessions":
        return 1 + sum(1 for d in gaps if d > g["gap"])
    if fn in ("max_session", "max_session_events"):  # the runs, each a list of times: a new run after a gap
        runs: list[list[int]] = []
        for i, t in enumerate(ts):
            if i == 0 or t - ts[i - 1] > g["gap"]:
                runs.append([])
            runs[-1].append(t)
        if fn == "max_session_events":
            return max(len(r) for r in runs)
        return max(r[-1] - r[0] for r in runs)
    if fn == "count_within_first":
        return sum(1 for u in ts if u < ts[0] + g["width"]) - 1
    if fn == "max_in_window":
        best = 0
        for t in ts:  # a best window can always start at an event
            best = max(best, sum(1 for u in ts if t <= u < t + g["width"]))
        return best
    if fn == "count_distinct":
        vals = {_distinct_value(e, g["field"], node) for e, node in evs}
        vals.discard(None)
        return len(vals)
    xs = []
    for e, _ in evs:
        v = field_value(e, g["field"])
        if is_number(v):
            xs.append(_num(v))
    if fn == "sum":
        return _out(sum(xs, Fraction(0)))
    if not xs:
        return None
    if fn == "mean":
        return _out(sum(xs, Fraction(0)) / len(xs))
    if fn == "min":
        return _out(min(xs))
    if fn == "max":
        return _out(max(xs))
    xs.sort()
    n = len(xs)
    return _out((xs[(n - 1) // 2] + xs[n // 2]) / 2)


def oracle_aggregate_events(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(
        args, (), (*SELECTION, "group_by", "bucket", "aggregates", "having", "order_by"), "aggregate_events"
    )
    group_by = _check_group_by(args.get("group_by"))
    aggs = _aggregates(args.get("aggregates"), group_by)
    bucket = _bucket_arg(args, group_by)
    having = []
    for i, h in enumerate(_list(args.get("having"), "having", 16)):
        w = f"having[{i}]"
        h = _obj(h, {"field", "op", "value"}, {"field", "op"}, w)
        if not isinstance(h["field"], str):
            raise SchemaError(f"{w}.field must be a string", field=w)
        _value_shape(h.get("value"), w)
        op = _op(h, w)
        unary = op in ("exists", "missing")
        if unary != (h.get("value") is None):
            raise _bad(f"{w}: value does not fit {op}", field=w)
        if h.get("value") is not None and (op in ("in", "not_in")) != isinstance(h["value"], list):
            raise _bad(f"{w}: value shape does not fit {op}", field=w)
        having.append((h["field"], op, h.get("value")))
    order_by = []
    for i, o in enumerate(_list(args.get("order_by"), "order_by", 8)):
        w = f"order_by[{i}]"
        o = _obj(o, {"field", "desc"}, {"field"}, w)
        if not isinstance(o["field"], str):
            raise SchemaError(f"{w}.field must be a string", field=w)
        desc = o.get("desc")
        if desc is not None and not isinstance(desc, bool):
            raise SchemaError(f"{w}.desc must be a boolean", field=w)
        order_by.append((o["field"], bool(desc)))
    names = [f for k in group_by for f in _key_fields(k)] + [g["name"] for g in aggs]
    if len(set(names)) != len(names):
        raise _bad("an output field name is used twice", field="aggregates")
    for f, *_ in having + order_by:
        if f not in names:
            raise _bad(f"{f!r} is not an output field", field="having")
    events = selected_events(store, args)

    groups: dict[tuple[Any, ...], list[tuple[dict[str, Any], str | None]]] = {}
    values: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    if not group_by:
        groups[()] = [(e, None) for e in events]
    for ev in events:
        if not group_by:
            break
        combos: list[tuple[tuple[Any, ...], str | None]] = [((), None)]
        for k in group_by:
            combos = [
                (c + kv, kv[0] if k == "node" else node)
                for c, node in combos
                for kv in _group_keys(ev, k, bucket)
            ]
        for key, node in combos:
            # keyed by the order key of each value: hashable (a list-valued property) and 1 == 1.0
            order_key = tuple(_order_key(v) for v in key)
            values.setdefault(order_key, key)
            groups.setdefault(order_key, []).append((ev, node))

    rows = []
    for key in sorted(groups):
        key_values = values.get(key, ())
        row = dict(zip(names[: len(key_values)], key_values, strict=True))
        for g in aggs:
            members = [(ev, node) for ev, node in groups[key] if _passes(ev, g["where"])]
            row[g["name"]] = (
                _agg(g["fn"], g, members)
                if members or g["fn"] == "count"
                else (0 if g["fn"] in ZERO_WHEN_EMPTY else None)
            )
        rows.append(canonicalize(row))
    rows = [r for r in rows if all(holds(r[f], op, v) for f, op, v in having)]
    for f, desc in reversed(order_by):  # stable sorts, last key first; nulls last either way
        present = sorted((r for r in rows if r[f] is not None), key=lambda r: _order_key(r[f]), reverse=desc)
        rows = present + [r for r in rows if r[f] is None]
    return canonicalize({"rows": rows, "rows_total": len(rows), "n_events": len(events)})
