"""Kùzu backend: one database file ``store.kuzu`` (plus Kùzu's ``store.kuzu.wal`` while it is open).

Schema (DESIGN §3.1)::

    Entity(nid INT64 PRIMARY KEY, uid STRING)                     -- the uid dictionary
    NodeVersion(vid INT64 PRIMARY KEY, nid, uid, label, props, vt_s, vt_e, tt_s, tt_e, source, provenance_ref)
    EdgeVersion(FROM Entity TO Entity, vid, eid, rel_type, disc, props, vt_s, vt_e, tt_s, tt_e, source,
                provenance_ref)                                   -- src/dst are the endpoints' nids
    Meta(key STRING PRIMARY KEY, value STRING)

Null strings round-trip: ``COPY`` from Arrow, ``LOAD FROM`` Arrow and ``get_as_arrow`` all keep null and
``""`` apart (measured on kuzu 0.11.3). Every value reaches Cypher as a query parameter (lists as list
parameters, long lists as an Arrow table joined with ``LOAD FROM``); only table and column names, which
are constants of this module, are part of the query text.

Atomicity of ``apply`` (kuzu 0.11.3, measured). Everything runs in one explicit transaction
(``BEGIN TRANSACTION`` ... ``COMMIT``); ``COPY ... FROM <Arrow table>`` is allowed inside it, and a
statement error inside it makes Kùzu roll back the whole transaction. A crash (SIGKILL) at any point before
or during ``COMMIT`` leaves the pre-batch state after WAL recovery. What is rolled back correctly:

- ``COPY`` into node tables (``Entity``, ``NodeVersion``), empty or not; ``SET`` on nodes and rels; rels
  made with ``CREATE``; a ``COPY`` into ``EdgeVersion`` that itself fails (say, a missing endpoint).
- **Not** a successful ``COPY`` into a *non-empty* ``EdgeVersion``: rolling it back (explicit
  ``ROLLBACK`` or Kùzu's automatic one after a later error) deletes **every** row of ``EdgeVersion``,
  not just the batch's, and that is persisted; if the same transaction also ``SET`` a rel property (an
  edge close), the rollback segfaults most of the time instead. (A rollback after a ``COPY`` into an
  empty rel table is harmless: the table was empty.)

So edge inserts go last in the transaction, by one of three paths:

1. ``EdgeVersion`` empty at batch start: ``COPY`` (fast, atomic).
2. non-empty and fewer than :attr:`KuzuBackend.copy_nonempty_min_rows` rows:
   ``LOAD FROM <Arrow> MATCH (a) MATCH (b) CREATE (rel)`` (atomic; ~55k rows/s for 10^5 rows, ~20-25k
   rows/s for 10^6 rows into a 10^6-row table). Two pitfalls, each costing 1000x: the comma form
   ``MATCH (a ...), (b ...)`` is planned as a cross product, and an INT32 key (EDGE_SCHEMA's src/dst)
   against the INT64 primary key scans instead of looking up; both are avoided here.
3. non-empty and at least that many rows: ``COPY`` as the very last statement before ``COMMIT``
   (~100-120k rows/s for 10^5 rows, ~130-155k rows/s for 10^6: 5-6x faster than path 2 at that size).
   If that ``COPY`` fails, Kùzu rolls back cleanly. Once it has
   succeeded the batch is complete, so on any later failure (an exception, a ``KeyboardInterrupt``
   between the two calls) ``apply`` issues ``COMMIT`` again rather than ``ROLLBACK``.
   **Failure window**: ``COMMIT`` itself failing *before* the transaction is durable (a WAL write
   error). Kùzu then rolls back internally, which empties ``EdgeVersion`` (or crashes the process; after
   a crash WAL recovery restores the pre-batch state). We could not provoke such a COMMIT failure
   (``RLIMIT_FSIZE`` only ever hit the checkpoint after the commit, see below); it is simulated in the
   tests. ``apply`` detects the loss (row counts against the pre-batch counts), writes the meta marker
   ``damaged`` and raises :class:`~engine.errors.CorruptError` (``needs_replay=True``);
   :meth:`KuzuBackend.open` then refuses the database, and the store must be rebuilt by replaying its
   event log. Hence ``atomic_apply = False``; ``copy_nonempty_min_rows = None`` (on a subclass or an
   instance) disables path 3 and makes every batch atomic, at path 2's speed.

A ``COMMIT`` can also raise *after* the transaction is durable: an I/O error in the automatic checkpoint
that follows it (reproduced with ``RLIMIT_FSIZE``). After any failure ``apply`` therefore classifies the
outcome from row counts and the batch's meta entries: the pre-batch state raises ``BackendError``, the
complete post-batch state is reported as applied (with a warning logged), anything else is damage as above.

Measured on 2 cores with 10^5 entities (the machine shared; ranges over runs); ``COPY`` into an empty
``EdgeVersion`` runs at ~170-290k rows/s. Scans return endpoints as ``offset(id(a))`` mapped to nids
through a cached Entity offset map (7x cheaper than reading ``a.nid``) and sort in Arrow.

Driver quirk: kuzu scans a Python object (an Arrow table parameter) via ``importlib.util`` without
importing it, so this module imports ``importlib.util``.
"""

