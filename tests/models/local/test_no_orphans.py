"""A parent holding a server that is interrupted, terminated, SIGKILLed or just exits leaves no orphan server.

Each case runs a real child Python process that starts a server (the scripted TEST DOUBLE as a
subprocess), prints the server's pid, and then is signalled or returns; the test checks that the server
process is gone once the parent has exited.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.models.local.conftest import wait_gone

CHILD = textwrap.dedent(
    """
    import json, sys, time
    from tests.models.local.conftest import scripted_spec
    from tgms.models.local.server import LocalServer

    mode = sys.argv[1]
    if mode == "with":
        with LocalServer(scripted_spec()) as server:
            print(json.dumps({"pid": server.pid}), flush=True)
            time.sleep(60)
    elif mode == "raise":
        with LocalServer(scripted_spec()) as server:
            print(json.dumps({"pid": server.pid}), flush=True)
            raise RuntimeError("the caller failed")
    elif mode == "leak":  # started and never stopped: the atexit hook must stop it
        server = LocalServer(scripted_spec()).start()
        print(json.dumps({"pid": server.pid}), flush=True)
    """
)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_child(mode: str, tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    root = Path(__file__).resolve().parents[3]  # the repository, so the child can import tests.*
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen(
        [sys.executable, str(script), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root,
        # the child starts as a terminal starts it: a test run launched in the background of a
        # non-interactive shell inherits SIGINT ignored, and Python then installs no Ctrl-C handler
        preexec_fn=_default_sigint,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"the child printed no pid: {proc.stderr.read() if proc.stderr else ''}")
    return proc, int(json.loads(line)["pid"])


def signal_running(proc: subprocess.Popen[str], server_pid: int, signum: int) -> None:
    """Send ``signum`` to the parent while its server runs, and wait for the parent to end."""
    try:
        assert wait_gone(server_pid, timeout_s=0.2) is False  # the server runs
        proc.send_signal(signum)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("signum", "expected_returncode"),
    [(signal.SIGINT, -signal.SIGINT), (signal.SIGTERM, -signal.SIGTERM)],
    ids=["ctrl-c", "sigterm"],
)
def test_a_signalled_parent_leaves_no_orphan(tmp_path: Path, signum: int, expected_returncode: int) -> None:
    proc, server_pid = run_child("with", tmp_path)
    signal_running(proc, server_pid, signum)
    # SIGINT: KeyboardInterrupt unwinds, and Python then exits "killed by SIGINT"; SIGTERM: re-delivered
    assert proc.returncode == expected_returncode
    assert wait_gone(server_pid, timeout_s=5), f"server {server_pid} outlived its parent"


@pytest.mark.parametrize("mode", ["raise", "leak"])
def test_a_parent_that_fails_or_forgets_to_stop_leaves_no_orphan(tmp_path: Path, mode: str) -> None:
    proc, server_pid = run_child(mode, tmp_path)
    proc.wait(timeout=30)
    assert proc.returncode == (1 if mode == "raise" else 0)
    assert wait_gone(server_pid, timeout_s=5), f"server {server_pid} outlived its parent"


def test_a_sigkilled_parent_leaves_no_orphan(tmp_path: Path) -> None:
    """SIGKILL runs no code in the parent: the watchdog started beside the server stops it."""
    proc, server_pid = run_child("with", tmp_path)
    signal_running(proc, server_pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert wait_gone(server_pid, timeout_s=10), f"server {server_pid} outlived its SIGKILLed parent"


def test_the_watchdog_leaves_with_a_server_stopped_in_order(tmp_path: Path) -> None:
    from tests.models.local.conftest import scripted_spec
    from tgms.models.local.server import LocalServer

    with LocalServer(scripted_spec(), log_dir=tmp_path) as server:
        dog = server._watchdog
        assert dog is not None and dog.poll() is None  # watching
    assert dog.poll() == 0 and server._watchdog is None  # exited and reaped: no zombie left behind
