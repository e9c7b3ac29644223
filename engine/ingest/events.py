"""Event frames: the unit the store's bulk path (``ingest_events``) takes.

An :class:`EventFrame` is one pyarrow Table of edge events of a single ``rel_type``::

    src    string  uid of the source node (non-empty, never null)
    dst    string  uid of the target node (non-empty, never null)
    t      int64   valid-time start, epoch microseconds UTC, in [0, OPEN_END)
    t_end  int64   nullable: null = an instantaneous event (valid [t, t+1)); else t < t_end <= OPEN_END
    props  string  nullable: canonical JSON object text (DESIGN §3.3); null = no props

plus ``rel_type`` (the edge type of every row), ``label`` (the label given to nodes first seen in this
frame), ``name`` (the data set's name) and ``source`` (which file or generator produced it). Rows keep the
order of the input: the store assigns duplicate-event discriminators in order of appearance.

:func:`check_event_frame` returns the first problem as a structured error (``E_SCHEMA`` for a wrong
shape, ``E_INVALID_ARG`` for a bad value) or ``None``; :meth:`EventFrame.validate` raises it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tgms.engine.canonical import dumps, dumps_canonical
from tgms.engine.errors import InvalidArgError, SchemaError, TGMSError
from tgms.engine.timeutil import OPEN_END

EVENT_COLUMNS: tuple[str, ...] = ("src", "dst", "t", "t_end", "props")

EVENT_SCHEMA = pa.schema(
    [
        pa.field("src", pa.string()),
        pa.field("dst", pa.string()),
        pa.field("t", pa.int64()),
        pa.field("t_end", pa.int64()),
        pa.field("props", pa.string()),
    ]
)


def props_text(props: dict[str, Any] | None) -> str | None:
    """Canonical JSON text of one props object (``None`` and ``{}`` both mean "no props")."""
    if props is None:
        return None
    if not isinstance(props, dict):
        raise InvalidArgError("props must be a JSON object", type=type(props).__name__)
    if not props:
        return None
    return dumps(props)


def make_table(
    src: pa.Array | Sequence[str],
    dst: pa.Array | Sequence[str],
    t: pa.Array | np.ndarray | Sequence[int],
    t_end: pa.Array | np.ndarray | Sequence[int | None] | None = None,
    props: pa.Array | Sequence[str | None] | None = None,
) -> pa.Table:
    """Assemble an event table in :data:`EVENT_SCHEMA` (``t_end``/``props`` default to all-null)."""
    n = len(t)
    cols = [
        _as_array(src, pa.string()),
        _as_array(dst, pa.string()),
        _as_array(t, pa.int64()),
        pa.nulls(n, pa.int64()) if t_end is None else _as_array(t_end, pa.int64()),
        pa.nulls(n, pa.string()) if props is None else _as_array(props, pa.string()),
    ]
    lengths = {len(c) for c in cols}
    if len(lengths) != 1:
        raise SchemaError("event columns have different lengths", lengths=[len(c) for c in cols])
    return pa.Table.from_arrays(cols, schema=EVENT_SCHEMA)


def _as_array(values: Any, typ: pa.DataType) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values if values.type == typ else values.cast(typ)
    if isinstance(values, np.ndarray):
        return pa.array(values, type=typ)
    return pa.array(list(values), type=typ)


@dataclass(frozen=True, slots=True)
class EventFrame:
    """A table of edge events of one ``rel_type``; see the module docstring for the columns."""

    table: pa.Table
    rel_type: str
    label: str = "user"
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        err = _check_shape(self.table, self.rel_type, self.label, self.name)
        if err is not None:
            raise err

    # ---- size and access -------------------------------------------------------------------------------
    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def is_instantaneous(self) -> bool:
        """True when every row is an instantaneous event (``t_end`` all null)."""
        return self.table.column("t_end").null_count == self.table.num_rows

    def node_uids(self) -> list[str]:
        """Distinct uids in order of first appearance (row by row, ``src`` before ``dst``)."""
        if self.num_rows == 0:
            return []
        src = self.table.column("src").combine_chunks()
        dst = self.table.column("dst").combine_chunks()
        # interleave src and dst so that first appearance follows row order
        inter = pc.take(pa.concat_arrays([src, dst]), _interleave_index(len(src)))
        return pc.unique(inter).to_pylist()

    def n_nodes(self) -> int:
        src = self.table.column("src")
        dst = self.table.column("dst")
        return len(pc.unique(pa.chunked_array(src.chunks + dst.chunks, type=pa.string())))

    def time_extent(self) -> tuple[int, int] | None:
        """``(min t, max end)`` over the frame (an instant at t ends at t+1), or None when empty."""
        if self.num_rows == 0:
            return None
        t = self.table.column("t")
        ends = pc.if_else(pc.is_null(self.table.column("t_end")), pc.add(t, 1), self.table.column("t_end"))
        return int(pc.min(t).as_py()), int(pc.max(ends).as_py())

    def chunks(self, max_rows: int) -> Iterator[EventFrame]:
        """Consecutive zero-copy slices of at most ``max_rows`` rows, in row order."""
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise InvalidArgError("max_rows must be a positive integer", field="max_rows", value=max_rows)
        n = self.num_rows
        for start in range(0, n, max_rows):
            yield replace(self, table=self.table.slice(start, min(max_rows, n - start)))

    # ---- validation and identity -----------------------------------------------------------------------
    def check(self, *, check_props: bool = True) -> TGMSError | None:
        """The first problem of this frame as a structured error, or None (see :func:`check_event_frame`)."""
        return check_event_frame(self, check_props=check_props)

    def validate(self, *, check_props: bool = True) -> EventFrame:
        """Raise the first problem (``SchemaError`` / ``InvalidArgError``); return self when valid."""
        err = self.check(check_props=check_props)
        if err is not None:
            raise err
        return self

    def digest(self) -> str:
        """SHA-256 of the frame's content, independent of how the table is chunked in memory."""
        return frame_digest(self)


