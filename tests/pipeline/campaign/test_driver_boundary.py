"""The campaign driver's boundary (pipeline/campaign/boundary.py): Ray, MLflow and file-system failures
become the one structured error naming the cause and the fix, and go to the run's log."""

from __future__ import annotations

import errno
import logging

import pytest

from tgms.pipeline.campaign.boundary import driver_error, report

ray = pytest.importorskip("ray")
mlflow = pytest.importorskip("mlflow")


def test_ray_failures_are_infra_errors_naming_the_cause() -> None:
    oom = driver_error(ray.exceptions.OutOfMemoryError("1 worker(s) were killed due to low memory"))
    assert oom.code == "E_INFRA" and "for memory" in oom.message and "cluster.actors" in oom.message
    lost = driver_error(ray.exceptions.RaySystemError("the node was lost"))
    assert lost.code == "E_INFRA" and "RaySystemError" in lost.message and "resume" in lost.message


def test_tracking_store_failures_are_named() -> None:
    from sqlalchemy.exc import OperationalError

    locked = driver_error(OperationalError("INSERT ...", {}, Exception("database is locked")))
    assert locked.code == "E_CONFLICT" and "tracking.uri" in locked.message
    full = driver_error(OperationalError("CREATE TABLE ...", {}, Exception("database or disk is full")))
    assert full.code == "E_LIMIT" and "disk is full" in full.message and "tracking.uri" in full.message
    other = driver_error(mlflow.exceptions.MlflowException("Run 'x' not found"))
    assert other.code == "E_UPSTREAM" and "MLflow tracking store" in other.message


def test_file_system_and_unknown_failures_keep_the_cli_mapping() -> None:
    full = driver_error(OSError(errno.ENOSPC, "No space left on device", "/run/x"))
    assert full.code == "E_LIMIT" and full.details["path"] == "/run/x"
    bug = driver_error(ValueError("boom"))
    assert bug.code == "E_INTERNAL" and "ValueError" in bug.message


def test_report_writes_the_error_to_the_run_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="tgms.campaign"):
        err = report(ray.exceptions.OutOfMemoryError("killed"))
    assert err.code == "E_INFRA" and '"E_INFRA"' in caplog.text


def test_the_traceback_goes_to_the_log_file_not_the_console(tmp_path, capsys) -> None:
    # the console shows the one structured line; driver.log (Hydra's file handler) keeps the traceback
    root = logging.getLogger()
    file_handler = logging.FileHandler(tmp_path / "driver.log")
    console = logging.StreamHandler()  # stderr, as Hydra's console handler writes to a stream
    root.addHandler(file_handler)
    root.addHandler(console)
    try:
        try:
            raise ValueError("boom")
        except ValueError as exc:
            err = report(exc)
    finally:
        root.removeHandler(file_handler)
        root.removeHandler(console)
        file_handler.close()
    assert err.code == "E_INTERNAL"
    logged = (tmp_path / "driver.log").read_text()
    assert '"E_INTERNAL"' in logged and "Traceback" in logged and 'raise ValueError("boom")' in logged
    shown = capsys.readouterr().err
    assert '"E_INTERNAL"' in shown and "Traceback" not in shown
