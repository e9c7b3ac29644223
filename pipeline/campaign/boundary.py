"""The campaign driver's boundary: whatever escapes a campaign becomes the one structured error, naming the
cause and the fix, on stderr and in the run's log (issue 26, item 1).

The command line's boundary (:mod:`pipeline.boundary`) maps file-system and input failures; a
campaign can also meet Ray and MLflow failures, mapped here by the exception's package so neither needs
to be imported:

- a Ray worker killed for memory (``ray.exceptions.OutOfMemoryError``, or an actor that died of it, past
  the executor's retries) → ``E_INFRA`` saying so and what to lower;
- any other Ray failure (a node lost, the runtime gone) → ``E_INFRA`` naming the Ray error;
- an MLflow or SQLAlchemy failure (the tracking store) → ``E_LIMIT`` when the disk is full, ``E_CONFLICT``
  when the database is locked, else ``E_UPSTREAM`` naming the tracking URI's failure;
- anything else → :func:`pipeline.boundary.structured` (``E_CONFLICT``/``E_LIMIT``/``E_BACKEND`` for
  the file system, ``E_INTERNAL`` otherwise).
"""

from __future__ import annotations

import logging

from tgms.engine.api import ConflictError, LimitError, TGMSError, UpstreamError
from tgms.models.errors import InfraError
from tgms.pipeline.boundary import structured

log = logging.getLogger("tgms.campaign")


def _package(exc: BaseException) -> str:
    return type(exc).__module__.split(".", 1)[0]


def driver_error(exc: BaseException) -> TGMSError:
    """The structured error for an exception that escaped a campaign (module docstring)."""
    if isinstance(exc, TGMSError):
        return exc
    name, text = type(exc).__name__, str(exc).strip()
    head = text.splitlines()[0][:300] if text else name
    package = _package(exc)
    if package == "ray":
        if name == "OutOfMemoryError" or "out of memory" in text.lower() or "OutOfMemory" in text:
            return InfraError(
                f"Ray killed the campaign's workers for memory and the retries ran out ({head}): free memory "
                "on the node, or lower cluster.actors, cluster.actor_concurrency or model.concurrency; "
                "rerun the same command to resume",
                ray_error=name,
            )
        return InfraError(f"Ray failed: {name}: {head}; rerun the same command to resume", ray_error=name)
    if package in ("mlflow", "sqlalchemy"):
        if "disk is full" in text.lower() or "no space left" in text.lower():
            return LimitError(
                f"the disk is full: the MLflow tracking store could not write ({head}); free space where "
                "tracking.uri points (by default <run dir>/mlflow.db) and rerun the same command to resume",
                error=name,
            )
        if "locked" in text.lower():
            return ConflictError(
                f"the MLflow tracking store is locked ({head}): wait for the other writer (another campaign, "
                "`mlflow ui`) or set tracking.uri to another store",
                error=name,
            )
        return UpstreamError(f"the MLflow tracking store failed: {name}: {head}", error=name)
    return structured(exc)


def report(exc: BaseException) -> TGMSError:
    """The structured error for ``exc``, also written to the run's log (Hydra's job log, driver.log)."""
    err = driver_error(exc)
    log.error("%s", err.to_json())
    if not isinstance(exc, TGMSError):
        _traceback_to_log_files(exc)
    return err


def _traceback_to_log_files(exc: BaseException) -> None:
    """The traceback behind a mapped error, for whoever debugs it: into the log files (driver.log), not on
    the console, where the user reads the one structured line."""
    record = log.makeRecord(
        log.name, logging.ERROR, __file__, 0, "the traceback of the error above", (),
        (type(exc), exc, exc.__traceback__),
    )  # fmt: skip
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
