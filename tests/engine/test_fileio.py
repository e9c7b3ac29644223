"""engine.fileio.write_atomic: all of the content or none, no temporary left behind, text, bytes or a
writer function, and the usual file mode when the file is to be shared."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

import pytest

from engine.fileio import write_atomic


def test_text_bytes_and_a_writer_replace_the_content(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    write_atomic(target, "ünï")
    assert target.read_text(encoding="utf-8") == "ünï"
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    write_atomic(target, lambda f: f.write(b"abc"), fsync=False)
    assert target.read_bytes() == b"abc" and os.listdir(tmp_path) == ["f.json"]


def test_a_failing_writer_leaves_the_old_content_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    write_atomic(target, "old")

    def half(f: BinaryIO) -> None:
        f.write(b"ne")
        raise RuntimeError("disk went away")

    with pytest.raises(RuntimeError):
        write_atomic(target, half)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["f.json"]


def test_shared_files_get_the_usual_mode(tmp_path: Path) -> None:
    private, shared = tmp_path / "a", tmp_path / "b"
    write_atomic(private, "x")
    write_atomic(shared, "x", shared=True)
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600  # mkstemp's
    assert stat.S_IMODE(shared.stat().st_mode) == 0o666 & ~umask