from __future__ import annotations

import contextlib
import importlib.util  # noqa: F401  (kuzu uses importlib.util when it scans an Arrow table parameter)
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import kuzu
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tgms.engine.errors import BackendError, ConflictError, CorruptError
from tgms.engine.store.backends.base import Backend
from tgms.engine.store.backends.kuzu_cypher import (
    COUNT_QUERIES,
    DAMAGED_KEY,
    DDL,
    EDGE_PROPS,
    LOAD_CREATE_EDGES,
    NODE_COPY_SCHEMA,
    TABLES,
    Query,
    driver_error,
    mapped,
    reraise,
)
from tgms.engine.store.model import EDGE_SCHEMA, ENTITY_SCHEMA, NODE_SCHEMA, BatchChanges, ScanFilter
from tgms.engine.timeutil import OPEN_END

log = logging.getLogger(__name__)


class KuzuBackend(Backend):
    name = "kuzu"
    db_name = "store.kuzu"
    #: False: batches that COPY into a non-empty EdgeVersion have a failure window (module docstring)
    atomic_apply = False
    #: edge batches at least this large COPY into a non-empty EdgeVersion; None = always atomic (CREATE)
    copy_nonempty_min_rows: int | None = 50_000
    #: id lists longer than this are joined as an Arrow table (LOAD FROM) instead of an IN list
    in_list_max: int = 64

    def __init__(self, path: Path, read_only: bool, db: kuzu.Database, con: kuzu.Connection) -> None:
        super().__init__(path, read_only)
        self._db: kuzu.Database | None = db
        self._con: kuzu.Connection | None = con
        self._lut: np.ndarray | None = None  # Entity node offset -> nid, see _nid_lut

    # -- lifecycle ----------------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path) -> KuzuBackend:
        path = Path(path)
        if path.exists() or Path(f"{path}.wal").exists():
            raise ConflictError("database already exists", path=str(path))
        with mapped("create the database"):
            db = kuzu.Database(str(path))
            con = kuzu.Connection(db)
        backend = cls(path, False, db, con)
        try:
            for ddl in DDL:
                backend._exec(ddl)
            backend._exec("CHECKPOINT")
        except BaseException:
            backend.close()
            for p in (path, Path(f"{path}.wal")):
                p.unlink(missing_ok=True)
            raise
        return backend

    @classmethod
    def open(cls, path: Path, read_only: bool = False) -> KuzuBackend:
        path = Path(path)
        if not path.exists():  # kuzu would create an empty database
            raise BackendError("database file is missing", path=str(path))
        try:
            db = kuzu.Database(str(path), read_only=read_only)
            con = kuzu.Connection(db)
        except Exception as exc:
            if "lock" in str(exc).lower():
                raise ConflictError(
                    "the store is locked by another process", path=str(path), detail=str(exc)
                ) from exc
            raise driver_error("open the database", exc) from exc
        backend = cls(path, read_only, db, con)
        try:
            tables = {r["name"] for r in backend._rows("CALL show_tables() RETURN name")}
            if missing := sorted(TABLES - tables):
                raise CorruptError("not a TGMS Kùzu database", path=str(path), missing=missing)
            damage = backend.get_meta().get(DAMAGED_KEY)
            if damage is not None:
                raise CorruptError(
                    "the Kùzu database lost edge versions in a failed batch; rebuild it with `tgms replay`",
                    path=str(path),
                    damage=damage,
                    needs_replay=True,
                )
        except BaseException:
            backend.close()
            raise
        return backend

    def close(self) -> None:
        con, db = self._con, self._db
        self._con = self._db = None
        if con is None or db is None:
            return
        with mapped("close the database"):
            try:
                if not self.read_only:
                    con.execute("CHECKPOINT")
            finally:
                con.close()
                db.close()

    # -- driver helpers -----------------------------------------------------------------------------
    def _connection(self) -> kuzu.Connection:
        if self._con is None:
            raise BackendError("the Kùzu database is closed", path=str(self.path))
        return self._con

    def _exec(
        self, query: str, params: dict[str, Any] | None = None, action: str = "run a query"
    ) -> pa.Table:
        con = self._connection()
        with mapped(action):
            result = con.execute(query, params or {})
            if isinstance(result, list):  # never: one statement per call
                raise BackendError("unexpected multi-statement result", query=query)
            try:
                return result.get_as_arrow() if result.get_column_names() else pa.table({})
            finally:
                result.close()

    def _rows(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        return self._exec(query, params).to_pylist()

    def _scalar(self, query: str, params: dict[str, Any] | None = None) -> int:
        return int(self._exec(query, params).column(0)[0].as_py())

    def _counts3(self) -> dict[str, int]:
        return {k: self._scalar(q) for k, q in COUNT_QUERIES.items()}

    # -- writes -------------------------------------------------------------------------------------
    def apply(self, changes: BatchChanges) -> None:
        if self.read_only:
            raise ConflictError("the store is open read-only", path=str(self.path))
        self._lut = None
        with mapped("prepare a batch"):
            entities = changes.new_entities.select(ENTITY_SCHEMA.names).cast(
                pa.schema([("nid", pa.int64()), ("uid", pa.string())])
            )
            nodes = changes.node_inserts.select(NODE_SCHEMA.names).cast(NODE_COPY_SCHEMA)
            edges = changes.edge_inserts.select(EDGE_SCHEMA.names).cast(EDGE_SCHEMA)
        before: dict[str, int] = {}
        copied_nonempty = False
        self._exec("BEGIN TRANSACTION", action="begin a transaction")
        try:
            before = self._counts3()
            if entities.num_rows:
                self._exec("COPY Entity FROM $rows", {"rows": entities}, "insert entities")
            if nodes.num_rows:
                self._exec("COPY NodeVersion FROM $rows", {"rows": nodes}, "insert node versions")
            self._close_versions("(n:NodeVersion)", "n", changes.node_closes, changes.tt)
            self._close_versions("()-[n:EdgeVersion]->()", "n", changes.edge_closes, changes.tt)
            for key, value in sorted(changes.meta.items()):
                self._exec("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value}, "write meta")
            if edges.num_rows:
                copied_nonempty = self._insert_edges(edges, before["edge_versions"])
            self._exec("COMMIT", action="commit a batch")
        except BaseException as exc:
            self._after_failure(
                exc, changes, before, entities.num_rows, nodes.num_rows, edges.num_rows, copied_nonempty
            )

    def _close_versions(self, pattern: str, var: str, vids: Sequence[int], tt: int) -> None:
        """``tt_e := tt`` for the open versions among ``vids`` (versions of earlier batches)."""
        if not vids:
            return
        q = Query(var, self.in_list_max)
        q.member(f"{var}.vid", list(vids), pa.int64())
        q.clauses.append(f"{var}.tt_e = {q.param(OPEN_END)}")
        text = q.text(f"MATCH {pattern}", "count(*)", None, f"SET {var}.tt_e = {q.param(int(tt))}")
        self._exec(text, q.params, "close versions")

    def _insert_edges(self, edges: pa.Table, existing: int) -> bool:
        """Insert edge versions (the batch's last statement); True if it was a COPY into a non-empty table."""
        threshold = self.copy_nonempty_min_rows
        if existing == 0 or (threshold is not None and edges.num_rows >= threshold):
            cols = [edges.column("src").cast(pa.int64()), edges.column("dst").cast(pa.int64())]
            rows = pa.table(cols + [edges.column(n) for n in EDGE_PROPS], names=["from", "to", *EDGE_PROPS])
            self._exec("COPY EdgeVersion FROM $rows", {"rows": rows}, "insert edge versions")
            return existing > 0
        # src/dst as INT64 like Entity.nid: an INT32 key turns the primary-key lookup into a scan
        cols = [
            edges.column(n).cast(pa.int64()) if n in ("src", "dst") else edges.column(n)
            for n in edges.schema.names
        ]
        rows = pa.table(cols, names=[f"c_{n}" for n in edges.schema.names])
        created = self._scalar(LOAD_CREATE_EDGES, {"rows": rows})
        if created != edges.num_rows:
            raise BackendError(
                "edge endpoints are not in Entity", driver="kuzu", rows=edges.num_rows, created=created
            )
        return False

    def _after_failure(
        self,
        exc: BaseException,
        changes: BatchChanges,
        before: dict[str, int],
        n_entities: int,
        n_nodes: int,
        n_edges: int,
        copied_nonempty: bool,
    ) -> None:
        """Finish the transaction, find out what the database now holds, and raise (or return if applied).

        After a successful COPY into a non-empty EdgeVersion the transaction is *committed*, not rolled
        back: the batch is complete by then, and Kùzu's rollback of that COPY deletes every edge version
        (or segfaults, when the same transaction also SET rel properties).
        """
        with contextlib.suppress(Exception):  # after a statement error Kùzu has already rolled back
            self._connection().execute("COMMIT" if copied_nonempty else "ROLLBACK")
        if not before:  # failed before anything was written
            reraise(exc)
        after = {"entities": n_entities, "node_versions": n_nodes, "edge_versions": n_edges}
        expected = {k: before[k] + after[k] for k in before}
        try:
            now = self._counts3()
            meta = self.get_meta()
        except Exception as probe:
            raise CorruptError(
                "a Kùzu batch failed and the database state could not be verified",
                error=str(exc),
                probe_error=str(probe),
                needs_replay=copied_nonempty,
            ) from exc
        meta_applied = bool(changes.meta) and all(meta.get(k) == v for k, v in changes.meta.items())
        if now == expected and meta_applied:
            if not isinstance(exc, Exception):
                raise exc
            log.warning("kuzu raised after the batch was committed (seq %s): %s", changes.seq, exc)
            return
        if now == before and not meta_applied:
            reraise(exc)
        damage = f"batch seq {changes.seq}: counts {now} after a failed apply, expected {before}"
        with contextlib.suppress(Exception):
            self._exec("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": DAMAGED_KEY, "v": damage})
        raise CorruptError(
            "a failed Kùzu batch damaged the database (edge versions lost); rebuild it with `tgms replay`",
            error=str(exc),
            before=before,
            now=now,
            needs_replay=True,
        ) from exc

    # -- reads --------------------------------------------------------------------------------------
    def get_meta(self) -> dict[str, str]:
        rows = self._exec("MATCH (m:Meta) RETURN m.key AS key, m.value AS value ORDER BY key").to_pylist()
        return {r["key"]: r["value"] for r in rows}

    def entities(self) -> pa.Table:
        t = self._exec(
            "MATCH (e:Entity) RETURN e.nid AS nid, e.uid AS uid ORDER BY nid", action="read entities"
        )
        return self._shape(t, ENTITY_SCHEMA)

    def counts(self) -> dict[str, int]:
        out = self._counts3()
        out["edge_identities"] = self._scalar("MATCH ()-[r:EdgeVersion]->() RETURN count(DISTINCT r.eid)")
        return {k: out[k] for k in ("entities", "node_versions", "edge_versions", "edge_identities")}

    def scan_nodes(self, flt: ScanFilter) -> pa.Table:
        q = Query("n", self.in_list_max)
        self._common(q, flt)
        for values in (flt.nids, flt.ids):  # both are node nids
            if values is not None:
                q.member("n.nid", values, pa.int64())
        if flt.vids is not None:
            q.member("n.vid", flt.vids, pa.int64())
        if q.empty:
            return NODE_SCHEMA.empty_table()
        cols = {n: f"n.{n}" for n in NODE_SCHEMA.names}
        text = q.text("MATCH (n:NodeVersion)", self._returns(cols, q, flt), None)
        t = self._shape(self._exec(text, q.params, "scan node versions"), NODE_SCHEMA)
        return t.sort_by([("nid", "ascending"), ("vt_s", "ascending"), ("vid", "ascending")])

    def scan_edges(self, flt: ScanFilter) -> pa.Table:
        q = Query("r", self.in_list_max)
        self._common(q, flt)
        if flt.rel_types is not None:
            q.member("r.rel_type", flt.rel_types, pa.string())
        if flt.src is not None:
            q.member("a.nid", flt.src, pa.int64())
        if flt.dst is not None:
            q.member("b.nid", flt.dst, pa.int64())
        if flt.ids is not None:
            q.member("r.eid", flt.ids, pa.int64())
        if flt.vids is not None:
            q.member("r.vid", flt.vids, pa.int64())
        if q.empty or (flt.nids is not None and not flt.nids):
            return EDGE_SCHEMA.empty_table()
        if flt.nids is None:
            parts = [self._edge_query(q, flt)]
        elif len(flt.nids) <= self.in_list_max or q.load is not None:
            p = q.param(list(flt.nids))
            q.clauses.append(f"(a.nid IN {p} OR b.nid IN {p})")
            parts = [self._edge_query(q, flt)]
        else:  # a long "either endpoint" list: one hash join per endpoint, merged by vid
            parts = []
            for endpoint in ("a.nid", "b.nid"):
                qe = Query("r", self.in_list_max)
                qe.clauses, qe.params = list(q.clauses), dict(q.params)
                qe.member(endpoint, flt.nids, pa.int64())
                parts.append(self._edge_query(qe, flt))
        t = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        if len(parts) > 1:
            _, first = np.unique(t.column("vid").to_numpy(), return_index=True)
            t = t.take(pa.array(first))
        return t.sort_by([("vt_s", "ascending"), ("eid", "ascending"), ("vid", "ascending")])

    def _edge_query(self, q: Query, flt: ScanFilter) -> pa.Table:
        """Run one edge scan; endpoints come back as node offsets (7x cheaper than ``a.nid``), mapped here."""
        cols = {n: f"r.{n}" for n in EDGE_SCHEMA.names} | {"src": "offset(id(a))", "dst": "offset(id(b))"}
        text = q.text("MATCH (a:Entity)-[r:EdgeVersion]->(b:Entity)", self._returns(cols, q, flt), None)
        t = self._exec(text, q.params, "scan edge versions")
        if t.num_columns == 0 or t.num_rows == 0:
            return EDGE_SCHEMA.empty_table()
        src, dst = (t.column(n).to_numpy() for n in ("src", "dst"))
        lut = self._nid_lut(int(max(src.max(), dst.max())))
        nid_src, nid_dst = lut[src], lut[dst]
        if min(nid_src.min(), nid_dst.min()) < 0:  # an offset the cached map lacks: re-read it once
            self._lut = None
            lut = self._nid_lut(int(max(src.max(), dst.max())))
            nid_src, nid_dst = lut[src], lut[dst]
            if min(nid_src.min(), nid_dst.min()) < 0:
                raise BackendError("an edge endpoint has no Entity row", driver="kuzu")
        t = t.set_column(t.schema.get_field_index("src"), "src", pa.array(nid_src))
        t = t.set_column(t.schema.get_field_index("dst"), "dst", pa.array(nid_dst))
        return self._shape(t, EDGE_SCHEMA)

    def _nid_lut(self, max_offset: int) -> np.ndarray:
        """Entity node offset -> nid. Entities are never deleted, so offsets are stable between writes."""
        if self._lut is None or len(self._lut) <= max_offset:
            t = self._exec("MATCH (e:Entity) RETURN offset(id(e)) AS o, e.nid AS nid", action="read entities")
            lut = np.full(max(int(pc.max(t.column("o")).as_py() or 0), max_offset) + 1, -1, np.int64)
            lut[t.column("o").to_numpy()] = t.column("nid").to_numpy()
            self._lut = lut
        return self._lut

    @staticmethod
    def _common(q: Query, flt: ScanFilter) -> None:
        v = q.var
        if not flt.all_beliefs:
            if flt.as_of_tt is None:
                q.clauses.append(f"{v}.tt_e = {q.param(OPEN_END)}")
            else:
                a = q.param(int(flt.as_of_tt))
                q.clauses.append(f"{v}.tt_s <= {a} AND {v}.tt_e > {a}")
        if flt.valid_at is not None:
            t = q.param(int(flt.valid_at))
            q.clauses.append(f"{v}.vt_s <= {t} AND {v}.vt_e > {t}")
        if flt.vt_overlap is not None:
            lo, hi = q.param(int(flt.vt_overlap[0])), q.param(int(flt.vt_overlap[1]))
            q.clauses.append(f"{v}.vt_s < {hi} AND {v}.vt_e > {lo}")
        if flt.vt_start_in is not None:
            lo, hi = q.param(int(flt.vt_start_in[0])), q.param(int(flt.vt_start_in[1]))
            q.clauses.append(f"{v}.vt_s >= {lo} AND {v}.vt_s < {hi}")

    @staticmethod
    def _returns(cols: dict[str, str], q: Query, flt: ScanFilter) -> str:
        out = dict(cols)
        if not flt.all_beliefs and flt.as_of_tt is not None:  # censor later closes (DESIGN §3.2)
            a, open_end = q.param(int(flt.as_of_tt)), q.param(OPEN_END)
            out["tt_e"] = f"CASE WHEN {cols['tt_e']} > {a} THEN {open_end} ELSE {cols['tt_e']} END"
        return ", ".join(f"{expr} AS {name}" for name, expr in out.items())

    @staticmethod
    def _shape(t: pa.Table, schema: pa.Schema) -> pa.Table:
        if t.num_columns == 0:
            return schema.empty_table()
        with mapped("convert a result"):
            return t.select(schema.names).cast(schema)
