"""The event vocabulary of the relational operators (``list_events``, ``aggregate_events``): event fields,
UTC calendar keys, the shared selection arguments and the fast selection over the believed-edge arrays.

An *event* is a believed edge version whose ``vt_s`` lies in the window; its time ``t`` is ``vt_s``.
Fields (docs/operators.md §15): ``src``, ``dst``, ``rel_type``, ``eid``, ``t``, ``vt_e``, ``prop.<name>``
(missing = null) and the UTC calendar keys of ``t``. ``vt_s`` is another name of ``t`` (:data:`ALIASES`):
the rows of ``list_events`` carry it, and a planner that reads them writes it (Qwen2.5-Coder-1.5B did in 11
of 40 analyst plans, 2026-12-05). Field values are computed for the selected scan
positions only, as *columns*: an int64 array (with a null mask for calendar keys past year 9999), an
object array of strings, or an object array of decoded property values. Property texts are decoded only
for the property a predicate, key or aggregate names.
"""

from __future__ import annotations

import json
import math
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import pyarrow.compute as pc
from pydantic import Field, model_validator

from tgms.engine.operators.base import (
    Model,
    OneOf,
    OpArgs,
    UidArg,
    Window,
    dedupe,
    empty_window_is_none,
    invalid,
)
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import StoreProfile
from tgms.engine.operators.edge_arrays import EdgeArrays
from tgms.engine.operators.event_values import encode, unique_inverse
from tgms.engine.operators.traits import EventWindow, NonEmpty, TimePredicates

CALENDAR = ("year", "month", "day", "week", "hour", "dow", "month_of_year")
INT_FIELDS = ("eid", "t", "vt_e", "year", "hour", "dow", "month_of_year")
STR_FIELDS = ("src", "dst", "rel_type", "month", "day", "week")
FIELDS = ("src", "dst", "rel_type", "eid", "t", "vt_e", *CALENDAR)
#: other names of a field: the same column
ALIASES = {"vt_s": "t"}
PRED_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "exists", "missing")
US_HOUR = 3_600_000_000
US_DAY = 86_400_000_000
#: 10000-01-01T00:00Z: calendar keys of later events are null (the proleptic calendar ends at 9999)
CAL_END = 253_402_300_800_000_000
_I64_MAX = 2**63 - 1

Scalar = int | Annotated[float, Field(allow_inf_nan=False)] | str | bool


def check_field(name: str, where: str) -> str:
    """``name`` if it is an event field, else ``E_INVALID_ARG`` naming the vocabulary."""
    if name in FIELDS or name in ALIASES or (name.startswith("prop.") and len(name) > 5):
        return name
    raise invalid(f"{where}: unknown event field {name!r}; fields: {list(FIELDS)} or prop.<name>")


class Predicate(Model):
    """``{field, op, value}`` or ``{field, op, other}`` (a field comparison); exists/missing take neither."""

    field: str
    op: Annotated[str, OneOf(PRED_OPS)]
    value: Scalar | list[Scalar] | None = None
    other: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> Predicate:
        check_field(self.field, "where.field")
        unary = self.op in ("exists", "missing")
        if unary and (self.value is not None or self.other is not None):
            raise invalid(f"op {self.op!r} takes neither value nor other")
        if not unary and (self.value is None) == (self.other is None):
            raise invalid(f"op {self.op!r} needs exactly one of value, other")
        if self.other is not None:
            check_field(self.other, "where.other")
            if self.op in ("in", "not_in"):
                raise invalid(f"op {self.op!r} compares with a value list, not another field")
        if self.value is not None and (self.op in ("in", "not_in")) != isinstance(self.value, list):
            raise invalid(
                f"op {self.op!r} needs a {'list' if self.op in ('in', 'not_in') else 'scalar'} value"
            )
        if isinstance(self.value, list) and len(self.value) > 10_000:
            raise invalid("an in/not_in list holds at most 10000 values")
        return self


