"""Write operations: their JSON form, parsed into small immutable typed records.

One batch is a list of ops; the event log stores each op in the canonical JSON form below, so a parsed op
re-serializes to exactly the bytes that were logged. A malformed op fails when it is parsed
(``E_SCHEMA`` for shape, ``E_INVALID_ARG`` for values), before anything is logged or written.

===================  ===============================================================================
op                   fields
===================  ===============================================================================
``assert_node``      ``uid``, ``label`` ("node"), ``props`` ({}), ``vt_s``, ``vt_e`` (OPEN_END),
                     ``source``, ``provenance_ref`` (null)
``assert_edge``      ``src``, ``dst``, ``rel_type``, ``disc`` (""), ``props``, ``vt_s``, ``vt_e``,
                     ``source``, ``provenance_ref``
``retract``          ``ref``, ``t``: the fact stops being valid at ``t`` (the world changed)
``correct``          ``ref``, ``props``, ``vt_s``, ``vt_e``: we were wrong about ``[vt_s, vt_e)``;
                     for a ``{"vid"}`` ref the interval defaults to that version's
``ingest_events``    ``rel_type``, ``label``, ``src`` [..], ``dst`` [..], ``t`` [..], ``t_end`` [..|null]
                     or null, ``props`` [..|null] or null, ``source``: the bulk path for event streams
===================  ===============================================================================

A ``ref`` names one identity or version: ``{"uid": U}`` (a node), ``{"src", "dst", "rel_type", "disc"}``
(an edge; ``disc`` defaults to ""), ``{"eid": E}`` (an edge by id) or ``{"vid": V}`` (one version).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tgms.engine.canonical import canonicalize, check_depth, dumps_canonical
from tgms.engine.errors import InvalidArgError, LimitError, SchemaError
from tgms.engine.timeutil import OPEN_END, check_interval, check_time

MAX_STRING = 1024
#: props are small records about one fact; a bound keeps one op from carrying a document (E_LIMIT)
MAX_PROPS_CHARS = 65_536
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Ref:
    uid: str | None = None
    edge: tuple[str, str, str, str] | None = None  # (src, dst, rel_type, disc)
    eid: int | None = None
    vid: int | None = None

    def to_json(self) -> dict[str, Any]:
        if self.uid is not None:
            return {"uid": self.uid}
        if self.edge is not None:
            s, d, r, c = self.edge
            return {"src": s, "dst": d, "rel_type": r, "disc": c}
        if self.eid is not None:
            return {"eid": self.eid}
        return {"vid": self.vid}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Assertion:
    """What an assert says of a node or an edge alike; keyword-only, so the identity fields may follow."""

    props: dict[str, Any]
    vt_s: int
    vt_e: int
    source: str | None = None
    provenance_ref: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AssertNode(_Assertion):
    uid: str
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssertEdge(_Assertion):
    src: str
    dst: str
    rel_type: str
    disc: str


@dataclass(frozen=True, slots=True)
class Retract:
    ref: Ref
    t: int


@dataclass(frozen=True, slots=True)
class Correct:
    ref: Ref
    props: dict[str, Any]
    vt_s: int | None
    vt_e: int | None


@dataclass(frozen=True, slots=True)
class IngestEvents:
    rel_type: str
    label: str
    src: tuple[str, ...]
    dst: tuple[str, ...]
    t: tuple[int, ...]
    t_end: tuple[int | None, ...] | None
    props: tuple[str | None, ...] | None  # canonical JSON object text per event
    source: str | None = None
    disc: tuple[str, ...] | None = None  # explicit discriminators (chunked ingest); None = by repeat rank


Op = AssertNode | AssertEdge | Retract | Correct | IngestEvents


# -- parsing ------------------------------------------------------------------------------------------
def _fields(d: dict[str, Any], op: str, required: set[str], optional: set[str], where: str) -> None:
    missing = sorted(required - d.keys())
    if missing:
        raise SchemaError(f"{op}: missing field(s) {missing}", at=where, missing=missing)
    unknown = sorted(d.keys() - required - optional - {"op"})
    if unknown:
        raise SchemaError(
            f"{op}: unknown field(s) {unknown}", at=where, unknown=unknown, legal=sorted(required | optional)
        )


def _unicode(text: str, name: str, where: str) -> None:
    """Refuse text the log cannot hold: a lone surrogate (legal as a JSON escape) is not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgError(
            f"{name} is not valid Unicode (lone surrogate)", at=where, field=name, position=exc.start
        ) from None


