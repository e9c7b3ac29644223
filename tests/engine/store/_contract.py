"""The hand-built batches and the in-test oracle shared by the backend contract tests.

Three batches of entities, node and edge versions, closes and meta, built by hand (no planner). ``Model``
is the oracle: a dict of rows by vid, filtered and ordered in plain Python from the ScanFilter docstring.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from tests.conftest import require_backend
from tgms.engine.store.backends import backend_class
from tgms.engine.store.backends.base import Backend
from tgms.engine.store.model import (
    EDGE_SCHEMA,
    ENTITY_SCHEMA,
    NODE_SCHEMA,
    BatchChanges,
    ScanFilter,
    edge_eid,
    node_ident_hash,
    vid_of,
)
from tgms.engine.timeutil import OPEN_END

Row = dict[str, Any]
UIDS = {"a": 0, "b": 1, "c": 2, "d": 3}
T1, T2, T3 = 100, 200, 300


def require(name: str) -> type[Backend]:
    """The backend class; skip (only) while its driver package is not installed."""
    return backend_class(require_backend(name))


# -- hand-built batches -------------------------------------------------------------------------------
def node(uid: str, vt_s: int, vt_e: int, tt_s: int, props: str | None, **kw: Any) -> Row:
    vid = vid_of(node_ident_hash(uid), tt_s, vt_s)
    row = {"vid": vid, "nid": UIDS[uid], "uid": uid, "label": kw.get("label", "P"), "props": props}
    row |= {"vt_s": vt_s, "vt_e": vt_e, "tt_s": tt_s, "tt_e": OPEN_END}
    return row | {"source": kw.get("source"), "provenance_ref": kw.get("prov")}


def edge(src: str, dst: str, rel: str, disc: str, vt_s: int, vt_e: int, tt_s: int, props: str | None) -> Row:
    eid = edge_eid(src, dst, rel, disc)
    row = {"vid": vid_of(eid, tt_s, vt_s), "eid": eid, "src": UIDS[src], "dst": UIDS[dst], "rel_type": rel}
    row |= {"disc": disc, "props": props, "vt_s": vt_s, "vt_e": vt_e, "tt_s": tt_s, "tt_e": OPEN_END}
    return row | {"source": "s" if rel == "MSG" else None, "provenance_ref": "" if rel == "MSG" else None}


def batch(seq: int, tt: int, ents: list[str], nodes: list[Row], edges: list[Row], **kw: Any) -> BatchChanges:
    return BatchChanges(
        seq=seq,
        tt=tt,
        new_entities=pa.Table.from_pylist([{"nid": UIDS[u], "uid": u} for u in ents], schema=ENTITY_SCHEMA),
        node_inserts=pa.Table.from_pylist(nodes, schema=NODE_SCHEMA),
        edge_inserts=pa.Table.from_pylist(edges, schema=EDGE_SCHEMA),
        node_closes=kw.get("node_closes", []),
        edge_closes=kw.get("edge_closes", []),
        meta={"last_seq": str(seq), "last_tt": str(tt)} | kw.get("meta", {}),
    )


A1 = node("a", 0, 1000, T1, '{"age":30}', source="s1")
B1 = node("b", 0, 500, T1, None, source="", prov="")  # null props, "" strings
B2 = node("b", 500, OPEN_END, T1, "", prov="p:1")  # a second fragment of b in the same batch
C1 = node("c", 10, 20, T1, "{}", label="Q")
AB1 = edge("a", "b", "KNOWS", "", 10, 50, T1, None)
BC1 = edge("b", "c", "MSG", "m3", 20, 21, T1, '{"text":"hi"}')
CA1 = edge("c", "a", "MSG", "m2", 20, 21, T1, "")  # same vt_s as BC1: ordered by eid (not by vid)
AC1 = edge("a", "c", "KNOWS", "x", 5, 500, T1, "")
AA1 = edge("a", "a", "SELF", "", 0, OPEN_END, T1, None)  # a self-loop
A2 = node("a", 0, 1000, T2, '{"age":31}')
D2 = node("d", 0, OPEN_END, T2, None)
AB2 = edge("a", "b", "KNOWS", "", 10, 30, T2, None)
DA2 = edge("d", "a", "MSG", "", 300, 301, T2, None)  # d is a new entity of the same batch


def batches() -> list[BatchChanges]:
    return [
        batch(1, T1, ["b", "a", "c"], [A1, B1, B2, C1], [AB1, BC1, CA1, AC1, AA1]),  # entities out of order
        batch(2, T2, ["d"], [A2, D2], [AB2, DA2], node_closes=[A1["vid"]], edge_closes=[AB1["vid"]]),
        # closing A1 again is a no-op (already closed); B1 and AC1 are closed at T3; meta is upserted
        batch(
            3, T3, [], [], [], node_closes=[A1["vid"], B1["vid"]], edge_closes=[AC1["vid"]], meta={"note": ""}
        ),
    ]


class Model:
    """The oracle: every version row by vid, with the closes applied."""

    def __init__(self) -> None:
        self.nodes: dict[int, Row] = {}
        self.edges: dict[int, Row] = {}
        self.meta: dict[str, str] = {}
        self.entities: dict[int, str] = {}

    def apply(self, ch: BatchChanges) -> None:
        self.entities |= {r["nid"]: r["uid"] for r in ch.new_entities.to_pylist()}
        for rows, inserts, closes in (
            (self.nodes, ch.node_inserts, ch.node_closes),
            (self.edges, ch.edge_inserts, ch.edge_closes),
        ):
            for vid in closes:
                if rows[vid]["tt_e"] == OPEN_END:
                    rows[vid] = rows[vid] | {"tt_e": ch.tt}
            rows.update({r["vid"]: dict(r) for r in inserts.to_pylist()})
        self.meta |= ch.meta

    def scan(self, kind: str, f: ScanFilter) -> list[Row]:
        out = []
        for r in (self.nodes if kind == "node" else self.edges).values():
            ok = [
                f.all_beliefs
                or (r["tt_e"] == OPEN_END if f.as_of_tt is None else r["tt_s"] <= f.as_of_tt < r["tt_e"]),
                f.valid_at is None or r["vt_s"] <= f.valid_at < r["vt_e"],
                f.vt_overlap is None or (r["vt_s"] < f.vt_overlap[1] and r["vt_e"] > f.vt_overlap[0]),
                f.vt_start_in is None or f.vt_start_in[0] <= r["vt_s"] < f.vt_start_in[1],
                f.vids is None or r["vid"] in f.vids,
            ]
            if kind == "node":
                ok += [f.nids is None or r["nid"] in f.nids, f.ids is None or r["nid"] in f.ids]
            else:
                ok += [
                    f.rel_types is None or r["rel_type"] in f.rel_types,
                    f.nids is None or r["src"] in f.nids or r["dst"] in f.nids,
                    f.src is None or r["src"] in f.src,
                    f.dst is None or r["dst"] in f.dst,
                    f.ids is None or r["eid"] in f.ids,
                ]
            if all(ok):
                censor = not f.all_beliefs and f.as_of_tt is not None and r["tt_e"] > f.as_of_tt
                out.append(r | {"tt_e": OPEN_END} if censor else dict(r))
        key = ("nid", "vt_s", "vid") if kind == "node" else ("vt_s", "eid", "vid")
        return sorted(out, key=lambda r: tuple(r[k] for k in key))


#: filters that only make sense for edge scans (eids are not int32 nids)
EDGE_ONLY = frozenset({"edge-ids"})


def model_after(n: int = 3) -> Model:
    m = Model()
    for ch in batches()[:n]:
        m.apply(ch)
    return m


FILTERS: dict[str, ScanFilter] = {
    "current": ScanFilter(),
    "before-any-batch": ScanFilter(as_of_tt=T1 - 1),
    "as-of-T1": ScanFilter(as_of_tt=T1),
    "as-of-past-censored": ScanFilter(as_of_tt=150),
    "as-of-T2": ScanFilter(as_of_tt=T2),
    "as-of-250": ScanFilter(as_of_tt=250),
    "as-of-future": ScanFilter(as_of_tt=10**9),
    "all-beliefs": ScanFilter(all_beliefs=True),
    "all-beliefs-wins-over-as-of": ScanFilter(all_beliefs=True, as_of_tt=150),
    "valid-at-20": ScanFilter(valid_at=20),
    "valid-at-600-all": ScanFilter(valid_at=600, all_beliefs=True),
    "vt-overlap": ScanFilter(vt_overlap=(15, 25)),
    "vt-overlap-past": ScanFilter(vt_overlap=(40, 60), as_of_tt=150),
    "vt-overlap-bounds": ScanFilter(vt_overlap=(21, 300), all_beliefs=True),  # vt_e == 21, vt_s == 300 out
    "vt-start-in": ScanFilter(vt_start_in=(20, 21), all_beliefs=True),
    "vt-start-in-bounds": ScanFilter(vt_start_in=(0, 20), all_beliefs=True),  # vt_s == 20 out
    "rel-types": ScanFilter(rel_types=("MSG",), all_beliefs=True),
    "rel-types-two": ScanFilter(rel_types=("SELF", "KNOWS")),
    "rel-types-empty": ScanFilter(rel_types=()),
    "nids-a": ScanFilter(nids=(0,), all_beliefs=True),
    "nids-many": ScanFilter(nids=(3, 2, 1)),
    "nids-empty": ScanFilter(nids=()),
    "nids-duplicates": ScanFilter(nids=(2, 0, 2, 0), all_beliefs=True),
    "src": ScanFilter(src=(0, 3), all_beliefs=True),
    "dst": ScanFilter(dst=(0, 2)),
    "src-and-dst": ScanFilter(src=(0,), dst=(0, 1), all_beliefs=True),
    "node-ids": ScanFilter(ids=(0, 1), all_beliefs=True),
    "edge-ids": ScanFilter(ids=(AB1["eid"], DA2["eid"], 12345), all_beliefs=True),
    "vids": ScanFilter(vids=(A1["vid"], B2["vid"], AB1["vid"], AA1["vid"], 7), as_of_tt=150),
    "vids-duplicates": ScanFilter(vids=(A1["vid"], A1["vid"], AB1["vid"], AB1["vid"]), all_beliefs=True),
    "combined": ScanFilter(as_of_tt=150, valid_at=20, rel_types=("MSG", "KNOWS"), nids=(0, 1, 2)),
}


def rows(t: pa.Table) -> list[Row]:
    return t.to_pylist()


def bad_batch(name: str) -> BatchChanges:
    """A batch 2 whose last part the backend must refuse (each backend enforces different constraints)."""
    ch = batches()[1]
    if name == "kuzu":  # an edge to an entity that does not exist
        bad = edge("d", "a", "MSG", "zz", 400, 401, T2, None) | {"dst": 77}
    else:  # a NOT NULL column left null
        bad = edge("d", "a", "MSG", "zz", 400, 401, T2, None) | {"rel_type": None}
    ch.edge_inserts = pa.Table.from_pylist([AB2, DA2, bad], schema=EDGE_SCHEMA)
    return ch


def snapshot(db: Backend) -> tuple[Any, ...]:
    every = ScanFilter(all_beliefs=True)
    return db.scan_nodes(every), db.scan_edges(every), db.entities(), db.get_meta(), db.counts()
