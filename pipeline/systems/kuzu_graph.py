"""The latest state as a real Kùzu property graph, built once per store, queried read-only (text_to_cypher).

Schema: ``Node(uid STRING PRIMARY KEY)`` and one rel table per relation type (``msg`` → ``MSG``) with ``t``
(valid-from, epoch µs), ``t_end`` when some edge of that type is not an instant, and one typed column per
edge property. Loaded through Arrow (``COPY ... FROM`` a pyarrow Table; a pandas 3 frame crashes Kùzu
0.11). The database lives under ``work_dir/text_to_cypher/<key>/`` keyed by the store digest, next to a
``ready.json`` written last: a directory without it (a crash mid-build), or one that does not open, is
removed and rebuilt.

Queries run on a database opened ``read_only=True`` (one connection per thread: Kùzu connections are not
shared) with a timeout, and only after :func:`write_clause` found no write or side-effecting clause (the
read-only open would refuse a write too; the check refuses it before anything runs, and also refuses
``CALL``/``LOAD``/``INSTALL`` which a read-only database would allow). At most ``row_cap`` rows are read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tgms.engine.api import InvalidArgError, atomic_dir
from tgms.pipeline.systems.latest import LatestState, props_of

SCHEMA_VERSION = "1"
DB_FILE = "graph.kuzu"
READY = "ready.json"
#: clauses a query may not contain (matched as words outside string literals and comments)
WRITE_CLAUSES = (
    "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "COPY", "LOAD", "ALTER", "INSTALL",
    "CALL", "ATTACH", "DETACH", "EXPORT", "IMPORT", "USE", "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT",
)  # fmt: skip
_WRITE = re.compile(r"\b(" + "|".join(sorted(set(WRITE_CLAUSES))) + r")\b", re.IGNORECASE)
_LITERALS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|//[^\n]*|/\*.*?\*/", re.DOTALL)


def _kuzu() -> Any:
    try:
        import kuzu
    except ImportError as err:
        raise InvalidArgError('text_to_cypher needs Kùzu: pip install -e ".[kuzu]"', missing="kuzu") from err
    return kuzu


def table_name(rel_type: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", rel_type).upper() or "REL"
    return name if name[0].isalpha() else "R_" + name


def _column_type(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "BOOLEAN"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "INT64"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "DOUBLE"
    return "STRING"


_ARROW = {"BOOLEAN": pa.bool_(), "INT64": pa.int64(), "DOUBLE": pa.float64(), "STRING": pa.string()}


@dataclass(frozen=True)
class RelTable:
    name: str  # Kùzu table name
    rel_type: str  # the store's relation type
    columns: tuple[tuple[str, str], ...]  # (column, Kùzu type) after FROM/TO
    rows: pa.Table  # from, to, columns...

    def ddl(self) -> str:
        cols = "".join(f", {c} {t}" for c, t in self.columns)
        return f"CREATE REL TABLE {self.name}(FROM Node TO Node{cols})"

    def describe(self) -> str:
        cols = ", ".join(f"{c} {t}" + (" (epoch µs)" if c in ("t", "t_end") else "") for c, t in self.columns)
        n = self.rows.num_rows
        return f"(:Node)-[:{self.name} {{{cols}}}]->(:Node)  -- {n} edges of type {self.rel_type!r}"


def rel_tables(latest: LatestState) -> list[RelTable]:
    """One rel table per relation type of the latest state, with typed property columns."""
    e = latest.edges
    out = []
    for rel in latest.rel_types:
        part = e.filter(pc.equal(e["rel_type"], rel))
        t, t_end = part["t"].to_pylist(), part["t_end"].to_pylist()
        props = [props_of(p) for p in part["props"].to_pylist()]
        cols: dict[str, pa.Array] = {"from": part["src"], "to": part["dst"], "t": part["t"]}
        types = [("t", "INT64")]
        if any(b != a + 1 for a, b in zip(t, t_end, strict=True)):
            cols["t_end"] = part["t_end"]
            types.append(("t_end", "INT64"))
        for key in sorted({k for p in props for k in p}):
            col = re.sub(r"[^A-Za-z0-9_]", "_", key)
            col = col if col[:1].isalpha() and col not in cols else "p_" + col
            values = [p.get(key) for p in props]
            kind = _column_type(values)
            if kind == "STRING":
                values = [v if v is None or isinstance(v, str) else json.dumps(v) for v in values]
            cols[col] = pa.array(values, type=_ARROW[kind])
            types.append((col, kind))
        out.append(RelTable(table_name(rel), rel, tuple(types), pa.table(cols)))
    return out


def schema_text(tables: list[RelTable]) -> str:
    return "\n".join(
        ["(:Node {uid STRING PRIMARY KEY})  -- uids look like 'n42'", *(t.describe() for t in tables)]
    )


def ensure_graph(latest: LatestState, cache_dir: Path) -> tuple[Path, dict[str, Any]]:
    """The Kùzu database of ``latest`` (built, or reused when its ready marker matches) and its metadata."""
    tables = rel_tables(latest)
    root = cache_dir / f"{latest.digest[:24]}-v{SCHEMA_VERSION}"
    meta = {
        "digest": latest.digest,
        "schema_version": SCHEMA_VERSION,
        "schema": schema_text(tables),
        "edges": {t.name: t.rows.num_rows for t in tables},
    }
    if _ready(root, meta):
        return root / DB_FILE, {**meta, "cached": True}
    shutil.rmtree(root, ignore_errors=True)
    # built aside and renamed into place, so a reader never sees half a database; two builders (campaign
    # actors) build apart and the loser of the rename uses the winner's copy
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_dir(root, prefix=f"{root.name}.building-{os.getpid()}-{threading.get_ident()}-") as tmp:
            _build(tmp / DB_FILE, latest, tables)
            (tmp / READY).write_text(json.dumps(meta, sort_keys=True))
    except OSError:
        if not _ready(root, meta):
            raise
    return root / DB_FILE, {**meta, "cached": False}


def _ready(root: Path, meta: dict[str, Any]) -> bool:
    try:
        if json.loads((root / READY).read_text()) != meta:
            return False
        db = _kuzu().Database(str(root / DB_FILE), read_only=True)
        try:
            conn = _kuzu().Connection(db)
            for name, n in meta["edges"].items():
                if conn.execute(f"MATCH ()-[r:{name}]->() RETURN count(r)").get_next()[0] != n:
                    return False
        finally:
            db.close()
    except (OSError, ValueError, RuntimeError):
        return False
    return True


def _build(path: Path, latest: LatestState, tables: list[RelTable]) -> None:
    kuzu = _kuzu()
    db = kuzu.Database(str(path))
    try:
        conn = kuzu.Connection(db)
        e = latest.edges
        uids = sorted(set(e["src"].to_pylist()) | set(e["dst"].to_pylist()))
        conn.execute("CREATE NODE TABLE Node(uid STRING, PRIMARY KEY(uid))")
        conn.execute("COPY Node FROM $rows", {"rows": pa.table({"uid": pa.array(uids, pa.string())})})
        for t in tables:
            conn.execute(t.ddl())
            conn.execute(f"COPY {t.name} FROM $rows", {"rows": t.rows})
    finally:
        db.close()


def write_clause(query: str) -> str | None:
    """The first write or side-effecting clause in ``query`` (outside literals and comments), or None."""
    m = _WRITE.search(_LITERALS.sub(" ", query))
    return m.group(1).upper() if m else None


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool  # more rows than the cap


class ReadOnlyGraph:
    """A read-only Kùzu database with one connection per thread, a query timeout and a row cap."""

    def __init__(self, path: Path, timeout_ms: int, row_cap: int, buffer_pool_mb: int = 512) -> None:
        kuzu = _kuzu()
        self._kuzu = kuzu
        self._db = kuzu.Database(str(path), read_only=True, buffer_pool_size=buffer_pool_mb * 1024 * 1024)
        self.timeout_ms = timeout_ms
        self.row_cap = row_cap
        self._local = threading.local()

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._kuzu.Connection(self._db)
            conn.set_query_timeout(self.timeout_ms)
            self._local.conn = conn
        return conn

    def run(self, query: str) -> QueryResult:
        """Rows of a read query; ``RuntimeError`` with Kùzu's message when it fails (or times out)."""
        result = self._conn().execute(query)
        if isinstance(result, list):  # several statements: only the first one is asked for
            raise RuntimeError("send exactly one query (no ';'-separated statements)")
        columns = list(result.get_column_names())
        rows: list[list[Any]] = []
        while result.has_next() and len(rows) < self.row_cap:
            rows.append([plain(v) for v in result.get_next()])
        return QueryResult(columns, rows, result.has_next())

    def close(self) -> None:
        self._db.close()


def plain(value: Any) -> Any:
    """A Kùzu value as plain JSON: a node as its uid, a rel as its properties, internals dropped."""
    if isinstance(value, dict):
        if value.get("_label") == "Node" and "uid" in value:
            return value["uid"]
        return {k: plain(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
