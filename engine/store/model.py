"""The version model: identities, version ids, and the Arrow schemas every backend speaks.

A *node version* is ``vid, uid, label, props, vt_s, vt_e, tt_s, tt_e, source, provenance_ref``; an *edge
version* is ``vid, eid, src, dst, rel_type, disc, props, vt_s, vt_e, tt_s, tt_e, source, provenance_ref``.

Inside the store a uid is also known by a dense int32 ``nid`` (assigned in order of first appearance in the
event log, so it is the same on every backend and every replay); edges keep ``src``/``dst`` as nids. Strings
appear at the API edge only.

Identities hash to signed int64: a node's identity hash is ``hash64("n\\0" + uid)``; an edge's ``eid``
chains the splitmix64 finalizer over the node hashes of ``src`` and ``dst`` and ``hash64`` of ``rel_type``
and ``disc`` (order-sensitive), so the bulk path computes it per event in numpy from one string hash per
distinct uid. A ``vid`` mixes the identity hash with
``tt_s`` **and** ``vt_s`` (splitmix64 finalizer, the same in Python and vectorized numpy), so the several
fragments one batch carves out of one identity get distinct vids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from tgms.engine.canonical import hash64

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB


def _mix64(x: int) -> int:
    x = (x + _GOLDEN) & _M64
    x = ((x ^ (x >> 30)) * _C1) & _M64
    x = ((x ^ (x >> 27)) * _C2) & _M64
    return x ^ (x >> 31)


def _to_signed(x: int) -> int:
    return x - (1 << 64) if x >= (1 << 63) else x


def vid_of(ident_hash: int, tt_s: int, vt_s: int) -> int:
    """Version id of one version (identity hash, transaction start, valid start)."""
    h = _mix64(ident_hash & _M64)
    h = _mix64(h ^ (tt_s & _M64))
    h = _mix64(h ^ (vt_s & _M64))
    return _to_signed(h)


def _mix64_np(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(_GOLDEN)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(_C1)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(_C2)
        return x ^ (x >> np.uint64(31))


def vids_of(ident_hash: np.ndarray, tt_s: np.ndarray | int, vt_s: np.ndarray) -> np.ndarray:
    """Vectorized :func:`vid_of` (int64 in, int64 out)."""
    h = _mix64_np(np.asarray(ident_hash, dtype=np.int64).view(np.uint64))
    tt = np.broadcast_to(np.asarray(tt_s, dtype=np.int64), h.shape).view(np.uint64)
    h = _mix64_np(h ^ tt)
    h = _mix64_np(h ^ np.asarray(vt_s, dtype=np.int64).view(np.uint64))
    return h.view(np.int64)


def node_ident_hash(uid: str) -> int:
    return hash64("n\0" + uid)


def text_hash(text: str) -> int:
    """Hash of a rel_type or disc string (domain-separated from node hashes)."""
    return hash64("t\0" + text)


def edge_eid(src: str, dst: str, rel_type: str, disc: str) -> int:
    return eid_from_hashes(node_ident_hash(src), node_ident_hash(dst), text_hash(rel_type), text_hash(disc))


def eid_from_hashes(src_h: int, dst_h: int, rel_h: int, disc_h: int) -> int:
    h = _mix64(src_h & _M64)
    h = _mix64(h ^ (dst_h & _M64))
    h = _mix64(h ^ (rel_h & _M64))
    h = _mix64(h ^ (disc_h & _M64))
    return _to_signed(h)


def eids_from_hashes(src_h: np.ndarray, dst_h: np.ndarray, rel_h: int, disc_h: np.ndarray) -> np.ndarray:
    """Vectorized :func:`eid_from_hashes` (int64 arrays in, int64 out)."""
    u = np.uint64
    h = _mix64_np(np.asarray(src_h, dtype=np.int64).view(u))
    h = _mix64_np(h ^ np.asarray(dst_h, dtype=np.int64).view(u))
    h = _mix64_np(h ^ np.broadcast_to(np.asarray(rel_h, dtype=np.int64), h.shape).view(u))
    h = _mix64_np(h ^ np.asarray(disc_h, dtype=np.int64).view(u))
    return h.view(np.int64)


# Arrow schemas of the version tables as backends return them from scans. Both kinds of version end in
# the same columns: what the fact says and when it holds and was believed.
_VERSION_TAIL = [
    ("props", pa.string()),  # canonical JSON object text; null means {}
    ("vt_s", pa.int64()),
    ("vt_e", pa.int64()),
    ("tt_s", pa.int64()),
    ("tt_e", pa.int64()),
    ("source", pa.string()),
    ("provenance_ref", pa.string()),
]

NODE_SCHEMA = pa.schema(
    [("vid", pa.int64()), ("nid", pa.int32()), ("uid", pa.string()), ("label", pa.string()), *_VERSION_TAIL]
)

EDGE_SCHEMA = pa.schema(
    [
        ("vid", pa.int64()),
        ("eid", pa.int64()),
        ("src", pa.int32()),  # nid of the source node
        ("dst", pa.int32()),  # nid of the target node
        ("rel_type", pa.string()),
        ("disc", pa.string()),
        *_VERSION_TAIL,
    ]
)

ENTITY_SCHEMA = pa.schema([("nid", pa.int32()), ("uid", pa.string())])


@dataclass(frozen=True, slots=True, kw_only=True)
class _VersionTail:
    """The fields :data:`_VERSION_TAIL` names; keyword-only, so a subclass's identity fields may follow."""

    props: str | None
    vt_s: int
    vt_e: int
    tt_s: int
    tt_e: int
    source: str | None = None
    provenance_ref: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeVersion(_VersionTail):
    vid: int
    nid: int
    uid: str
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeVersion(_VersionTail):
    vid: int
    eid: int
    src: int
    dst: int
    rel_type: str
    disc: str


