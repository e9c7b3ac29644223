"""A bundle's JSON files read with structured errors: a missing file is ``E_NOT_FOUND`` naming the
bundle, one that does not parse is ``E_CORRUPT`` naming the file (``read_manifest``, ``read_suite``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tgms.engine.api import CorruptError, NotFoundError
from tgms.pipeline.campaign.bundle import MANIFEST, SUITE, read_manifest, read_suite


def test_a_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match=r"is not a bundle: no manifest\.json") as err:
        read_manifest(tmp_path)
    assert err.value.code == "E_NOT_FOUND"
    with pytest.raises(NotFoundError, match=r"is not a complete bundle: no suite\.json"):
        read_suite(tmp_path)


@pytest.mark.parametrize("name", [MANIFEST, SUITE])
@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe"])
def test_a_file_that_does_not_parse_is_corrupt(tmp_path: Path, name: str, content: bytes) -> None:
    (tmp_path / name).write_bytes(content)
    read = read_manifest if name == MANIFEST else read_suite
    with pytest.raises(CorruptError, match="is not valid JSON") as err:
        read(tmp_path)
    assert err.value.code == "E_CORRUPT" and err.value.details["path"] == str(tmp_path / name)


def test_a_manifest_of_another_format_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text('{"format": "something-else"}')
    with pytest.raises(CorruptError, match="is not a TGMS bundle manifest"):
        read_manifest(tmp_path)
