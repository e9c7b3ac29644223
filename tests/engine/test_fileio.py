"""tgms.engine.fileio.write_atomic: all of the content or none, no temporary left behind, text, bytes or a
writer function, a check of the whole temporary before the rename, and the usual file mode when the file
is to be shared. engine.fileio.atomic_dir: a directory appears whole or not at all, the first of two
builders wins, and no temporary is left either way."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

import pytest

from tgms.engine.fileio import atomic_dir, write_atomic


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


def test_a_failing_check_sees_the_whole_temporary_and_keeps_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "f.gz"
    write_atomic(target, b"old")
    seen: list[bytes] = []

    def refuse(tmp: Path) -> None:
        seen.append(tmp.read_bytes())
        raise ValueError("not a gzip stream")

    with pytest.raises(ValueError, match="gzip"):
        write_atomic(target, lambda f: (f.write(b"ne"), f.write(b"w")), check=refuse)
    assert seen == [b"new"]  # the check read everything the writer wrote
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["f.gz"]
    write_atomic(target, b"new", check=lambda tmp: seen.append(tmp.read_bytes()))
    assert target.read_bytes() == b"new" and seen[-1] == b"new"


def test_a_directory_appears_whole_on_success_and_not_at_all_on_error(tmp_path: Path) -> None:
    target = tmp_path / "db"
    with pytest.raises(RuntimeError), atomic_dir(target) as scratch:
        (scratch / "half").write_text("x")
        assert not target.exists()  # built aside: nothing under the name yet
        raise RuntimeError("build failed")
    assert os.listdir(tmp_path) == []
    with atomic_dir(target, prefix=".mine-") as scratch:
        assert scratch.parent == tmp_path and scratch.name.startswith(".mine-")
        (scratch / "a").write_text("1")
        (scratch / "b").write_text("2")
    assert sorted(os.listdir(target)) == ["a", "b"] and os.listdir(tmp_path) == ["db"]


def test_the_first_of_two_directory_builders_wins(tmp_path: Path) -> None:
    target = tmp_path / "db"
    with pytest.raises(OSError), atomic_dir(target) as second:
        with atomic_dir(target) as first:
            (first / "who").write_text("first")
        (second / "who").write_text("second")
    assert (target / "who").read_text() == "first" and os.listdir(tmp_path) == ["db"]
