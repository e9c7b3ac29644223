"""Belief history: belief_changes — what the store's belief gained and lost between two transaction
times. Semantics: ``docs/operators.md`` §17.

Every batch at ``tt`` closes some versions (their ``tt_e`` becomes ``tt``) and creates others (``tt_s =
tt``); the store keeps both, so the batch's effect on one identity (a node uid, an edge eid) is read back
from its rows without the event log:

- a created version with the same content as a closed one and inside its valid interval is a *remainder*
  of it (what a retract or a correction left of the old version);
- every other created version is new content: ``corrected`` (one row per closed version it overlaps in
  valid time, ``before`` that version) or, overlapping none, ``asserted``;
- a closed version that no new content overlaps is ``closed`` (one row per remainder: its valid end was
  cut, a retract) or, with nothing left, ``retracted``.

Fast path: one pushed-down scan of every version (all beliefs; one uid's when ``uid`` is given), the
window filter in Arrow, and the per-identity matching only for the identities a batch in the window
closed something of: the common case, a batch that only adds, is classified in numpy. Rows are built only
for the page read (:class:`LazyRows`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field, model_validator

from tgms.engine.errors import NotFoundError
from tgms.engine.operators.arrow_take import take_rows
from tgms.engine.operators.base import (
    MAX_LIST,
    Model,
    OneOf,
    OpArgs,
    PagedOutput,
    Time,
    TimeEnd,
    Uid,
    invalid,
)
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import CostEstimate, StoreProfile
from tgms.engine.operators.lazy_rows import LazyRows
from tgms.engine.operators.registry import operator
from tgms.engine.operators.rows import EdgeVersionRow, NodeVersionRow
from tgms.engine.operators.traits import NonEmpty
from tgms.engine.store.model import ScanFilter
from tgms.engine.timeutil import OPEN_END

KINDS = ("asserted", "corrected", "retracted", "closed")
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}
#: the columns that say what a version states (besides its ids and where it sits in time)
_CONTENT = {"node": ("uid", "label", "props", "source", "provenance_ref"),
            "edge": ("src", "dst", "rel_type", "disc", "props", "source", "provenance_ref")}  # fmt: skip


class BeliefChangesArgs(OpArgs):
    tt_from: Time
    tt_to: TimeEnd
    uid: Annotated[Uid | None, Field(description="its node and the edges touching it")] = None
    kinds: Annotated[list[Annotated[str, OneOf(KINDS)]] | None, NonEmpty(), Field(max_length=MAX_LIST)] = None

    @model_validator(mode="after")
    def _ordered(self) -> BeliefChangesArgs:
        if self.tt_from >= self.tt_to:
            raise invalid(f"tt_from must be < tt_to (got tt_from={self.tt_from}, tt_to={self.tt_to})")
        return self


class BeliefChangeRow(Model):
    tt: int
    change: str
    entity: str
    uid: str | None
    eid: int | None
    before: NodeVersionRow | EdgeVersionRow | None
    after: NodeVersionRow | EdgeVersionRow | None


class BeliefChangesOut(PagedOutput):
    rows: list[BeliefChangeRow]
    rows_total: int


def _horizon(a: BeliefChangesArgs) -> int:
    """Batches at tt < horizon are seen; a result pinned below the present never changes (invariant 2)."""
    return a.tt_to if a.as_of_tt is None else min(a.tt_to, a.as_of_tt + 1)


#: scan rows per version (measured on 10^6 synthetic versions, 2 cores): ~48 read, classified and ordered
#: store-wide (1.75 s), ~27 when no assertion is wanted; a uid's filter costs ~3 per version in DuckDB
_PER_VERSION, _PER_FILTERED = 50.0, 3.0


def _cost(p: StoreProfile, a: BeliefChangesArgs) -> CostEstimate:
    # every version is scanned (closed ones too: about 1.2x the believed edges on corrected stores); with
    # a uid the backend filters them and only that node's (at most the largest degree's) are classified
    versions = 1.2 * (p.n_edges + p.n_nodes)
    if a.uid is not None:
        touched = 1.2 * max(1, p.max_degree)
        work = _PER_FILTERED * versions + _PER_VERSION * touched
    else:
        touched = versions
        work = _PER_VERSION * versions
    return CostEstimate(
        {"scan_row": work, "row_out": min(a.limit, touched)},
        ["give uid to see one entity's changes", "narrow tt_from..tt_to", "page with a smaller limit"],
    )


def _window(t: pa.Table, lo: int, hi: int) -> pa.Table:
    ts, te = t["tt_s"], t["tt_e"]
    born = pc.and_(pc.greater_equal(ts, lo), pc.less(ts, hi))
    died = pc.and_(pc.greater_equal(te, lo), pc.less(te, hi))
    return t.filter(pc.or_(born, died))


class _Side:
    """One entity kind's versions in the window and the change rows drawn from them."""

    def __init__(self, ctx: OpContext, entity: str, table: pa.Table, lo: int, hi: int) -> None:
        self.entity, self.table, self.ctx, self.hi = entity, table, ctx, hi
        ident_col = "nid" if entity == "node" else "eid"
        self.ident = table[ident_col].to_numpy()
        self.tt_s = table["tt_s"].to_numpy()
        self.tt_e = table["tt_e"].to_numpy()
        self.vid = table["vid"].to_numpy()
        self.born = (self.tt_s >= lo) & (self.tt_s < hi)
        self.died = (self.tt_e >= lo) & (self.tt_e < hi)

    def changes(self, wanted: set[int]) -> np.ndarray:
        """``(change code, before index | -1, after index | -1, tt)`` rows (int64, shape (n, 4)) for every
        change of a wanted kind, unordered."""
        parts = [np.zeros((0, 4), np.int64)]
        touched = np.isin(self.ident, self.ident[self.died]) if self.died.any() else np.zeros(0, bool)
        plain = self.born & ~touched if len(touched) else self.born
        asserted = _KIND_CODE["asserted"]
        if asserted in wanted:  # a batch that only adds: every row it created is an assertion (numpy)
            rows = np.flatnonzero(plain)
            parts.append(np.column_stack([np.full(len(rows), asserted), np.full(len(rows), -1), rows,
                                          self.tt_s[rows]]).astype(np.int64))  # fmt: skip
        if len(touched) and touched.any():
            matched = [c for c in self._matched(np.flatnonzero(touched)) if c[0] in wanted]
            parts.append(np.array(matched, np.int64).reshape(-1, 4))
        return np.concatenate(parts)

    def order_keys(self, ch: np.ndarray, entity_code: int) -> list[np.ndarray]:
        """Sort keys of change rows, least significant first (for np.lexsort): the before's vid (rows
        without one first), the main version's vid (after's, else before's), the identity, the entity,
        tt. A node's identity orders by uid: the uids of the nids present are ranked once."""
        b, a = ch[:, 1], ch[:, 2]
        main = np.where(a >= 0, a, b)
        ident = self.ident[main].astype(np.int64)
        if self.entity == "node" and len(ch):
            present = np.unique(ident)
            uids = self.ctx.uids()
            ranked = sorted(range(len(present)), key=lambda i: uids[int(present[i])])
            rank = np.empty(len(present), np.int64)
            rank[ranked] = np.arange(len(present))
            ident = rank[np.searchsorted(present, ident)]
        has_b = b >= 0
        b_vid = np.where(has_b, self.vid[np.maximum(b, 0)], 0)
        return [b_vid, has_b, self.vid[main], ident, np.full(len(ch), entity_code), ch[:, 3]]

    def _matched(self, idx: np.ndarray) -> list[tuple[int, int, int, int]]:
        cols = [self.table[c].take(pa.array(idx)).to_pylist() for c in _CONTENT[self.entity]]
        content = dict(zip(idx.tolist(), zip(*cols, strict=True), strict=True))
        vt_s = self.table["vt_s"].to_numpy()
        vt_e = self.table["vt_e"].to_numpy()
        groups: dict[tuple[int, int], tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for i in idx.tolist():
            if self.died[i]:
                groups[(int(self.ident[i]), int(self.tt_e[i]))][0].append(i)
            if self.born[i]:
                groups[(int(self.ident[i]), int(self.tt_s[i]))][1].append(i)
        out = []
        for (_ident, tt), (closed, new) in groups.items():

            def inside(n: int, c: int) -> bool:
                return bool(vt_s[c] <= vt_s[n] and vt_e[n] <= vt_e[c])

            def overlap(n: int, c: int) -> bool:
                return bool(vt_s[n] < vt_e[c] and vt_s[c] < vt_e[n])

            remainder_of = {n: [c for c in closed if content[n] == content[c] and inside(n, c)] for n in new}
            fresh = [n for n in new if not remainder_of[n]]
            for n in fresh:
                hit = [c for c in closed if overlap(n, c)]
                out += [(_KIND_CODE["corrected"], c, n, tt) for c in hit] or [
                    (_KIND_CODE["asserted"], -1, n, tt)
                ]
            for c in closed:
                if any(overlap(n, c) for n in fresh):
                    continue
                kept = [n for n in new if c in remainder_of[n]]
                out += [(_KIND_CODE["closed"], c, n, tt) for n in kept] or [
                    (_KIND_CODE["retracted"], c, -1, tt)
                ]
        return out

    def versions(self, idx: np.ndarray) -> list[dict[str, Any]]:
        """Version rows for table indices (one take for a page), tt_e at or past the horizon censored."""
        part = take_rows(self.table, idx)
        rows = self.ctx.node_rows(part) if self.entity == "node" else self.ctx.edge_rows(part)
        for r in rows:
            if r["tt_e"] >= self.hi:
                r["tt_e"] = OPEN_END
        return rows


class _ChangeRows(LazyRows):
    """Change rows held as (side, change) index arrays; a row's versions are built when it is read."""

    def __init__(self, sides: list[_Side], side: np.ndarray, changes: np.ndarray) -> None:
        super().__init__(np.arange(len(side)))
        self._sides, self._side, self._changes = sides, side, changes

    def _build(self, pos: np.ndarray) -> list[dict[str, Any]]:
        side_of, ch = self._side[pos], self._changes[pos]
        # every version the page shows, one take per side: (side, table index) -> row
        shown: dict[tuple[int, int], dict[str, Any]] = {}
        for k, side in enumerate(self._sides):
            idx = np.unique(ch[side_of == k][:, 1:3])
            idx = idx[idx >= 0]
            if len(idx):
                shown.update(zip(((k, i) for i in idx.tolist()), side.versions(idx), strict=True))
        out = []
        for k, (code, b, a, tt) in zip(side_of.tolist(), ch.tolist(), strict=True):
            side = self._sides[k]
            ident = int(side.ident[a if a >= 0 else b])
            out.append(
                {
                    "tt": tt,
                    "change": KINDS[code],
                    "entity": side.entity,
                    "uid": side.ctx.uids()[ident] if side.entity == "node" else None,
                    "eid": ident if side.entity == "edge" else None,
                    # a version shown twice in a page (one before, several rows) is one dict: copy
                    "before": dict(shown[(k, b)]) if b >= 0 else None,
                    "after": dict(shown[(k, a)]) if a >= 0 else None,
                }
            )
        return out


@operator(
    name="belief_changes",
    edge_arrays=False,  # reads every version, closed ones included, straight from the backend
    family="belief",
    args=BeliefChangesArgs,
    output=BeliefChangesOut,
    cost=_cost,
    manual=(
        "Lists what the store's belief gained and lost between two transaction times (tt_from <= tt < "
        "tt_to): for each batch and each node or edge it touched, the versions asserted (new facts), "
        "corrected (replaced by new content: before = the old version, after = the new one, a row per "
        "pair), closed (valid end cut short by a retract: after = what is left) and retracted (dropped "
        "whole: after = null), store-wide or for one `uid` (its node and the edges touching it), "
        "optionally only some `kinds`. Rows are ordered by (tt, entity, uid or eid, vid); with as_of_tt "
        "only batches up to as_of_tt are seen."
    ),
    example={
        "args": {"tt_from": 1700000000000000, "tt_to": 1700086400000000, "uid": "n9", "kinds": ["corrected"]},
        "outputs": ["rows", "rows_total"],
        "note": "each row: {tt, change, entity, uid, eid, before, after}; before/after are version rows",
    },
)
def belief_changes(ctx: OpContext, a: BeliefChangesArgs) -> dict[str, Any]:
    hi = _horizon(a)
    backend = ctx.store.backend
    nids: tuple[int, ...] | None = None
    if a.uid is not None:
        nid = ctx.nid_index().get(a.uid)
        if nid is None:
            raise NotFoundError(f"unknown uid {a.uid!r}", field="uid", uids=[a.uid])
        nids = (nid,)
    flt = ScanFilter(all_beliefs=True, nids=nids)
    nodes, edges = backend.scan_nodes(flt), backend.scan_edges(flt)
    if a.uid is not None and not any(
        pc.any(pc.less(t["tt_s"], hi)).as_py() for t in (nodes, edges) if t.num_rows
    ):
        raise NotFoundError(f"unknown uid {a.uid!r}", field="uid", uids=[a.uid])  # not yet believed then
    # entity order is the names' order: "edge" (0) before "node" (1)
    sides = [_Side(ctx, "edge", _window(edges, a.tt_from, hi), a.tt_from, hi),
             _Side(ctx, "node", _window(nodes, a.tt_from, hi), a.tt_from, hi)]  # fmt: skip
    wanted = set(range(len(KINDS))) if a.kinds is None else {_KIND_CODE[k] for k in a.kinds}
    changes = [s.changes(wanted) for s in sides]
    per_side = [s.order_keys(c, i) for i, (s, c) in enumerate(zip(sides, changes, strict=True))]
    keys = [np.concatenate(cols) for cols in zip(*per_side, strict=True)]
    # a key equal on every row does not order anything: a bulk load is one tt, one entity, no befores
    keys = [k for k in keys if len(k) and (k != k[0]).any()] or [np.zeros(len(keys[0]), np.int8)]
    order = np.lexsort(keys)
    side = np.concatenate([np.full(len(c), i, np.int8) for i, c in enumerate(changes)])[order]
    return {"rows": _ChangeRows(sides, side, np.concatenate(changes)[order]), "rows_total": len(order)}
