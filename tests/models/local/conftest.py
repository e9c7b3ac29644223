"""Helpers for the local-server tests: the scripted test-double server run as a real subprocess.

CI-safe tests run ``python -m tgms.models.testing.scripted_server`` (a TEST DOUBLE, never used for results)
as the server command, so the whole lifecycle (spawn, readiness, endpoint, stop, no orphans) runs
for real without a model. Tests against real models are marked ``local_model`` (deselected by default:
``pytest -m local_model tests/models/local``) and skip when llama.cpp or the vLLM venv is absent.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tgms.models.local.server import ServerSpec


def scripted_spec(
    reply: str = "hello from the double",
    *,
    start_delay: float = 0.0,
    ready_timeout_s: float = 20.0,
    stop_timeout_s: float = 5.0,
) -> ServerSpec:
    def command(port: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "tgms.models.testing.scripted_server",
            "--port",
            str(port),
            "--reply",
            reply,
            "--start-delay",
            str(start_delay),
        ]

    return ServerSpec(
        name="scripted",
        command=command,
        model="scripted",
        flavour="llamacpp",
        concurrency=2,
        ready_timeout_s=ready_timeout_s,
        stop_timeout_s=stop_timeout_s,
    )


def python_spec(code: str, *, ready_timeout_s: float = 20.0, stop_timeout_s: float = 5.0) -> ServerSpec:
    """A 'server' that is just a Python snippet (dies at start, never gets ready, ...)."""
    return ServerSpec(
        name="snippet",
        command=lambda port: [sys.executable, "-c", code],
        model="none",
        flavour="openai",
        concurrency=1,
        ready_timeout_s=ready_timeout_s,
        stop_timeout_s=stop_timeout_s,
    )


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running (non-zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def descendants(pid: int) -> set[int]:
    """``pid`` and every process below it (read from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        todo.extend(children.get(p, []))
    return found


def wait_gone(pid: int, timeout_s: float = 10.0) -> bool:
    """Wait until ``pid`` is gone (a reparented orphan's exit is reaped asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_alive(pid)


def read_pid(path: Path, timeout_s: float = 10.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            text = path.read_text().strip()
            if text:
                return int(text)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"no pid written to {path}")


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Logs and provisioning state go to a fresh cache, never the user's (real-model tests override it)."""
    cache = tmp_path / "tgms-cache"
    monkeypatch.setenv("TGMS_CACHE", str(cache))
    yield cache
