"""The bulk path for event streams (``ingest_events``), vectorized over Arrow and numpy.

Semantics are those of the general path: each event ``(src, dst, rel_type, t[, t_end])`` is an assert of
edge identity ``(src, dst, rel_type, disc)`` over ``[t, t_end)`` (``t_end`` defaults to ``t + 1``). The
``k``-th exact repeat of ``(src, dst, rel_type, t)`` inside one op gets ``disc = str(k)`` so that repeated
messages stay distinct facts (CollegeMsg has 36). A uid seen for the first time gets a node version with
the op's label, valid from its first event to ``OPEN_END``.

The fast path applies when no event overlaps another believed version of its identity (the usual case for
event streams). Identities where something does overlap — inside the op, or with the stored belief, or
with identities touched earlier in the same batch — go through the general carving path event by event,
so the outcome is the same as if every event had been asserted one at a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from tgms.engine.store.model import (
    EDGE_SCHEMA,
    NODE_SCHEMA,
    ScanFilter,
    eids_from_hashes,
    node_ident_hash,
    text_hash,
    vids_of,
)
from tgms.engine.store.ops import AssertEdge, IngestEvents
from tgms.engine.timeutil import OPEN_END

if TYPE_CHECKING:
    from tgms.engine.store.writer import BatchPlanner


def _uid_dictionary(planner: BatchPlanner, src: pa.Array, dst: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """nids of src and dst; uids never seen before get nids in order of first appearance."""
    n = len(src)
    inter = pa.concat_arrays([src, dst]).take(
        pa.array(np.stack([np.arange(n), np.arange(n) + n], axis=1).reshape(-1))
    )
    enc = inter.dictionary_encode()
    uniq = enc.dictionary.to_pylist()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    nid_of_code = np.empty(len(uniq), dtype=np.int32)
    for i, uid in enumerate(uniq):
        nid = planner.nid_of(uid)
        nid_of_code[i] = planner._new_nid(uid) if nid is None else nid
    nids = nid_of_code[codes].reshape(n, 2)
    return nids[:, 0], nids[:, 1]


def _repeat_rank(src: np.ndarray, dst: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each event, how many earlier events in the op have the same (src, dst, t)."""
    order = np.lexsort((np.arange(len(t)), t, dst, src))
    s, d, tt = src[order], dst[order], t[order]
    same = np.zeros(len(t), dtype=bool)
    same[1:] = (s[1:] == s[:-1]) & (d[1:] == d[:-1]) & (tt[1:] == tt[:-1])
    # rank inside each run of equal keys
    idx = np.arange(len(t))
    run_start = np.maximum.accumulate(np.where(same, 0, idx))
    rank_sorted = idx - run_start
    rank = np.empty(len(t), dtype=np.int64)
    rank[order] = rank_sorted
    return rank


def plan_ingest(planner: BatchPlanner, op: IngestEvents) -> None:
    n = len(op.t)
    if n == 0:
        return
    src_a = pa.array(op.src, pa.string())
    dst_a = pa.array(op.dst, pa.string())
    t = np.asarray(op.t, dtype=np.int64)
    if op.t_end is None:
        t_end = t + 1
    else:
        t_end = np.array([x if x is not None else -1 for x in op.t_end], dtype=np.int64)
        t_end = np.where(t_end < 0, t + 1, t_end)
    known_before = set(planner.new_entities)
    src, dst = _uid_dictionary(planner, src_a, dst_a)
    if op.disc is None:
        rank = _repeat_rank(src, dst, t)
        disc = np.where(rank == 0, "", rank.astype(str)).astype(object)
    else:  # discriminators computed over a whole frame that was logged in several chunks
        disc = np.array(op.disc, dtype=object)

    # edge ids: one string hash per distinct uid / disc, then vectorized mixing per event
    node_h = np.zeros(planner.next_nid, dtype=np.int64)
    for i in np.unique(np.concatenate([src, dst])).tolist():
        node_h[i] = node_ident_hash(planner.uid_of(i))
    disc_enc = pa.array(disc.tolist(), pa.string()).dictionary_encode()
    disc_h = np.array([text_hash(x) for x in disc_enc.dictionary.to_pylist()], dtype=np.int64)
    eid = eids_from_hashes(
        node_h[src],
        node_h[dst],
        text_hash(op.rel_type),
        disc_h[disc_enc.indices.to_numpy(zero_copy_only=False)],
    )

    conflict = _conflicting_eids(planner, eid, t, t_end)
    fast = ~np.isin(eid, conflict) if len(conflict) else np.ones(n, dtype=bool)

    # node versions for uids first seen in this op
    new_uids = [u for u in planner.new_entities if u not in known_before]
    if new_uids:
        _add_new_nodes(planner, op, new_uids, src, dst, t)

    if fast.any():
        idx = np.nonzero(fast)[0]
        props = pa.array(op.props, pa.string()).take(pa.array(idx)) if op.props is not None else None
        m = len(idx)
        table = pa.table(
            {
                "vid": vids_of(eid[idx], planner.tt, t[idx]),
                "eid": eid[idx],
                "src": src[idx],
                "dst": dst[idx],
                "rel_type": pa.array([op.rel_type] * m, pa.string()) if m else pa.array([], pa.string()),
                "disc": pa.array(disc[idx].tolist(), pa.string()),
                "props": props if props is not None else pa.nulls(m, pa.string()),
                "vt_s": t[idx],
                "vt_e": t_end[idx],
                "tt_s": np.full(m, planner.tt, dtype=np.int64),
                "tt_e": np.full(m, OPEN_END, dtype=np.int64),
                "source": pa.array([op.source] * m, pa.string()),
                "provenance_ref": pa.nulls(m, pa.string()),
            },
            schema=EDGE_SCHEMA,
        )
        planner.bulk_edges.append(table)
    if len(conflict):
        planner.preload_edges(conflict.tolist())
    for i in np.nonzero(~fast)[0].tolist():
        planner._assert_edge(
            AssertEdge(
                src=op.src[i],
                dst=op.dst[i],
                rel_type=op.rel_type,
                disc=str(disc[i]),
                props=_props_obj(op.props[i] if op.props is not None else None),
                vt_s=int(t[i]),
                vt_e=int(t_end[i]),
                source=op.source,
            ),
            f"ingest_events[{i}]",
        )


