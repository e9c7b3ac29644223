"""What an operator implementation runs against: the store plus cached, derived columnar indexes.

Derived data (sorted numpy arrays of the believed edges, the uid dictionary, per-node adjacency) is cached
per belief state and invalidated when the store's ``generation`` changes (any committed write). Integer nids
are used inside; uids appear only when a payload is built.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pyarrow as pa

from engine.errors import NotFoundError
from engine.store.model import ScanFilter

if TYPE_CHECKING:
    from engine.store.store import Store

_CACHE_SLOTS = 8


_SLICE_TAKE_MAX = 4096


def take_rows(table: Any, pos: np.ndarray) -> Any:
    """``table.take(pos)`` (a Table or a ChunkedArray), fast for a page of rows from a large multi-chunk one.

    Arrow's take over a chunked 10^7-row table costs ~80 ms even for 100 rows (it resolves chunks for the
    whole column); zero-copy slices of the runs of consecutive positions, concatenated, cost ~1 ms."""
    n = len(pos)
    if n == 0 or n > _SLICE_TAKE_MAX:
        return table.take(pa.array(pos, pa.int64()))
    pos = np.asarray(pos, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(pos) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [n]])
    parts = [
        table.slice(int(pos[a]), int(b - a)) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
    if len(parts) == 1:
        return parts[0]
    if isinstance(table, pa.ChunkedArray):
        return pa.chunked_array([c for p in parts for c in p.chunks], type=table.type)
    return pa.concat_tables(parts).combine_chunks()


class LazyRows(Sequence[dict[str, Any]]):
    """A payload list held as an index array; rows are built only for the slice that is read (the
    envelope reads one page of a list that may hold 10^5 rows). Subclasses implement :meth:`_build`."""

    def __init__(self, pos: np.ndarray) -> None:
        self._pos = pos

    def __len__(self) -> int:
        return len(self._pos)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if not isinstance(i, slice):
            j = range(len(self))[i]  # bounds and negative indices as a list has them
            return self[j : j + 1][0]
        pos = self._pos[i]
        return self._build(pos) if len(pos) else []

    def _build(self, pos: np.ndarray) -> list[dict[str, Any]]:
        raise NotImplementedError


@dataclass(frozen=True)
class EdgeArrays:
    """Believed edge versions at one belief state, sorted by ``(vt_s, eid, vid)`` (the scan order)."""

    table: pa.Table  # EDGE_SCHEMA, tt_e censored
    vid: np.ndarray
    eid: np.ndarray
    src: np.ndarray  # int32 nids
    dst: np.ndarray
    vt_s: np.ndarray
    vt_e: np.ndarray

    @property
    def n(self) -> int:
        return len(self.vid)


class OpContext:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._generation: int | None = None

    # -- cache --------------------------------------------------------------------------------------
    def _valid_seq(self) -> None:
        # Only this process can write the store (the writer holds the lock), so the in-memory batch
        # counter sees every write; reading ``last_seq`` from the backend cost ~4 ms per lookup.
        gen = self.store.generation
        if gen != self._generation:
            self._cache.clear()
            self._generation = gen

    def cached(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """``build()`` once per key and store state (LRU of a few slots)."""
        self._valid_seq()
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        value = build()
        self._cache[key] = value
        while len(self._cache) > _CACHE_SLOTS:
            self._cache.popitem(last=False)
        return value

    def drop_cached(self, keep: Callable[[tuple[Any, ...]], bool]) -> None:
        """Evict every cached entry whose key ``keep`` rejects (calibration times cold index builds)."""
        for key in [k for k in self._cache if not keep(k)]:
            del self._cache[key]

    # -- dictionary ---------------------------------------------------------------------------------
    def uids(self) -> list[str]:
        """uid by nid."""
        return self.cached(("uids",), lambda: self.store.backend.entities()["uid"].to_pylist())

    def nid_index(self) -> dict[str, int]:
        return self.cached(("nid_index",), lambda: {u: i for i, u in enumerate(self.uids())})

    def nid(self, uid: str, field: str = "uid") -> int:
        """nid of a uid known at *some* belief state; unknown -> E_NOT_FOUND."""
        nid = self.nid_index().get(uid)
        if nid is None:
            raise NotFoundError(f"unknown uid {uid!r}", field=field, uids=[uid])
        return nid

    # -- believed versions --------------------------------------------------------------------------
    def edges(self, as_of_tt: int | None) -> EdgeArrays:
        def build() -> EdgeArrays:
            t = self.store.backend.scan_edges(ScanFilter(as_of_tt=as_of_tt))
            return EdgeArrays(
                table=t,
                vid=t["vid"].to_numpy(),
                eid=t["eid"].to_numpy(),
                src=t["src"].to_numpy(),
                dst=t["dst"].to_numpy(),
                vt_s=t["vt_s"].to_numpy(),
                vt_e=t["vt_e"].to_numpy(),
            )

        return self.cached(("edges", as_of_tt), build)

    def nodes(self, as_of_tt: int | None) -> pa.Table:
        return self.cached(
            ("nodes", as_of_tt), lambda: self.store.backend.scan_nodes(ScanFilter(as_of_tt=as_of_tt))
        )

    def known_nids(self, as_of_tt: int | None) -> np.ndarray:
        """Boolean mask by nid: has a believed node version or is an endpoint of a believed edge."""

        def build() -> np.ndarray:
            mask = np.zeros(len(self.uids()), dtype=bool)
            e = self.edges(as_of_tt)
            mask[e.src] = True
            mask[e.dst] = True
            mask[self.nodes(as_of_tt)["nid"].to_numpy()] = True
            return mask

        return self.cached(("known", as_of_tt), build)

    def require_known(self, uids: list[str], as_of_tt: int | None, field: str) -> list[int]:
        """nids of uids that must be known at this belief state (else E_NOT_FOUND naming them)."""
        idx = self.nid_index()
        known = self.known_nids(as_of_tt)
        missing = [u for u in uids if u not in idx or not known[idx[u]]]
        if missing:
            raise NotFoundError(
                f"unknown uid{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing[:5]))}",
                field=field,
                uids=missing,
            )
        return [idx[u] for u in uids]

    # -- row builders (the API edge: ints -> uids, props text -> objects) ----------------------------
    def edge_rows(self, table: pa.Table) -> list[dict[str, Any]]:
        uids = self.uids()
        rows = table.to_pylist()
        for r in rows:
            r["src"] = uids[r["src"]]
            r["dst"] = uids[r["dst"]]
            r["props"] = json.loads(r["props"]) if r["props"] else {}
        return rows

    @staticmethod
    def node_rows(table: pa.Table) -> list[dict[str, Any]]:
        rows = table.to_pylist()
        for r in rows:
            r.pop("nid", None)
            r["props"] = json.loads(r["props"]) if r["props"] else {}
        return rows

    def extent(self) -> dict[str, Any]:
        """The dataset's valid-time extent (envelope metadata; not part of any digest)."""
        from engine.operators.cost import profile

        p = profile(self)
        return {"vt_min": p.vt_min, "vt_max": p.vt_max}
