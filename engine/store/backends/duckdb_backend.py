"""DuckDB backend: one database file ``store.duckdb`` in the store directory.

Tables mirror the Arrow schemas of :mod:`engine.store.model`; nodes are referenced by dense int32 nids so
the edge table is integers but for its (dictionary-compressed) strings. No secondary indexes: DuckDB's
per-row-group min/max zone maps on ``vt_s`` (rows are inserted in ``vt_s`` order within a batch) do the
pruning, and ART indexes would multiply the on-disk size. ``apply`` is one transaction.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from tgms.engine.errors import BackendError, ConflictError
from tgms.engine.store.backends.base import Backend, driver_failure
from tgms.engine.store.model import EDGE_SCHEMA, ENTITY_SCHEMA, NODE_SCHEMA, BatchChanges, ScanFilter
from tgms.engine.timeutil import OPEN_END

_DDL = """
CREATE TABLE entities (nid INTEGER NOT NULL, uid VARCHAR NOT NULL);
CREATE TABLE node_versions (
    vid BIGINT NOT NULL, nid INTEGER NOT NULL, uid VARCHAR NOT NULL, label VARCHAR NOT NULL,
    props VARCHAR, vt_s BIGINT NOT NULL, vt_e BIGINT NOT NULL, tt_s BIGINT NOT NULL, tt_e BIGINT NOT NULL,
    source VARCHAR, provenance_ref VARCHAR);