def node_versions_from(table: pa.Table) -> list[NodeVersion]:
    return [NodeVersion(**r) for r in table.select(NODE_SCHEMA.names).to_pylist()]


def edge_versions_from(table: pa.Table) -> list[EdgeVersion]:
    return [EdgeVersion(**r) for r in table.select(EDGE_SCHEMA.names).to_pylist()]


@dataclass(frozen=True, slots=True)
class ScanFilter:
    """What a scan pushes down into the backend.

    - ``as_of_tt``: ``None`` = current belief (``tt_e == OPEN_END``); an int ``a`` = versions believed at
      ``a`` (``tt_s <= a < tt_e``), with ``tt_e > a`` censored to ``OPEN_END`` in the result;
      ``all_beliefs=True`` returns every version, closed ones included, uncensored.
    - ``valid_at``: versions with ``vt_s <= t < vt_e``.
    - ``vt_overlap``: versions whose valid interval overlaps ``[a, b)``.
    - ``vt_start_in``: versions with ``a <= vt_s < b`` (events in a window).
    - ``rel_types``: edge rel types; ``nids``: nodes with these nids, or edges touching them
      (either endpoint); ``src``/``dst``: edges whose source / target is among these nids;
      ``ids``: node nids or edge eids (identity filter); ``vids``: these version ids.
    ``None`` means "no filter"; an empty tuple matches nothing.
    """

    as_of_tt: int | None = None
    all_beliefs: bool = False
    valid_at: int | None = None
    vt_overlap: tuple[int, int] | None = None
    vt_start_in: tuple[int, int] | None = None
    rel_types: tuple[str, ...] | None = None
    nids: tuple[int, ...] | None = None
    src: tuple[int, ...] | None = None
    dst: tuple[int, ...] | None = None
    ids: tuple[int, ...] | None = None
    vids: tuple[int, ...] | None = None


@dataclass(slots=True)
class BatchChanges:
    """The net effect of one batch, computed above the adapter and applied by it atomically."""

    seq: int
    tt: int
    new_entities: pa.Table  # ENTITY_SCHEMA
    node_inserts: pa.Table  # NODE_SCHEMA
    edge_inserts: pa.Table  # EDGE_SCHEMA
    node_closes: list[int] = field(default_factory=list)  # vids whose tt_e becomes tt
    edge_closes: list[int] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