#: the graph operators' edge predicates (motifs, temporal paths and reachability, longest paths): the event
#: selection's ``where`` language, AND-ed, each edge version tested on its own fields (``t`` = its vt_s)
EdgeWhere = Annotated[
    list[Predicate],
    TimePredicates(),
    Field(max_length=32, default_factory=list),
]


#: one uid or a list of uids: one marked position, so the verifier grounds each listed uid once
UidSel = Annotated[Annotated[list[str], Field(max_length=10_000)] | str, UidArg(), NonEmpty()]


class SelectionKeys(Model):
    """The keys of an event selection: believed edge versions whose ``vt_s`` lies in ``window`` (null: the
    whole time line), filtered by endpoints, rel types and ``where`` (AND). An operator's own arguments
    (:class:`EventSelection`) or a nested selection (``next_event``'s ``a`` and ``b``)."""

    window: Annotated[Window, EventWindow()] | None = None
    # a uid list, or one uid (as co_active's selections take it)
    src: UidSel | None = None
    dst: UidSel | None = None
    node: UidSel | None = None
    rel_types: (
        Annotated[list[Annotated[str, Field(min_length=1)]], NonEmpty(), Field(max_length=10_000)] | None
    ) = None
    where: Annotated[list[Predicate], TimePredicates(), Field(max_length=32, default_factory=list)]

    @model_validator(mode="before")
    @classmethod
    def _empty_window_is_none(cls, data: Any) -> Any:
        return empty_window_is_none(data)

    def prop_names(self) -> set[str]:
        out = set()
        for p in self.where:
            for f in (p.field, p.other):
                if f is not None and f.startswith("prop."):
                    out.add(f)
        return out


class EventSelection(SelectionKeys, OpArgs):
    """The selection shared by the event operators, as an operator's arguments (paging and ``as_of_tt``
    from :class:`OpArgs`; the fields keep OpArgs' first, as before)."""


# -- columns --------------------------------------------------------------------------------------------


@dataclass
class Col:
    """A field's values at the selected events: ``kind`` "int" (``values`` int64, ``null`` mask or None),
    "str" (object array of str, never null) or "coded" (``values`` int64 codes into ``uniq``, the distinct
    values in :func:`value_sort_key` order, null first when present). A predicate on a coded column is
    evaluated once per distinct value and mapped through the codes."""

    kind: str
    values: np.ndarray
    null: np.ndarray | None = None
    uniq: list[Any] | None = None

    def take(self, idx: np.ndarray) -> Col:
        return Col(self.kind, self.values[idx], None if self.null is None else self.null[idx], self.uniq)

    def objects(self) -> list[Any]:
        """The values as Python objects (None = null)."""
        if self.kind == "coded":
            assert self.uniq is not None
            u = self.uniq
            return [u[c] for c in self.values.tolist()]
        vals = self.values.tolist()
        if self.null is not None:
            vals = [None if m else v for v, m in zip(vals, self.null.tolist(), strict=True)]
        return vals

    def per_code(self, test: Callable[[Any], bool]) -> np.ndarray:
        """``test`` of every event's value, evaluated once per distinct value (coded columns)."""
        assert self.uniq is not None
        ok = np.fromiter((test(u) for u in self.uniq), dtype=bool, count=len(self.uniq))
        return ok[self.values] if len(self.uniq) else np.zeros(len(self.values), dtype=bool)