def _string(value: Any, name: str, where: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise SchemaError(f"{name} must be a string", at=where, field=name, value=repr(value)[:80])
    _unicode(value, name, where)
    if not allow_empty and not value:
        raise InvalidArgError(f"{name} must not be empty", at=where, field=name)
    if len(value) > MAX_STRING:
        raise InvalidArgError(f"{name} is longer than {MAX_STRING} characters", at=where, field=name)
    return value


def _opt_string(value: Any, name: str, where: str) -> str | None:
    return None if value is None else _string(value, name, where, allow_empty=True)


def _props(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SchemaError("props must be a JSON object", at=where, field="props")
    try:
        check_depth(value, "props")
        props = canonicalize(value, "props")
    except (InvalidArgError, LimitError) as exc:
        exc.details["at"] = where
        raise
    text = dumps_canonical(props)
    _unicode(text, "props", where)
    _props_size(text, "props", where)
    return props


def _props_size(text: str, name: str, where: str) -> None:
    if len(text) > MAX_PROPS_CHARS:
        raise LimitError(
            f"{name} is longer than {MAX_PROPS_CHARS} characters as canonical JSON",
            at=where,
            field=name,
            chars=len(text),
            max_chars=MAX_PROPS_CHARS,
        )


def _time(value: Any, name: str, where: str, *, open_end: bool = False) -> int:
    try:
        return check_time(value, name, allow_open_end=open_end)
    except InvalidArgError as exc:
        exc.details["at"] = where
        raise


def _interval(d: dict[str, Any], where: str) -> tuple[int, int]:
    try:
        return check_interval(d["vt_s"], d.get("vt_e", OPEN_END))
    except InvalidArgError as exc:
        exc.details["at"] = where
        raise


def parse_ref(value: Any, where: str) -> Ref:
    if not isinstance(value, dict):
        raise SchemaError("ref must be an object", at=where, field="ref")
    keys = set(value)
    if keys == {"uid"}:
        return Ref(uid=_string(value["uid"], "ref.uid", where))
    if keys == {"eid"} or keys == {"vid"}:
        (k,) = keys
        v = value[k]
        if isinstance(v, bool) or not isinstance(v, int) or not -(2**63) <= v < 2**63:
            raise SchemaError(f"ref.{k} must be a 64-bit integer", at=where, field=f"ref.{k}")
        return Ref(eid=v) if k == "eid" else Ref(vid=v)
    if {"src", "dst", "rel_type"} <= keys <= {"src", "dst", "rel_type", "disc"}:
        return Ref(
            edge=(
                _string(value["src"], "ref.src", where),
                _string(value["dst"], "ref.dst", where),
                _string(value["rel_type"], "ref.rel_type", where),
                _string(value.get("disc", ""), "ref.disc", where, allow_empty=True),
            )
        )
    raise SchemaError(
        "ref must be {uid} | {src, dst, rel_type[, disc]} | {eid} | {vid}", at=where, keys=sorted(keys)
    )


def parse_op(d: Any, where: str = "op") -> Op:
    """Parse one op from its JSON form."""
    if not isinstance(d, dict) or not isinstance(d.get("op"), str):
        raise SchemaError('an op must be an object with a string "op" field', at=where)
    kind = d["op"]
    prov = {"source", "provenance_ref"}
    if kind == "assert_node":
        _fields(d, kind, {"uid", "vt_s"}, {"label", "props", "vt_e"} | prov, where)
        vt = _interval(d, where)
        return AssertNode(
            uid=_string(d["uid"], "uid", where),
            label=_string(d.get("label", "node"), "label", where),
            **_assertion(d, vt, where),
        )
    if kind == "assert_edge":
        _fields(d, kind, {"src", "dst", "rel_type", "vt_s"}, {"disc", "props", "vt_e"} | prov, where)
        vt = _interval(d, where)
        return AssertEdge(
            src=_string(d["src"], "src", where),
            dst=_string(d["dst"], "dst", where),
            rel_type=_string(d["rel_type"], "rel_type", where),
            disc=_string(d.get("disc", ""), "disc", where, allow_empty=True),
            **_assertion(d, vt, where),
        )
    if kind == "retract":
        _fields(d, kind, {"ref", "t"}, set(), where)
        return Retract(ref=parse_ref(d["ref"], where), t=_time(d["t"], "t", where))
    if kind == "correct":
        _fields(d, kind, {"ref", "props"}, {"vt_s", "vt_e"}, where)
        ref = parse_ref(d["ref"], where)
        vs: int | None
        ve: int | None
        if "vt_s" in d or "vt_e" in d:
            if "vt_s" not in d or "vt_e" not in d:
                raise SchemaError("correct: give both vt_s and vt_e, or neither (vid refs only)", at=where)
            vs, ve = _interval(d, where)
        elif ref.vid is None:
            raise SchemaError("correct: vt_s and vt_e are required unless ref is a {vid}", at=where)
        else:
            vs = ve = None
        if d["props"] is None or not isinstance(d["props"], dict):
            raise SchemaError("correct: props must be a JSON object", at=where, field="props")
        return Correct(ref=ref, props=_props(d["props"], where), vt_s=vs, vt_e=ve)
    if kind == "ingest_events":
        return _parse_ingest(d, where)
    raise SchemaError(
        f"unknown op {kind!r}",
        at=where,
        legal=["assert_node", "assert_edge", "retract", "correct", "ingest_events"],
    )


def _assertion(d: dict[str, Any], vt: tuple[int, int], where: str) -> dict[str, Any]:
    """The :class:`_Assertion` fields of an assert op.

    The caller checks the interval first and the identity fields next; these come last, so a bad op's first
    reported error does not depend on which kind of assert it is.
    """
    return {
        "props": _props(d.get("props"), where),
        "vt_s": vt[0],
        "vt_e": vt[1],
        "source": _opt_string(d.get("source"), "source", where),
        "provenance_ref": _opt_string(d.get("provenance_ref"), "provenance_ref", where),
    }


def _parse_ingest(d: dict[str, Any], where: str) -> IngestEvents:
    _fields(
        d,
        "ingest_events",
        {"rel_type", "src", "dst", "t"},
        {"label", "t_end", "props", "source", "disc"},
        where,
    )
    cols = {k: d[k] for k in ("src", "dst", "t")}
    for k, v in cols.items():
        if not isinstance(v, list):
            raise SchemaError(f"ingest_events.{k} must be a list", at=where, field=k)
    n = len(cols["src"])
    for k in ("dst", "t"):
        if len(cols[k]) != n:
            raise SchemaError("ingest_events columns must have equal lengths", at=where, field=k)
    for i, (s, t) in enumerate(zip(cols["src"], cols["dst"], strict=True)):
        if not (isinstance(s, str) and s and isinstance(t, str) and t):
            raise SchemaError("ingest_events src/dst must be non-empty strings", at=where, row=i)
    _unicode("".join(cols["src"]) + "".join(cols["dst"]), "ingest_events src/dst", where)
    for i, t in enumerate(cols["t"]):
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < OPEN_END:
            raise InvalidArgError("ingest_events t must be an int in [0, 2**62)", at=where, row=i, value=t)
    t_end = d.get("t_end")
    if t_end is not None:
        if not isinstance(t_end, list) or len(t_end) != n:
            raise SchemaError("ingest_events.t_end must be null or a list as long as t", at=where)
        for i, (t, te) in enumerate(zip(cols["t"], t_end, strict=True)):
            if te is None:
                continue
            if isinstance(te, bool) or not isinstance(te, int) or not t < te <= OPEN_END:
                raise InvalidArgError("ingest_events t_end must be > t and <= 2**62", at=where, row=i)
        t_end = tuple(t_end)
    disc = d.get("disc")
    if disc is not None:
        if not isinstance(disc, list) or len(disc) != n or not all(isinstance(x, str) for x in disc):
            raise SchemaError("ingest_events.disc must be null or a list of strings as long as t", at=where)
        disc = tuple(disc)
    props = d.get("props")
    if props is not None:
        if not isinstance(props, list) or len(props) != n:
            raise SchemaError("ingest_events.props must be null or a list as long as t", at=where)
        memo: dict[str, str | None] = {}  # event props repeat heavily; canonicalize each text once
        out_props: list[str | None] = []
        for i, p in enumerate(props):
            if isinstance(p, str):
                c = memo.get(p, _MISSING)
                if c is _MISSING:
                    c = memo[p] = _event_props(p, where, i)
                out_props.append(c)  # type: ignore[arg-type]
            else:
                out_props.append(_event_props(p, where, i))
        props = tuple(out_props)
    return IngestEvents(
        rel_type=_string(d["rel_type"], "rel_type", where),
        label=_string(d.get("label", "node"), "label", where),
        src=tuple(cols["src"]),
        dst=tuple(cols["dst"]),
        t=tuple(cols["t"]),
        t_end=t_end,
        props=props,
        source=_opt_string(d.get("source"), "source", where),
        disc=disc,
    )


def _event_props(p: Any, where: str, row: int) -> str | None:
    if p is None:
        return None
    if isinstance(p, str):  # already canonical JSON text (the bulk form)
        import json

        try:
            p = json.loads(p)
        except ValueError as exc:
            raise SchemaError("ingest_events props text is not JSON", at=where, row=row) from exc
    if (isinstance(p, float) and math.isnan(p)) or not isinstance(p, dict):
        raise SchemaError("ingest_events props must be objects or null", at=where, row=row)
    try:
        check_depth(p, f"props[{row}]")
    except LimitError as exc:
        exc.details.update(at=where, row=row)
        raise
    c = canonicalize(p, f"props[{row}]")
    text = dumps_canonical(c)
    _unicode(text, f"props[{row}]", where)
    _props_size(text, f"props[{row}]", where)
    return text if c else None


# -- serializing (the logged form) --------------------------------------------------------------------
def op_to_json(op: Op) -> dict[str, Any]:
    if isinstance(op, AssertNode):
        return {
            "op": "assert_node",
            "uid": op.uid,
            "label": op.label,
            **_assertion_json(op),
        }
    if isinstance(op, AssertEdge):
        return {
            "op": "assert_edge",
            "src": op.src,
            "dst": op.dst,
            "rel_type": op.rel_type,
            "disc": op.disc,
            **_assertion_json(op),
        }
    if isinstance(op, Retract):
        return {"op": "retract", "ref": op.ref.to_json(), "t": op.t}
    if isinstance(op, Correct):
        out: dict[str, Any] = {"op": "correct", "ref": op.ref.to_json(), "props": op.props}
        if op.vt_s is not None:
            out["vt_s"], out["vt_e"] = op.vt_s, op.vt_e
        return out
    return {
        "op": "ingest_events",
        "rel_type": op.rel_type,
        "label": op.label,
        "src": list(op.src),
        "dst": list(op.dst),
        "t": list(op.t),
        "t_end": None if op.t_end is None else list(op.t_end),
        "props": None if op.props is None else list(op.props),
        "source": op.source,
        **({} if op.disc is None else {"disc": list(op.disc)}),
    }


def _assertion_json(op: _Assertion) -> dict[str, Any]:
    """The logged form of the :class:`_Assertion` fields (key order is free: canonical JSON sorts keys)."""
    return {
        "props": op.props,
        "vt_s": op.vt_s,
        "vt_e": op.vt_e,
        "source": op.source,
        "provenance_ref": op.provenance_ref,
    }


def parse_batch(ops: Any, where: str = "batch") -> list[Op]:
    if not isinstance(ops, list) or not ops:
        raise SchemaError("a batch must be a non-empty list of ops", at=where)
    return [parse_op(o, f"{where}[{i}]") for i, o in enumerate(ops)]
