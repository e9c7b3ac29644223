"""Which Ray a campaign joins: the address, or the address file a SLURM job writes; clear errors otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.api import InvalidArgError, NotFoundError
from pipeline.campaign.config import ClusterConf
from pipeline.campaign.ray_runtime import cluster_address


def test_address_then_address_file(tmp_path: Path) -> None:
    f = tmp_path / "ray_address"
    f.write_text("10.0.0.7:6379\n", encoding="utf-8")
    assert cluster_address(ClusterConf(kind="ray", address="auto", address_file=str(f))) == "auto"
    assert cluster_address(ClusterConf(kind="slurm", address_file=str(f))) == "10.0.0.7:6379"


def test_missing_or_empty_address_is_a_structured_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgError, match=r"cluster\.address"):
        cluster_address(ClusterConf(kind="ray"))
    with pytest.raises(NotFoundError, match="does not exist"):
        cluster_address(ClusterConf(kind="slurm", address_file=str(tmp_path / "absent")))
    (tmp_path / "empty").write_text("\n", encoding="utf-8")
    with pytest.raises(InvalidArgError, match="is empty"):
        cluster_address(ClusterConf(kind="slurm", address_file=str(tmp_path / "empty")))
