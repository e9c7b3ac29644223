"""The watchdog of a local server: stops the server's process group when the process that started it dies,
SIGKILL included (issue 26, item 7).

:mod:`models.local.reaper` stops servers at exit and on SIGINT/SIGTERM, but a SIGKILLed parent runs no
code: its server (1.4 GB for a 1.5B model) would live on. :class:`~models.local.server.LocalServer` starts
this script beside every server, as its own small process::

    python -I watchdog.py PARENT_PID SERVER_PGID GRACE_S

It polls twice a second. When the server's group is gone (stopped in order) it exits. When the parent is
gone it sends the group SIGTERM, waits ``GRACE_S``, then SIGKILLs what is left, and exits. It is run by
path with ``-I`` and imports only the standard library, so it costs a few MB and starts in milliseconds
(importing the ``models`` package would load the engine). :mod:`models.local.server` uses its group
helpers too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

POLL_S = 0.5


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies awaiting their reaper don't count)."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: ask the kernel whether the group can still be signalled
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    for stat in proc.glob("[0-9]*/stat"):
        try:
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and ")", so split after the last ")"
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def parent_gone(parent: int) -> bool:
    # re-parented (to init or a subreaper) once the parent dies; the pid check covers a watchdog whose
    # parent is not the server's starter
    return os.getppid() != parent or not alive(parent)


def watch(parent: int, pgid: int, grace_s: float) -> int:
    while True:
        if not group_alive(pgid):
            return 0
        if parent_gone(parent):
            signal_group(pgid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.1)
            signal_group(pgid, signal.SIGKILL)
            return 0
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the parent's to handle
    parent, pgid, grace = int(argv[1]), int(argv[2]), float(argv[3])
    return watch(parent, pgid, grace)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