def _props_obj(text: str | None) -> dict:
    import json

    return json.loads(text) if text else {}


def _conflicting_eids(planner: BatchPlanner, eid: np.ndarray, t: np.ndarray, t_end: np.ndarray) -> np.ndarray:
    """Edge ids whose events overlap each other, the stored belief, or identities touched in this batch."""
    bad: list[np.ndarray] = []
    order = np.lexsort((t, eid))
    e, s, x = eid[order], t[order], t_end[order]
    if len(e) > 1:
        overl = (e[1:] == e[:-1]) & (s[1:] < x[:-1])
        bad.append(e[1:][overl])
    touched = np.array([k for k in planner.edges], dtype=np.int64)
    if len(touched):
        bad.append(touched[np.isin(touched, e)])
    already = [b["eid"].to_numpy() for b in planner.bulk_edges]
    if already:
        prev = np.concatenate(already)
        bad.append(np.intersect1d(prev, e))
    if planner.backend.counts()["edge_versions"]:
        uniq = np.unique(e)
        stored = planner.backend.scan_edges(ScanFilter(ids=tuple(uniq.tolist())))
        if stored.num_rows:
            se = stored["eid"].to_numpy()
            ss = stored["vt_s"].to_numpy()
            sx = stored["vt_e"].to_numpy()
            # for each stored version, does any new event of its eid overlap it?
            lo = np.searchsorted(e, se, side="left")
            hi = np.searchsorted(e, se, side="right")
            for j in np.nonzero(hi > lo)[0].tolist():
                seg_s, seg_x = s[lo[j] : hi[j]], x[lo[j] : hi[j]]
                if np.any((seg_s < sx[j]) & (seg_x > ss[j])):
                    bad.append(np.array([se[j]], dtype=np.int64))
    return np.unique(np.concatenate(bad)) if bad else np.array([], dtype=np.int64)


def _add_new_nodes(
    planner: BatchPlanner,
    op: IngestEvents,
    new_uids: list[str],
    src: np.ndarray,
    dst: np.ndarray,
    t: np.ndarray,
) -> None:
    nids = np.array([planner.new_entities[u] for u in new_uids], dtype=np.int32)
    both = np.concatenate([src, dst])
    times = np.concatenate([t, t])
    first = np.full(planner.next_nid, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, both, times)
    vt_s = first[nids]
    hashes = np.array([node_ident_hash(u) for u in new_uids], dtype=np.int64)
    m = len(new_uids)
    planner.bulk_nodes.append(
        pa.table(
            {
                "vid": vids_of(hashes, planner.tt, vt_s),
                "nid": nids,
                "uid": pa.array(new_uids, pa.string()),
                "label": pa.array([op.label] * m, pa.string()),
                "props": pa.nulls(m, pa.string()),
                "vt_s": vt_s,
                "vt_e": np.full(m, OPEN_END, dtype=np.int64),
                "tt_s": np.full(m, planner.tt, dtype=np.int64),
                "tt_e": np.full(m, OPEN_END, dtype=np.int64),
                "source": pa.array([op.source] * m, pa.string()),
                "provenance_ref": pa.nulls(m, pa.string()),
            },
            schema=NODE_SCHEMA,
        )
    )
