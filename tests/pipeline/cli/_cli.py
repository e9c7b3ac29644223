"""Running ``tgms`` in-process and checking its boundary: the structured error, nothing changed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FakeClock
from tgms.engine.errors import ERROR_CLASSES
from tgms.engine.store import Store
from tgms.models.errors import MODEL_ERROR_CLASSES
from tgms.pipeline.cli.main import main

#: every code a user may see: the error tree's and the model client's (e.g. `tgms local`), plus an
#: interrupted run (E_INTERNAL is a defect)
KNOWN_CODES = frozenset(ERROR_CLASSES) | frozenset(MODEL_ERROR_CLASSES) | {"E_INTERRUPTED"}


@dataclass
class Ran:
    code: int
    out: str
    err: str

    @property
    def error(self) -> dict[str, Any]:
        """The structured error: the last stderr line, checked to be the one shape."""
        return structured_error(self.err)

    @property
    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def warnings(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.startswith("tgms: warning:")]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> Ran:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def structured_error(stderr: str) -> dict[str, Any]:
    assert "Traceback" not in stderr, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert lines, "no error on stderr"
    body = json.loads(lines[-1])
    assert isinstance(body, dict) and set(body) == {"error", "message", "details"}, body
    assert body["error"] in KNOWN_CODES, body
    assert isinstance(body["message"], str) and body["message"], body
    assert isinstance(body["details"], dict), body
    return body


def build_small_store(root: Path) -> Path:
    """Twelve nodes n0..n11, a ring of edges at t = 10 i and a few repeats: enough for paged results."""
    with Store.create(root, "duckdb", now=FakeClock()) as store:
        store.write([{"op": "assert_node", "uid": f"n{i}", "vt_s": 0} for i in range(12)])
        edges = [
            {
                "op": "assert_edge",
                "src": f"n{i}",
                "dst": f"n{(i + 1) % 12}",
                "rel_type": "MSG",
                "vt_s": 10 * i,
            }
            for i in range(12)
        ]
        store.write(edges)
        store.write([{**e, "disc": "1", "vt_s": e["vt_s"] + 5} for e in edges[:6]])
    return root


def store_fingerprint(root: Path) -> dict[str, str]:
    """SHA-256 of every file of a store directory (the log and store.json byte for byte, the database)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != ".lock":
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def log_bytes(root: Path) -> bytes:
    return (root / "eventlog.jsonl").read_bytes()


def store_digest(root: Path) -> str:
    with Store.open(root, read_only=True) as store:
        return store.digest()


@contextlib.contextmanager
def read_only_dir(root: Path) -> Iterator[str]:
    """Make a store directory read-only in a way that holds for root too; yields how.

    As root, permission bits do not stop writes, so the directory and its files are made immutable
    (``chattr +i``, ext4/xfs/btrfs/tmpfs-with-xattr); as another user, write permission is removed.
    Skips the test when neither works here."""
    import os

    paths = [root, *sorted(root.rglob("*"))]
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("running as root without chattr: no read-only condition to test")
        done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, text=True)
        if done.returncode != 0:
            subprocess.run(["chattr", "-i", *map(str, paths)], capture_output=True)
            pytest.skip(f"chattr +i not supported here: {done.stderr.strip()}")
        try:
            yield "chattr +i"
        finally:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        return
    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(modes[p] & ~0o222)
    try:
        yield "chmod a-w"
    finally:
        for p in reversed(paths):
            p.chmod(modes[p])