def _interleave_index(n: int) -> pa.Array:
    idx = np.empty(2 * n, dtype=np.int64)
    idx[0::2] = np.arange(n)
    idx[1::2] = np.arange(n, 2 * n)
    return pa.array(idx)


def _check_shape(table: Any, rel_type: Any, label: Any, name: Any) -> TGMSError | None:
    if not isinstance(table, pa.Table):
        return SchemaError("an event frame wraps a pyarrow Table", type=type(table).__name__)
    for field_name, value in (("rel_type", rel_type), ("label", label)):
        if not isinstance(value, str) or not value:
            return SchemaError(f"{field_name} must be a non-empty string", field=field_name, value=value)
    if not isinstance(name, str):
        return SchemaError("name must be a string", field="name", value=name)
    names = table.schema.names
    if tuple(names) != EVENT_COLUMNS:
        return SchemaError(
            "event table must have exactly the columns src, dst, t, t_end, props (in this order)",
            expected=list(EVENT_COLUMNS),
            got=list(names),
        )
    for f in EVENT_SCHEMA:
        got = table.schema.field(f.name).type
        if got != f.type:
            return SchemaError(
                f"column {f.name} must have type {f.type}", column=f.name, expected=str(f.type), got=str(got)
            )
    return None


def check_event_frame(frame: EventFrame, *, check_props: bool = True) -> TGMSError | None:
    """Validate an event frame's content; return the first problem as a structured error, or None.

    Checks: ``src``/``dst`` non-null and non-empty, and ``src != dst`` is *not* required (self-loops are
    legal events); ``t`` non-null in ``[0, OPEN_END)``; ``t_end`` null or ``t < t_end <= OPEN_END``;
    ``props`` null or the canonical JSON text of a non-empty object (NaN/inf refused). Details name the
    ``column`` and the 0-based ``row`` of the first offending row.
    """
    table = frame.table
    err = _check_shape(table, frame.rel_type, frame.label, frame.name)
    if err is not None:
        return err
    for col in ("src", "dst"):
        arr = table.column(col)
        bad = pc.or_kleene(pc.is_null(arr), pc.equal(pc.binary_length(arr), 0))
        row = _first_true(bad)
        if row is not None:
            return SchemaError(f"{col} must be a non-empty uid string", column=col, row=row)
    t = table.column("t")
    row = _first_true(pc.is_null(t))
    if row is not None:
        return SchemaError("t must not be null", column="t", row=row)
    row = _first_true(pc.or_(pc.less(t, 0), pc.greater_equal(t, OPEN_END)))
    if row is not None:
        return InvalidArgError(
            "t must lie in [0, 2**62) microseconds", column="t", row=row, value=_at(t, row)
        )
    t_end = table.column("t_end")
    bad_end = pc.fill_null(pc.or_(pc.less_equal(t_end, t), pc.greater(t_end, OPEN_END)), False)
    row = _first_true(bad_end)
    if row is not None:
        return InvalidArgError(
            "t_end must be null (instantaneous) or satisfy t < t_end <= 2**62",
            column="t_end",
            row=row,
            t=_at(t, row),
            t_end=_at(t_end, row),
        )
    if check_props:
        return _check_props(table.column("props"))
    return None


