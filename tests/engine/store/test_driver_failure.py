"""Driver errors mapped at the backend boundary (engine/store/backends/base.py ``driver_failure``): a full
disk reads as ``E_LIMIT`` "the disk is full" naming the file, from DuckDB and Kùzu alike; anything else is
``E_BACKEND`` with the driver's words kept."""

from __future__ import annotations

from tgms.engine.errors import BackendError, LimitError
from tgms.engine.store.backends.base import driver_failure

DUCKDB_FULL = (
    'FATAL Error: Failed to create checkpoint because of error: Could not write file "/run/x/store.duckdb": '
    "No space left on device"
)


def test_a_full_disk_is_a_limit_error_naming_the_file() -> None:
    err = driver_failure("duckdb", "close the database", RuntimeError(DUCKDB_FULL))
    assert isinstance(err, LimitError) and err.code == "E_LIMIT"
    assert err.message == "the disk is full: duckdb failed to close the database"
    assert err.details["path"] == "/run/x/store.duckdb" and err.details["driver"] == "duckdb"
    kuzu = driver_failure("kuzu", "apply a batch", RuntimeError("IO exception: disk full while writing"))
    assert isinstance(kuzu, LimitError) and "path" not in kuzu.details
    assert kuzu.details["detail"].startswith("RuntimeError: ")


def test_any_other_driver_failure_stays_a_backend_error() -> None:
    err = driver_failure("duckdb", "scan edges", RuntimeError("Binder Error: column x not found"))
    assert type(err) is BackendError and err.code == "E_BACKEND"
    assert err.message == "duckdb failed to scan edges" and "Binder Error" in err.details["detail"]
