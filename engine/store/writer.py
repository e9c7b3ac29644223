"""Update semantics, implemented once above the backend adapter (DESIGN §3.2).

A batch is planned entirely in memory against the current belief of the identities it touches, and only
its net effect (:class:`BatchChanges`: inserted versions, closed vids, new entities) reaches the backend.
So a batch that fails on its third op has changed nothing, and the same log planned against the same state
gives the same changes on every backend.

Carving: writing ``[s, e)`` for an identity removes every believed version overlapping it and re-adds the
0, 1 or 2 remainder fragments outside ``[s, e)``. Removing a version written by an earlier batch *closes*
it (``tt_e := tt``); removing one written by this same batch drops it (an empty ``[tt, tt)`` belief is not a
belief). Within one identity believed intervals therefore stay pairwise disjoint (invariant 1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tgms.engine.canonical import dumps_canonical
from tgms.engine.errors import InvalidArgError, NotFoundError
from tgms.engine.store.backends.base import Backend
from tgms.engine.store.model import (
    EDGE_SCHEMA,
    ENTITY_SCHEMA,
    NODE_SCHEMA,
    BatchChanges,
    EdgeVersion,
    NodeVersion,
    ScanFilter,
    edge_eid,
    edge_versions_from,
    node_ident_hash,
    node_versions_from,
    vid_of,
)
from tgms.engine.store.ops import AssertEdge, AssertNode, Correct, IngestEvents, Op, Ref, Retract
from tgms.engine.timeutil import OPEN_END

Version = NodeVersion | EdgeVersion


def _props_text(props: dict[str, Any]) -> str | None:
    return dumps_canonical(props) if props else None


@dataclass
class _Identity:
    """The believed versions of one identity while a batch is planned."""

    kind: str  # "node" | "edge"
    key: int  # nid or eid
    ident_hash: int
    versions: list[Version] = field(default_factory=list)


class BatchPlanner:
    """Plans one batch: ``plan(ops)`` returns the :class:`BatchChanges` or raises a TGMSError."""

    def __init__(self, backend: Backend, seq: int, tt: int, entities: dict[str, int]) -> None:
        self.backend = backend
        self.seq = seq
        self.tt = tt
        self.entities = entities  # uid -> nid, as of before this batch (read only here)
        self.new_entities: dict[str, int] = {}
        self.next_nid = len(entities)
        self._uid_by_nid: list[str] | None = None  # built on first use
        self.nodes: dict[int, _Identity] = {}
        self.edges: dict[int, _Identity] = {}
        self.node_closes: list[int] = []
        self.edge_closes: list[int] = []
        self.bulk_edges: list[pa.Table] = []
        self.bulk_nodes: list[pa.Table] = []
        self.stats = {"versions_added": 0, "versions_closed": 0, "versions_dropped": 0}

    # -- identities ---------------------------------------------------------------------------------
    def nid_of(self, uid: str) -> int | None:
        nid = self.entities.get(uid)
        return nid if nid is not None else self.new_entities.get(uid)

    def _new_nid(self, uid: str) -> int:
        nid = self.next_nid
        self.new_entities[uid] = nid
        self.next_nid += 1
        if self._uid_by_nid is not None:
            self._uid_by_nid.append(uid)
        return nid

    def uid_of(self, nid: int) -> str:
        if self._uid_by_nid is None:
            by_nid = [""] * self.next_nid
            for mapping in (self.entities, self.new_entities):
                for uid, n in mapping.items():
                    by_nid[n] = uid
            self._uid_by_nid = by_nid
        return self._uid_by_nid[nid]

    def _node(self, nid: int, uid: str) -> _Identity:
        ident = self.nodes.get(nid)
        if ident is None:
            ident = _Identity("node", nid, node_ident_hash(uid))
            if nid < len(self.entities):
                t = self.backend.scan_nodes(ScanFilter(ids=(nid,)))
                ident.versions = list(node_versions_from(t))
            ident.versions += node_versions_from(_pull(self.bulk_nodes, "nid", nid))
            self.nodes[nid] = ident
        return ident

    def _edge(self, eid: int) -> _Identity:
        ident = self.edges.get(eid)
        if ident is None:
            ident = _Identity("edge", eid, eid)
            t = self.backend.scan_edges(ScanFilter(ids=(eid,)))
            ident.versions = list(edge_versions_from(t))
            ident.versions += edge_versions_from(_pull(self.bulk_edges, "eid", eid))
            self.edges[eid] = ident
        return ident

    def preload_edges(self, eids: list[int]) -> None:
        """Load the believed versions of many edge identities with one scan (bulk conflict path)."""
        todo = [e for e in eids if e not in self.edges]
        if not todo:
            return
        by_eid: dict[int, list[Version]] = {e: [] for e in todo}
        for v in edge_versions_from(self.backend.scan_edges(ScanFilter(ids=tuple(todo)))):
            by_eid[v.eid].append(v)
        for e in todo:
            ident = _Identity("edge", e, e, by_eid[e])
            ident.versions += edge_versions_from(_pull(self.bulk_edges, "eid", e))
            self.edges[e] = ident

    def _resolve(self, ref: Ref, where: str) -> tuple[_Identity, Version | None]:
        if ref.uid is not None:
            nid = self.nid_of(ref.uid)
            if nid is None:
                raise NotFoundError(f"unknown node uid {ref.uid!r}", at=where, ref=ref.to_json())
            return self._node(nid, ref.uid), None
        if ref.edge is not None:
            src, dst, rel, disc = ref.edge
            eid = edge_eid(src, dst, rel, disc)
            ident = self._edge(eid)
            if not ident.versions and not self._edge_ever_existed(eid):
                raise NotFoundError("unknown edge identity", at=where, ref=ref.to_json(), eid=eid)
            return ident, None
        if ref.eid is not None:
            ident = self._edge(ref.eid)
            if not ident.versions and not self._edge_ever_existed(ref.eid):
                raise NotFoundError("unknown edge eid", at=where, ref=ref.to_json())
            return ident, None
        # a version id: look among current beliefs of touched identities first, then the backend
        for ident in (*self.nodes.values(), *self.edges.values()):
            for v in ident.versions:
                if v.vid == ref.vid:
                    return ident, v
        flt = ScanFilter(vids=(ref.vid,))  # type: ignore[arg-type]
        owner: _Identity | None = None
        t = self.backend.scan_edges(flt)
        if t.num_rows:
            owner = self._edge(edge_versions_from(t)[0].eid)
        else:
            t = self.backend.scan_nodes(flt)
            if t.num_rows:
                n = node_versions_from(t)[0]
                owner = self._node(n.nid, n.uid)
        # the stored version may already have been carved away by an earlier op of this batch
        if owner is not None:
            found = next((x for x in owner.versions if x.vid == ref.vid), None)
            if found is not None:
                return owner, found
        raise NotFoundError("no currently believed version has this vid", at=where, ref=ref.to_json())

    def _edge_ever_existed(self, eid: int) -> bool:
        t = self.backend.scan_edges(ScanFilter(ids=(eid,), all_beliefs=True))
        return t.num_rows > 0

    # -- carving ------------------------------------------------------------------------------------
    def _carve(self, ident: _Identity, s: int, e: int) -> list[Version]:
        """Remove ``[s, e)`` from the identity's belief; return the versions that overlapped it."""
        hit = [v for v in ident.versions if v.vt_s < e and v.vt_e > s]
        if not hit:
            return hit
        keep = [v for v in ident.versions if not (v.vt_s < e and v.vt_e > s)]
        for v in hit:
            if v.tt_s == self.tt:
                self.stats["versions_dropped"] += 1
            else:
                (self.node_closes if ident.kind == "node" else self.edge_closes).append(v.vid)
                self.stats["versions_closed"] += 1
            if v.vt_s < s:
                keep.append(self._fragment(ident, v, v.vt_s, s))
            if v.vt_e > e:
                keep.append(self._fragment(ident, v, e, v.vt_e))
        ident.versions = keep
        return hit

    def _fragment(self, ident: _Identity, v: Version, s: int, e: int, **changes: Any) -> Version:
        return dataclasses.replace(
            v,
            vid=vid_of(ident.ident_hash, self.tt, s),
            vt_s=s,
            vt_e=e,
            tt_s=self.tt,
            tt_e=OPEN_END,
            **changes,
        )

    def _put(self, ident: _Identity, v: Version) -> None:
        self._carve(ident, v.vt_s, v.vt_e)
        ident.versions.append(v)

    # -- ops ----------------------------------------------------------------------------------------
    def plan(self, ops: Iterable[Op]) -> BatchChanges:
        for i, op in enumerate(ops):
            where = f"ops[{i}]"
            if isinstance(op, AssertNode):
                self._assert_node(op)
            elif isinstance(op, AssertEdge):
                self._assert_edge(op, where)
            elif isinstance(op, Retract):
                self._retract(op, where)
            elif isinstance(op, Correct):
                self._correct(op, where)
            elif isinstance(op, IngestEvents):
                self._ingest(op)
        return self._changes()

    def _asserted(self, op: AssertNode | AssertEdge) -> dict[str, Any]:
        """The version fields an assert gives a node or an edge alike: believed from this batch on."""
        return {
            "props": _props_text(op.props),
            "vt_s": op.vt_s,
            "vt_e": op.vt_e,
            "tt_s": self.tt,
            "tt_e": OPEN_END,
            "source": op.source,
            "provenance_ref": op.provenance_ref,
        }

    def _assert_node(self, op: AssertNode) -> None:
        nid = self.nid_of(op.uid)
        if nid is None:
            nid = self._new_nid(op.uid)
        ident = self._node(nid, op.uid)
        self._put(
            ident,
            NodeVersion(
                vid=vid_of(ident.ident_hash, self.tt, op.vt_s),
                nid=nid,
                uid=op.uid,
                label=op.label,
                **self._asserted(op),
            ),
        )

    def _assert_edge(self, op: AssertEdge, where: str) -> None:
        ends = []
        for name, uid in (("src", op.src), ("dst", op.dst)):
            nid = self.nid_of(uid)
            if nid is None:
                raise NotFoundError(
                    f"edge {name} {uid!r} is not a known node: assert the node first", at=where, field=name
                )
            ends.append(nid)
        eid = edge_eid(op.src, op.dst, op.rel_type, op.disc)
        ident = self._edge(eid)
        self._put(
            ident,
            EdgeVersion(
                vid=vid_of(eid, self.tt, op.vt_s),
                eid=eid,
                src=ends[0],
                dst=ends[1],
                rel_type=op.rel_type,
                disc=op.disc,
                **self._asserted(op),
            ),
        )

    def _retract(self, op: Retract, where: str) -> None:
        ident, version = self._resolve(op.ref, where)
        if version is not None and not version.vt_s < op.t < version.vt_e:
            raise InvalidArgError(
                "retract t must lie strictly inside the referenced version's valid interval",
                at=where,
                t=op.t,
                vt_s=version.vt_s,
                vt_e=version.vt_e,
            )
        if not self._carve(ident, op.t, OPEN_END):
            raise NotFoundError(
                "nothing is believed valid at or after t for this identity", at=where, ref=op.ref.to_json()
            )

    def _correct(self, op: Correct, where: str) -> None:
        ident, version = self._resolve(op.ref, where)
        if op.vt_s is None:
            assert version is not None  # parse_op guarantees an interval unless ref is a vid
            s, e = version.vt_s, version.vt_e
        else:
            s, e = op.vt_s, op.vt_e  # type: ignore[assignment]
        hit = self._carve(ident, s, e)
        if not hit:
            raise NotFoundError(
                "correct: no believed version of this identity overlaps [vt_s, vt_e)",
                at=where,
                ref=op.ref.to_json(),
                vt_s=s,
                vt_e=e,
            )
        template = min(hit, key=lambda v: v.vt_s)
        ident.versions.append(self._fragment(ident, template, s, e, props=_props_text(op.props)))

    # -- bulk events --------------------------------------------------------------------------------
    def _ingest(self, op: IngestEvents) -> None:
        from tgms.engine.store.bulk import plan_ingest

        plan_ingest(self, op)

    # -- result -------------------------------------------------------------------------------------
    def _changes(self) -> BatchChanges:
        nodes = [v for ident in self.nodes.values() for v in ident.versions if v.tt_s == self.tt]
        edges = [v for ident in self.edges.values() for v in ident.versions if v.tt_s == self.tt]
        node_t = _table(nodes, NODE_SCHEMA, self.bulk_nodes)
        edge_t = _table(edges, EDGE_SCHEMA, self.bulk_edges)
        if edge_t.num_rows > 1:
            edge_t = edge_t.sort_by([("vt_s", "ascending"), ("eid", "ascending"), ("vid", "ascending")])
        if node_t.num_rows > 1:
            node_t = node_t.sort_by([("nid", "ascending"), ("vt_s", "ascending")])
        for t in (node_t, edge_t):
            v = np.sort(t["vid"].to_numpy())
            if len(v) > 1 and bool((v[1:] == v[:-1]).any()):
                raise InvalidArgError("version id collision inside one batch", seq=self.seq)
        ents = pa.table(
            {"nid": list(self.new_entities.values()), "uid": list(self.new_entities.keys())},
            schema=ENTITY_SCHEMA,
        )
        self.stats["versions_added"] = node_t.num_rows + edge_t.num_rows
        return BatchChanges(
            seq=self.seq,
            tt=self.tt,
            new_entities=ents,
            node_inserts=node_t,
            edge_inserts=edge_t,
            node_closes=sorted(self.node_closes),
            edge_closes=sorted(self.edge_closes),
            meta={"last_seq": str(self.seq), "last_tt": str(self.tt), "next_nid": str(self.next_nid)},
        )


def _pull(bulk: list[pa.Table], column: str, key: int) -> pa.Table:
    """Remove and return the rows of one identity from the bulk tables of this batch."""
    found = []
    for i, t in enumerate(bulk):
        mask = pc.equal(t[column], key)
        if pc.any(mask).as_py():
            found.append(t.filter(mask))
            bulk[i] = t.filter(pc.invert(mask))
    if not found:
        return (NODE_SCHEMA if column == "nid" else EDGE_SCHEMA).empty_table()
    return pa.concat_tables(found)


def _table(rows: list[Version], schema: pa.Schema, bulk: list[pa.Table]) -> pa.Table:
    parts = list(bulk)
    if rows:
        parts.append(pa.Table.from_pylist([{n: getattr(r, n) for n in schema.names} for r in rows], schema))
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts).combine_chunks() if len(parts) > 1 else parts[0]
