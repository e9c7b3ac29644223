"""Cypher text and driver-error mapping for the Kùzu backend: the schema DDL, the fixed queries, a small
query builder that keeps every value a parameter, and the one place driver exceptions become
:class:`~engine.errors.BackendError`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from tgms.engine.errors import BackendError, LimitError, TGMSError
from tgms.engine.store.backends.base import driver_failure
from tgms.engine.store.model import EDGE_SCHEMA, NODE_SCHEMA

PROPS = "props STRING, vt_s INT64, vt_e INT64, tt_s INT64, tt_e INT64, source STRING, provenance_ref STRING"
DDL = (
    "CREATE NODE TABLE Entity(nid INT64 PRIMARY KEY, uid STRING)",
    f"CREATE NODE TABLE NodeVersion(vid INT64 PRIMARY KEY, nid INT64, uid STRING, label STRING, {PROPS})",
    "CREATE REL TABLE EdgeVersion(FROM Entity TO Entity, vid INT64, eid INT64, rel_type STRING, "
    f"disc STRING, {PROPS})",
    "CREATE NODE TABLE Meta(key STRING PRIMARY KEY, value STRING)",
)
NODE_COPY_SCHEMA = pa.schema([f.with_type(pa.int64()) if f.name == "nid" else f for f in NODE_SCHEMA])
TABLES = frozenset({"Entity", "NodeVersion", "EdgeVersion", "Meta"})
DAMAGED_KEY = "damaged"

# Edge property columns in table order (after FROM/TO), as COPY from Arrow maps them by position.
EDGE_PROPS = tuple(n for n in EDGE_SCHEMA.names if n not in ("src", "dst"))
COUNT_QUERIES = {
    "entities": "MATCH (e:Entity) RETURN count(*)",
    "node_versions": "MATCH (n:NodeVersion) RETURN count(*)",
    "edge_versions": "MATCH ()-[r:EdgeVersion]->() RETURN count(*)",
}
LOAD_CREATE_EDGES = (
    # two MATCH clauses: the comma form "MATCH (a ...), (b ...)" is planned as a cross product of Entity
    # with itself (it exhausts the buffer pool at 10^5 entities); separate clauses are primary-key lookups
    "LOAD FROM $rows MATCH (a:Entity {nid: c_src}) MATCH (b:Entity {nid: c_dst}) "
    "CREATE (a)-[:EdgeVersion {" + ", ".join(f"{n}: c_{n}" for n in EDGE_PROPS) + "}]->(b) "
    "RETURN count(*)"
)


def driver_error(action: str, exc: BaseException) -> BackendError | LimitError:
    return driver_failure("kuzu", action, exc)


@contextlib.contextmanager
def mapped(action: str) -> Iterator[None]:
    """Map every driver exception to :class:`BackendError` (TGMS errors pass through)."""
    try:
        yield
    except TGMSError:
        raise
    except Exception as exc:
        raise driver_error(action, exc) from exc


def reraise(exc: BaseException) -> None:
    """Raise ``exc`` as it is if it is a TGMS error or not an ``Exception``; else as a BackendError."""
    if isinstance(exc, TGMSError) or not isinstance(exc, Exception):
        raise exc
    raise driver_error("apply a batch", exc) from exc


class Query:
    """A Cypher query under construction: WHERE clauses, parameters, at most one ``LOAD FROM`` join."""

    def __init__(self, var: str, in_list_max: int) -> None:
        self.var = var
        self.in_list_max = in_list_max
        self.clauses: list[str] = []
        self.params: dict[str, Any] = {}
        self.load: str | None = None  # the joined key variable, once a long list became a LOAD FROM
        self.empty = False  # an empty id list: nothing can match

    def param(self, value: Any) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f"${name}"

    def member(self, expr: str, values: Sequence[Any], typ: pa.DataType) -> None:
        """``expr IN values``: a list parameter, or a ``LOAD FROM`` hash join for the first long list."""
        if not values:
            self.empty = True
            return
        if len(values) > self.in_list_max and self.load is None:
            self.load = "tgms_k"
            # unique keys (duplicates would repeat rows), typed like the column (INT64 keeps PK lookups)
            keys = np.unique(pa.array(values, typ).to_numpy(zero_copy_only=False))
            self.params["tgms_keys"] = pa.table({self.load: pa.array(keys, typ)})
            self.clauses.append(f"{expr} = {self.load}")
        else:
            self.clauses.append(f"{expr} IN {self.param(list(values))}")

    def text(self, match: str, returns: str, order: str | None, update: str = "") -> str:
        head = f"LOAD FROM $tgms_keys {match}" if self.load else match
        where = f" WHERE {' AND '.join(self.clauses)}" if self.clauses else ""
        update = f" {update}" if update else ""
        tail = f" ORDER BY {order}" if order else ""
        return f"{head}{where}{update} RETURN {returns}{tail}"