CREATE TABLE edge_versions (
    vid BIGINT NOT NULL, eid BIGINT NOT NULL, src INTEGER NOT NULL, dst INTEGER NOT NULL,
    rel_type VARCHAR NOT NULL, disc VARCHAR NOT NULL, props VARCHAR,
    vt_s BIGINT NOT NULL, vt_e BIGINT NOT NULL, tt_s BIGINT NOT NULL, tt_e BIGINT NOT NULL,
    source VARCHAR, provenance_ref VARCHAR);
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
"""

_IN_LIST_MAX = 64  # longer id lists are joined against a registered Arrow table instead


@contextlib.contextmanager
def _mapped(action: str) -> Iterator[None]:
    """Map every DuckDB exception to the TGMS error tree (the adapter boundary)."""
    try:
        yield
    except duckdb.Error as exc:
        raise driver_failure("duckdb", action, exc) from exc


_EDGE_KEYS = ("vid", "eid", "src", "dst", "vt_s", "vt_e")
_EDGE_KEY_SCHEMA = pa.schema([*(EDGE_SCHEMA.field(n) for n in _EDGE_KEYS), ("rid", pa.int64())])
_EDGE_REST_SCHEMA = pa.schema([*(f for f in EDGE_SCHEMA if f.name not in _EDGE_KEYS), ("rid", pa.int64())])


class DuckDBBackend(Backend):
    name = "duckdb"
    db_name = "store.duckdb"
    atomic_apply = True

    def __init__(self, path: Path, read_only: bool, con: duckdb.DuckDBPyConnection) -> None:
        super().__init__(path, read_only)
        self.con = con
        self._tmp = itertools.count()
        self._cursors = 0  # background scans on their own cursors; close() waits for them
        self._cursors_done = threading.Condition()

    @classmethod
    def create(cls, path: Path) -> DuckDBBackend:
        if path.exists():
            raise ConflictError("database already exists", path=str(path))
        with _mapped("create the database"):
            con = duckdb.connect(str(path))
            con.execute(_DDL).fetchall()
        return cls(path, False, con)

    @classmethod
    def open(cls, path: Path, read_only: bool = False) -> DuckDBBackend:
        if not path.exists():
            raise BackendError("database file is missing", path=str(path))
        try:
            con = duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            raise ConflictError(
                "the store is locked by another process", path=str(path), detail=str(exc)
            ) from exc
        except duckdb.Error as exc:
            raise driver_failure("duckdb", "open the database", exc) from exc
        return cls(path, read_only, con)

    def close(self) -> None:
        with self._cursors_done:  # a background scan still reading would make the close fail
            self._cursors_done.wait_for(lambda: self._cursors == 0, timeout=600)
        with _mapped("close the database"):
            if not self.read_only:
                self.con.execute("CHECKPOINT").fetchall()
            self.con.close()

    # -- writes -------------------------------------------------------------------------------------
    def apply(self, changes: BatchChanges) -> None:
        if self.read_only:
            raise ConflictError("the store is open read-only", path=str(self.path))
        con = self.con
        with _mapped("apply a batch"):
            self._run("BEGIN TRANSACTION")
            try:
                for table, data in (
                    ("entities", changes.new_entities),
                    ("node_versions", changes.node_inserts),
                    ("edge_versions", changes.edge_inserts),
                ):
                    if data.num_rows:
                        name = self._register(data)
                        self._run(f"INSERT INTO {table} SELECT * FROM {name}")
                        con.unregister(name)
                for table, vids in (
                    ("node_versions", changes.node_closes),
                    ("edge_versions", changes.edge_closes),
                ):
                    if vids:
                        name = self._register(pa.table({"vid": pa.array(vids, pa.int64())}))
                        self._run(
                            f"UPDATE {table} SET tt_e = ? WHERE tt_e = ? AND vid IN (SELECT vid FROM {name})",
                            [changes.tt, OPEN_END],
                        )
                        con.unregister(name)
                for k, v in sorted(changes.meta.items()):
                    self._run("INSERT OR REPLACE INTO meta VALUES (?, ?)", [k, v])
                self._run("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    self._run("ROLLBACK")
                raise

    def _run(self, sql: str, params: list[Any] | None = None) -> list[Any]:
        """Execute and drain (DuckDB 2 refuses new work while a result is unfinished)."""
        return self.con.execute(sql, params or []).fetchall()

    def _register(self, table: pa.Table) -> str:
        name = f"_tgms_tmp_{next(self._tmp)}"
        self.con.register(name, table)
        return name

    # -- reads --------------------------------------------------------------------------------------
    def get_meta(self) -> dict[str, str]:
        with _mapped("read meta"):
            return dict(self.con.execute("SELECT key, value FROM meta ORDER BY key").fetchall())

    def entities(self) -> pa.Table:
        with _mapped("read entities"):
            t = self.con.sql("SELECT nid, uid FROM entities ORDER BY nid").to_arrow_table()
        return t.cast(ENTITY_SCHEMA)

    def counts(self) -> dict[str, int]:
        with _mapped("count rows"):
            row = self._run(
                "SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM node_versions),"
                " (SELECT count(*) FROM edge_versions), (SELECT count(DISTINCT eid) FROM edge_versions)"
            )[0]
        return dict(zip(("entities", "node_versions", "edge_versions", "edge_identities"), row, strict=True))

    def scan_nodes(self, flt: ScanFilter) -> pa.Table:
        where, params, regs = self._where(flt, kind="node")
        cols = self._columns(NODE_SCHEMA, flt)
        sql = f"SELECT {cols} FROM node_versions WHERE {where} ORDER BY nid, vt_s, vid"
        return self._query(sql, params, regs, NODE_SCHEMA)

    def scan_edges(self, flt: ScanFilter) -> pa.Table:
        where, params, regs = self._where(flt, kind="edge")
        cols = self._columns(EDGE_SCHEMA, flt)
        sql = f"SELECT {cols} FROM edge_versions WHERE {where} ORDER BY vt_s, eid, vid"
        return self._query(sql, params, regs, EDGE_SCHEMA)

    def edge_stats(self, flt: ScanFilter) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        where, params, regs = self._where(flt, kind="edge")
        if regs:  # long id lists: not the belief-state statistics this serves
            for name in regs:
                self.con.unregister(name)
            return None
        with _mapped("scan"):
            vt = self.con.sql(
                f"SELECT vt_s FROM edge_versions WHERE {where} ORDER BY vt_s", params=params or None
            ).to_arrow_table(1 << 24)
            deg = self.con.sql(
                f"SELECT n, count(*) AS c FROM (SELECT src AS n FROM edge_versions WHERE {where} "
                f"UNION ALL SELECT dst FROM edge_versions WHERE {where}) GROUP BY n",
                params=(params + params) or None,
            ).to_arrow_table()
        return (
            vt["vt_s"].to_numpy().astype(np.int64, copy=False),
            deg["n"].to_numpy().astype(np.int64),
            deg["c"].to_numpy().astype(np.int64),
        )

    def scan_edge_keys(self, flt: ScanFilter) -> pa.Table:
        # Sorting only the integer keys costs a third of sorting the rows with their strings (10^7:
        # 0.7 s vs 2.1 s); the other columns come unordered, by row id, when first needed.
        where, params, regs = self._where(flt, kind="edge")
        sql = (
            f"SELECT {', '.join(_EDGE_KEYS)}, rowid AS rid FROM edge_versions WHERE {where} "
            "ORDER BY vt_s, eid, vid"
        )
        return self._query(sql, params, regs, _EDGE_KEY_SCHEMA, batch_size=1 << 24)

    def scan_edges_by_rid(self, flt: ScanFilter, rids: np.ndarray | None = None) -> pa.Table:
        where, params, regs = self._where(flt, kind="edge")
        cols = [c for c in self._columns(EDGE_SCHEMA, flt).split(", ") if c.split()[-1] not in _EDGE_KEYS]
        join = ""
        if rids is not None:  # a semi join on rowid reads only the row groups that hold them
            name = self._register(pa.table({"r": pa.array(rids, pa.int64())}))
            regs.append(name)
            join = f" SEMI JOIN {name} ON edge_versions.rowid = {name}.r"
        sql = f"SELECT {', '.join(cols)}, rowid AS rid FROM edge_versions{join} WHERE {where} ORDER BY rowid"
        if rids is None and not regs:
            # the whole rest may be loaded on a background thread: on its own cursor (a DuckDB connection
            # object serves one thread at a time; a cursor is another connection to the same database)
            with self._cursors_done:
                self._cursors += 1
            try:
                with _mapped("scan"):
                    cur = self.con.cursor()
                    try:
                        return cur.sql(sql, params=params or None).to_arrow_table().cast(_EDGE_REST_SCHEMA)
                    finally:
                        cur.close()
            finally:
                with self._cursors_done:
                    self._cursors -= 1
                    self._cursors_done.notify_all()
        return self._query(sql, params, regs, _EDGE_REST_SCHEMA)

    def _query(
        self, sql: str, params: list[Any], regs: list[str], schema: pa.Schema, batch_size: int = 131072
    ) -> pa.Table:
        try:
            with _mapped("scan"):
                t = self.con.sql(sql, params=params or None).to_arrow_table(batch_size)
        finally:
            for name in regs:
                self.con.unregister(name)
        return t.cast(schema)

    @staticmethod
    def _columns(schema: pa.Schema, flt: ScanFilter) -> str:
        if flt.all_beliefs or flt.as_of_tt is None:
            return ", ".join(schema.names)
        a = int(flt.as_of_tt)
        censored = f"CASE WHEN tt_e > {a} THEN {OPEN_END} ELSE tt_e END AS tt_e"
        return ", ".join(censored if n == "tt_e" else n for n in schema.names)

    def _where(self, flt: ScanFilter, kind: str) -> tuple[str, list[Any], list[str]]:
        clauses: list[str] = []
        params: list[Any] = []
        regs: list[str] = []
        if not flt.all_beliefs:
            if flt.as_of_tt is None:
                clauses.append("tt_e = ?")
                params.append(OPEN_END)
            else:
                clauses.append("tt_s <= ? AND tt_e > ?")
                params += [flt.as_of_tt, flt.as_of_tt]
        if flt.valid_at is not None:
            clauses.append("vt_s <= ? AND vt_e > ?")
            params += [flt.valid_at, flt.valid_at]
        if flt.vt_overlap is not None:
            clauses.append("vt_s < ? AND vt_e > ?")
            params += [flt.vt_overlap[1], flt.vt_overlap[0]]
        if flt.vt_start_in is not None:
            clauses.append("vt_s >= ? AND vt_s < ?")
            params += [flt.vt_start_in[0], flt.vt_start_in[1]]
        if kind == "edge" and flt.rel_types is not None:
            clauses.append(self._in("rel_type", list(flt.rel_types), pa.string(), params, regs))
        if flt.nids is not None:
            if kind == "node":
                clauses.append(self._in("nid", list(flt.nids), pa.int32(), params, regs))
            else:
                a = self._in("src", list(flt.nids), pa.int32(), params, regs)
                b = self._in("dst", list(flt.nids), pa.int32(), params, regs)
                clauses.append(f"({a} OR {b})")
        if kind == "edge":
            for col, vals in (("src", flt.src), ("dst", flt.dst)):
                if vals is not None:
                    clauses.append(self._in(col, list(vals), pa.int32(), params, regs))
        if flt.ids is not None:
            col = "nid" if kind == "node" else "eid"
            clauses.append(
                self._in(col, list(flt.ids), pa.int32() if kind == "node" else pa.int64(), params, regs)
            )
        if flt.vids is not None:
            clauses.append(self._in("vid", list(flt.vids), pa.int64(), params, regs))
        return (" AND ".join(clauses) or "TRUE"), params, regs

    def _in(self, col: str, values: list[Any], typ: pa.DataType, params: list[Any], regs: list[str]) -> str:
        if not values:
            return "FALSE"
        if len(values) <= _IN_LIST_MAX:
            params.extend(values)
            return f"{col} IN ({', '.join('?' * len(values))})"
        if pa.types.is_integer(typ):
            typ = pa.int64()  # an out-of-range id simply matches nothing
        try:
            arr = pa.array(values, typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise BackendError(f"bad values for a {col} filter", detail=str(exc)) from exc
        name = self._register(pa.table({"v": arr}))
        regs.append(name)
        return f"{col} IN (SELECT v FROM {name})"
