"""Storage backends behind one adapter interface; looked up by name."""

from __future__ import annotations

from tgms.engine.errors import InvalidArgError, NotFoundError
from tgms.engine.store.backends.base import Backend

BACKENDS = ("duckdb", "kuzu")


def backend_class(name: str) -> type[Backend]:
    """The backend class for ``name``; Kùzu is imported only when asked for."""
    if name == "duckdb":
        from tgms.engine.store.backends.duckdb_backend import DuckDBBackend

        return DuckDBBackend
    if name == "kuzu":
        try:
            from tgms.engine.store.backends.kuzu_backend import KuzuBackend
        except ImportError as exc:  # the driver is an optional extra
            raise NotFoundError(
                "the Kùzu backend needs the 'kuzu' extra: pip install 'tgms[kuzu]'", missing=str(exc)
            ) from exc
        return KuzuBackend
    raise InvalidArgError(f"unknown backend {name!r}", field="backend", legal=list(BACKENDS))