def uid_tables(ctx: OpContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(uid by nid as an object array, rank by nid in code-point order, uids sorted): one cache slot (the
    context's LRU is shared with the edge arrays, which must not be pushed out)."""

    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        uids = ctx.uids()
        order = np.array(sorted(range(len(uids)), key=uids.__getitem__), dtype=np.int64)
        rank = np.empty(len(uids), dtype=np.int64)
        rank[order] = np.arange(len(uids), dtype=np.int64)
        arr = np.array(uids, dtype=object)
        return arr, rank, arr[order] if len(uids) else arr

    return ctx.cached(("event_uids",), build)


def uid_array(ctx: OpContext) -> np.ndarray:
    return uid_tables(ctx)[0]


#: per-belief-state derived columns, kept with (and dropped with) the context's edge arrays
_DERIVED: weakref.WeakKeyDictionary[EdgeArrays, dict[Any, Any]] = weakref.WeakKeyDictionary()


def derived(e: EdgeArrays, key: Any, build: Callable[[], Any]) -> Any:
    slot = _DERIVED.setdefault(e, {})
    if key not in slot:
        slot[key] = build()
    return slot[key]


def rel_codes(ctx: OpContext, e: EdgeArrays, as_of_tt: int | None) -> tuple[np.ndarray, list[str]]:
    """(code of every believed version's rel_type, the rel types sorted; code = index in that list)."""

    def build() -> tuple[np.ndarray, list[str]]:
        enc = pc.dictionary_encode(e.column("rel_type"))
        if hasattr(enc, "combine_chunks"):
            enc = enc.combine_chunks()
        names = enc.dictionary.to_pylist()
        order = sorted(range(len(names)), key=names.__getitem__)
        remap = np.empty(len(names), dtype=np.int64)
        remap[np.array(order, dtype=np.int64)] = np.arange(len(names), dtype=np.int64)
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        return (remap[idx] if len(names) else idx), [names[i] for i in order]

    return derived(e, "rel", build)


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_]+$")


def _decode(texts: list[str | None], key: str) -> list[Any]:
    if not _PLAIN_KEY.match(key):  # a key JSON could spell with escapes: parse every text
        return [json.loads(s).get(key) if s else None for s in texts]
    # a props text without the quoted key cannot hold it: skip the parse (most rows, for rare keys)
    needle = f'"{key}"'
    return [json.loads(s).get(key) if s and needle in s else None for s in texts]


_SMALL = 4096


def prop_column(ctx: OpContext, e: EdgeArrays, as_of_tt: int | None, key: str, pos: np.ndarray) -> Col:
    """Property ``key`` at ``pos`` as a coded column. A small selection decodes just its rows; a large one
    decodes and codes the whole column once per belief state (cached: later calls on the property cost
    one take)."""
    if len(pos) <= _SMALL or len(pos) * 8 < e.n:
        codes, uniq = encode(_decode(e.col_at("props", pos).to_pylist(), key))
        return Col("coded", codes, None, uniq)

    def build() -> tuple[np.ndarray, list[Any]]:
        return encode(_decode(e.column("props").to_pylist(), key))

    codes, uniq = derived(e, ("prop", key), build)
    return Col("coded", codes[pos], None, uniq)


def _calendar_int(t: np.ndarray, key: str) -> np.ndarray:
    """Integer code of calendar key ``key`` at ``t`` (µs, UTC), vectorized and exact (int64 day
    arithmetic); only the conversions the key needs."""
    if key == "hour":
        return (t // US_HOUR) % 24
    days = t // US_DAY
    if key == "day":
        return days
    dow = (days + 3) % 7 + 1  # 1970-01-01 was a Thursday (ISO 4)
    if key == "dow":
        return dow
    if key == "week":
        thursday = days - (dow - 1) + 3  # the ISO week's Thursday decides its year
        iso_year = thursday.astype("M8[D]").astype("M8[Y]").astype(np.int64) + 1970
        jan1 = (iso_year - 1970).astype("M8[Y]").astype("M8[D]").astype(np.int64)
        return iso_year * 100 + (thursday - jan1) // 7 + 1
    months = days.astype("M8[D]").astype("M8[M]").astype(np.int64)  # months since 1970-01
    return {"month": months, "year": months // 12 + 1970, "month_of_year": months % 12 + 1}[key]


def calendar_code(t: np.ndarray, key: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(monotone int code of calendar key ``key`` at ``t``, null mask or None). String keys ("month",
    "day", "week") are coded so that code order = string order; :func:`calendar_text` decodes."""
    null = t >= CAL_END
    safe = np.where(null, 0, t) if null.any() else t
    code = _calendar_int(safe, key)
    return code, (null if null.any() else None)


def calendar_text(key: str, codes: np.ndarray) -> np.ndarray:
    """The strings of month/day/week codes (object array), formatted once per distinct code."""
    uniq, inv = unique_inverse(codes)
    if key == "month":
        text = [f"{c // 12 + 1970:04d}-{c % 12 + 1:02d}" for c in uniq.tolist()]
    elif key == "day":
        text = [str(s) for s in np.datetime_as_string(uniq.astype("M8[D]"), unit="D")]
    else:
        text = [f"{c // 100:04d}-W{c % 100:02d}" for c in uniq.tolist()]
    return np.array(text, dtype=object)[inv.reshape(-1)] if len(codes) else np.empty(0, dtype=object)


class Columns:
    """Field columns of one selection, computed on demand and memoized per field."""

    def __init__(self, ctx: OpContext, e: EdgeArrays, as_of_tt: int | None, pos: np.ndarray) -> None:
        self.ctx, self.e, self.as_of_tt, self.pos = ctx, e, as_of_tt, pos
        self._memo: dict[str, Col] = {}

    def get(self, name: str) -> Col:
        name = ALIASES.get(name, name)
        if name not in self._memo:
            self._memo[name] = self._build(name)
        return self._memo[name]

    def _build(self, name: str) -> Col:
        e, pos = self.e, self.pos
        if name in ("src", "dst"):
            return Col("str", uid_array(self.ctx)[getattr(e, name)[pos]])
        if name == "rel_type":
            codes, names = rel_codes(self.ctx, e, self.as_of_tt)
            return Col("str", np.array(names, dtype=object)[codes[pos]] if len(pos) else _empty())
        if name in ("eid", "vt_e"):
            return Col("int", e.key_at(name, pos).astype(np.int64))
        if name == "t":
            return Col("int", e.vt_s[pos].astype(np.int64))
        if name in CALENDAR:
            code, null = calendar_code(e.vt_s[pos].astype(np.int64), name)
            if name in ("month", "day", "week"):
                text = calendar_text(name, code)
                if null is not None:
                    text[null] = None
                    codes, uniq = encode(text.tolist())
                    return Col("coded", codes, None, uniq)
                return Col("str", text)
            return Col("int", code, null)
        return prop_column(self.ctx, e, self.as_of_tt, name[5:], pos)


def _empty() -> np.ndarray:
    return np.empty(0, dtype=object)


# -- comparisons ----------------------------------------------------------------------------------------


def kind(x: Any) -> str:
    """The comparison kind of a JSON value: only values of one kind compare."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, (int, float)):
        return "number"
    if isinstance(x, str):
        return "str"
    return "other"


def compare(a: Any, op: str, b: Any) -> bool:
    """One comparison under the documented rules: values of different kinds (or a null) never compare
    (false, for ``ne`` too); ordering needs two numbers or two strings."""
    ka = kind(a)
    if ka in ("null", "other") or ka != kind(b):
        return False
    if op == "eq":
        return a == b
    if op == "ne":
        return a != b
    if ka == "bool":
        return False
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


def member(a: Any, values: list[Any], op: str) -> bool:
    """``in``: eq holds for some listed value; ``not_in``: a non-null value for which it holds for none."""
    hit = any(compare(a, "eq", v) for v in values)
    return hit if op == "in" else (a is not None and not hit)


def int_vs_number(x: np.ndarray, op: str, v: int | float) -> np.ndarray:
    """Exact int64-array vs number comparison (a float is compared by value, as Python compares)."""
    if isinstance(v, float) and not v.is_integer():
        f = math.floor(v)
        f = max(min(f, _I64_MAX), -_I64_MAX)
        if op == "eq":
            return np.zeros(len(x), dtype=bool)
        if op == "ne":
            return np.ones(len(x), dtype=bool)
        return x <= f if op in ("lt", "le") else x > f
    v = int(v)
    if v > _I64_MAX or v < -_I64_MAX:  # beyond every int64: decided by the sign alone
        big = v > 0
        res = {"eq": False, "ne": True, "lt": big, "le": big, "gt": not big, "ge": not big}[op]
        return np.full(len(x), res, dtype=bool)
    return {"eq": x == v, "ne": x != v, "lt": x < v, "le": x <= v, "gt": x > v, "ge": x >= v}[op]


def col_vs_value(col: Col, op: str, value: Any) -> np.ndarray:
    n = len(col.values)
    if op in ("exists", "missing"):
        present = _present(col)
        return present if op == "exists" else ~present
    if col.kind == "coded":
        if op in ("in", "not_in"):
            return col.per_code(lambda x: member(x, value, op))
        return col.per_code(lambda x: compare(x, op, value))
    if op in ("in", "not_in"):
        hit = np.zeros(n, dtype=bool)
        for v in value:
            hit |= col_vs_value(col, "eq", v)
        return hit if op == "in" else (~hit & _present(col))
    if col.kind == "int":
        if kind(value) != "number":
            return np.zeros(n, dtype=bool)
        out = int_vs_number(col.values, op, value)
        return out if col.null is None else out & ~col.null
    if col.kind == "str":
        if kind(value) != "str":
            return np.zeros(n, dtype=bool)
        ufunc = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                 "gt": np.greater, "ge": np.greater_equal}[op]  # fmt: skip
        return np.asarray(ufunc(col.values, value), dtype=bool) if n else np.zeros(0, dtype=bool)
    raise AssertionError(col.kind)


def col_vs_col(a: Col, op: str, b: Col) -> np.ndarray:
    n = len(a.values)
    if a.kind == b.kind == "int":
        ufunc = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                 "gt": np.greater, "ge": np.greater_equal}[op]  # fmt: skip
        out = ufunc(a.values, b.values)
        for c in (a, b):
            if c.null is not None:
                out &= ~c.null
        return out
    if {a.kind, b.kind} == {"int", "str"}:
        return np.zeros(n, dtype=bool)
    av, bv = a.objects(), b.objects()
    return np.fromiter((compare(x, op, y) for x, y in zip(av, bv, strict=True)), dtype=bool, count=n)


def _present(col: Col) -> np.ndarray:
    if col.kind == "coded":
        return col.per_code(lambda x: x is not None)
    return np.ones(len(col.values), dtype=bool) if col.null is None else ~col.null


# -- selection ------------------------------------------------------------------------------------------


def select(ctx: OpContext, a: EventSelection, at: str = "") -> tuple[EdgeArrays, np.ndarray, Columns]:
    """Scan positions of the selected events (ascending = ``(vt_s, eid, vid)`` order) and their columns;
    ``at`` prefixes the field an unknown uid is reported at (a nested selection: ``"a."``)."""
    e = ctx.edges(a.as_of_tt)
    sets = {}
    for name in ("src", "dst", "node"):
        uids = getattr(a, name)
        if isinstance(uids, str):
            uids = [uids]
        if uids is not None:
            sets[name] = np.array(ctx.require_known(dedupe(uids), a.as_of_tt, at + name), dtype=np.int64)
    lo, hi = 0, e.n
    if a.window is not None:
        lo, hi = (int(x) for x in np.searchsorted(e.vt_s, [a.window.t_a, a.window.t_b], "left"))
    pos = np.arange(lo, hi, dtype=np.int64)
    keep: list[tuple[str, Callable[[np.ndarray], np.ndarray]]] = []
    for name, nids in sets.items():
        if name == "node":

            def either_end_in(p: np.ndarray, s: np.ndarray = nids) -> np.ndarray:
                return np.isin(e.src[p], s) | np.isin(e.dst[p], s)

            keep.append((name, either_end_in))
        else:
            col = e.src if name == "src" else e.dst

            def end_in(p: np.ndarray, s: np.ndarray = nids, c: np.ndarray = col) -> np.ndarray:
                return np.isin(c[p], s)

            keep.append((name, end_in))
    if a.rel_types is not None:
        codes, names = rel_codes(ctx, e, a.as_of_tt)
        wanted = np.array([i for i, r in enumerate(names) if r in set(a.rel_types)], dtype=np.int64)
        keep.append(("rel_types", lambda p: np.isin(codes[p], wanted)))
    for _, mask in keep:
        if len(pos):
            pos = pos[mask(pos)]
    cols = apply_where(Columns(ctx, e, a.as_of_tt, pos), a.where)
    return e, cols.pos, cols


def apply_where(cols: Columns, where: list[Predicate]) -> Columns:
    """The selection's events that pass every predicate (AND), the columns computed so far kept."""
    for p in where:
        if not len(cols.pos):
            break
        cols = _restrict(cols, _passing(cols, p))
    return cols


def _passing(cols: Columns, p: Predicate) -> np.ndarray:
    """Which of the selection's events pass one predicate."""
    col = cols.get(p.field)
    return col_vs_value(col, p.op, p.value) if p.other is None else col_vs_col(col, p.op, cols.get(p.other))


def where_mask(cols: Columns, where: list[Predicate]) -> np.ndarray:
    """Which of the selection's events pass every predicate (AND), as a mask over ``cols.pos`` (an
    aggregate's own ``where``: its columns are the selection's, computed once for every aggregate)."""
    keep = np.ones(len(cols.pos), dtype=bool)
    for p in where:
        keep &= _passing(cols, p)
    return keep


_EDGE_KEEP_SLOTS = 4


def where_key(where: list[Predicate]) -> str:
    """A predicate list as a cache key (the same list, the same key)."""
    return json.dumps([p.model_dump(exclude_none=True) for p in where], sort_keys=True)


def edge_where_work(p: StoreProfile, where: list[Predicate], work: dict[str, float]) -> dict[str, float]:
    """``work`` plus the edge predicates' pass over every believed version (:func:`edge_keep`; priced on
    every call, as an index, so a cold call is not admitted at a fraction of its time): two numpy passes
    a predicate, and each property named decoded once (~1 µs a row, priced as a materialized row)."""
    if not where:
        return work
    props = {f for q in where for f in (q.field, q.other) if f is not None and f.startswith("prop.")}
    out = dict(work)
    out["scan_row"] = out.get("scan_row", 0.0) + 2.0 * len(where) * p.n_edges
    out["row_out"] = out.get("row_out", 0.0) + float(p.n_edges) * len(props)
    return out


def edge_keep(ctx: OpContext, as_of_tt: int | None, where: list[Predicate]) -> np.ndarray | None:
    """Which believed edge versions (by scan position) pass ``where`` (None: no predicate, all pass). The
    graph operators' edge predicates: each version is tested on its own fields, ``t`` being its ``vt_s``.
    Cached per belief state and predicate list, so the pages of one call and the calls of one plan share
    it."""
    if not where:
        return None
    e = ctx.edges(as_of_tt)
    key = where_key(where)
    masks: dict[str, np.ndarray] = derived(e, "edge_keep", dict)
    if key not in masks:
        keep = np.zeros(e.n, dtype=bool)
        keep[apply_where(Columns(ctx, e, as_of_tt, np.arange(e.n, dtype=np.int64)), where).pos] = True
        masks[key] = keep
        while len(masks) > _EDGE_KEEP_SLOTS:  # a bool per version each: keep the latest few
            del masks[next(iter(masks))]
    return masks[key]


def _restrict(cols: Columns, mask: np.ndarray) -> Columns:
    out = Columns(cols.ctx, cols.e, cols.as_of_tt, cols.pos[mask])
    out._memo = {k: c.take(np.flatnonzero(mask)) for k, c in cols._memo.items()}
    return out
