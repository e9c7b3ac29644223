"""``tgms stats``: what is in a store, as JSON-able data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from tgms.engine.store.model import ScanFilter
from tgms.engine.timeutil import OPEN_END, us_to_iso

if TYPE_CHECKING:
    from tgms.engine.store.store import Store


def store_stats(store: Store) -> dict[str, Any]:
    counts = store.backend.counts()
    current = ScanFilter()
    edges = store.backend.scan_edges(current)
    nodes = store.backend.scan_nodes(current)
    extent: dict[str, Any] = {"vt_min": None, "vt_max": None}
    if edges.num_rows or nodes.num_rows:
        starts = [pc.min(t["vt_s"]).as_py() for t in (edges, nodes) if t.num_rows]
        ends = [pc.max(t["vt_s"]).as_py() for t in (edges, nodes) if t.num_rows]
        finite = [
            pc.max(pc.filter(t["vt_e"], pc.less(t["vt_e"], OPEN_END))).as_py()
            for t in (edges, nodes)
            if t.num_rows
        ]
        vt_max = max([x for x in ends + finite if x is not None])
        extent = {
            "vt_min": min(starts),
            "vt_max": vt_max,
            "vt_min_utc": us_to_iso(min(starts)),
            "vt_max_utc": us_to_iso(vt_max),
        }
    rel_types: dict[str, int] = {}
    if edges.num_rows:
        vc = pc.value_counts(edges["rel_type"]).to_pylist()
        rel_types = {d["values"]: d["counts"] for d in sorted(vc, key=lambda d: d["values"])}
    meta = store.backend.get_meta()
    return {
        "backend": store.backend_name,
        "entities": counts["entities"],
        "nodes_current": int(pc.count_distinct(nodes["nid"]).as_py()) if nodes.num_rows else 0,
        "node_versions": counts["node_versions"],
        "edge_versions": counts["edge_versions"],
        "edge_versions_current": edges.num_rows,
        "edge_identities": counts["edge_identities"],
        "rel_types": rel_types,
        "extent": extent,
        "batches_applied": int(meta.get("last_seq", "0")),
        "last_tt": int(meta.get("last_tt", "0")),
    }