def _check_props(props: pa.ChunkedArray) -> TGMSError | None:
    uniq = pc.unique(props.drop_null())
    for text in uniq.to_pylist():
        problem = _props_problem(text)
        if problem is not None:
            row = _first_true(pc.fill_null(pc.equal(props, text), False))
            return (SchemaError if problem[0] == "schema" else InvalidArgError)(
                problem[1], column="props", row=row, value=text[:200]
            )
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in props")


def _props_problem(text: str) -> tuple[str, str] | None:
    try:
        obj = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        return "schema", f"props is not valid JSON: {exc}"
    if not isinstance(obj, dict):
        return "schema", "props must be a JSON object"
    if not obj:
        return "schema", "empty props must be null, not {}"
    try:
        canon = dumps(obj)
    except TGMSError as exc:
        return "invalid", f"props value refused: {exc.message}"
    if canon != text:
        return "schema", "props is not canonical JSON (sorted keys, no spaces, floats rounded to 9 decimals)"
    return None


def _first_true(mask: pa.ChunkedArray | pa.Array) -> int | None:
    if not pc.any(mask).as_py():
        return None
    return int(pc.index(mask, True).as_py())


def _at(col: pa.ChunkedArray, row: int) -> Any:
    return col[row].as_py()


def frame_digest(frame: EventFrame) -> str:
    """SHA-256 over the frame's metadata and column values, independent of in-memory chunk layout."""
    h = hashlib.sha256()
    h.update(
        dumps_canonical(["tgms-events-v1", frame.rel_type, frame.label, frame.name, frame.num_rows]).encode()
    )
    for col in EVENT_COLUMNS:
        h_null, h_len, h_val = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()
        for chunk in frame.table.column(col).chunks:
            h_null.update(np.asarray(pc.is_null(chunk)).tobytes())
            filled = pc.fill_null(chunk, "" if pa.types.is_string(chunk.type) else 0)
            if pa.types.is_string(chunk.type):
                _hash_strings(filled, h_len, h_val)
            else:
                h_val.update(np.asarray(filled, dtype=np.int64).tobytes())
        for part in (h_null, h_len, h_val):
            h.update(part.digest())
    return h.hexdigest()


def _hash_strings(arr: pa.Array, h_len: Any, h_val: Any) -> None:
    if len(arr) == 0:
        return
    offsets_buf, data_buf = arr.buffers()[1], arr.buffers()[2]
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[arr.offset : arr.offset + len(arr) + 1]
    h_len.update(np.diff(offsets).astype(np.int32).tobytes())
    if data_buf is not None and offsets[-1] > offsets[0]:
        h_val.update(memoryview(data_buf)[int(offsets[0]) : int(offsets[-1])])


def concat_frames(frames: Sequence[EventFrame]) -> EventFrame:
    """One frame from several of the same ``rel_type`` (metadata taken from the first)."""
    if not frames:
        raise InvalidArgError("concat_frames needs at least one frame")
    first = frames[0]
    for f in frames[1:]:
        if f.rel_type != first.rel_type:
            raise InvalidArgError(
                "cannot concatenate frames of different rel_types", rel_types=[x.rel_type for x in frames]
            )
    return replace(first, table=pa.concat_tables([f.table.cast(EVENT_SCHEMA) for f in frames]))
