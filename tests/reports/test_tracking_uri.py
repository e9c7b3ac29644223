"""Where ``tgms report`` finds the tracking store when none is given (reports/cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tgms.engine.api import InvalidArgError
from tgms.reports.cli import tracking_uri


def test_the_order_is_the_flag_the_environment_the_cwd_then_the_experiments_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(InvalidArgError) as err:
        tracking_uri(None, "main")
    assert err.value.details["tried"] == ["mlflow.db", "campaigns/main/mlflow.db"]
    main = tmp_path / "campaigns" / "main" / "mlflow.db"
    main.parent.mkdir(parents=True)
    main.write_bytes(b"")
    assert tracking_uri(None, "main") == f"sqlite:///{main}"  # the README's `tgms report --experiment main`
    with pytest.raises(InvalidArgError):
        tracking_uri(None, None)  # --run-id names no experiment: no run directory to look in
    (tmp_path / "mlflow.db").write_bytes(b"")
    assert tracking_uri(None, "main") == f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow:5000")
    assert tracking_uri(None, "main") == "http://mlflow:5000"
    assert tracking_uri("sqlite:///x.db", "main") == "sqlite:///x.db"
