"""The campaign's per-cell JSONL files: one record (or trace) per line, appended durably, read back on resume.

The driver is the only writer of a cell's files (actors return results; the driver appends them), so a line
is written whole by one process. Each append is flushed and fsynced before the next task is counted done:
a SIGKILL loses at most the line being written, and that torn tail is cut on the next append (the reader
skips it). Which records count on a rerun (and so which tasks run again) is decided in
:mod:`pipeline.campaign.resume`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.systems.runner import _trim_torn_tail, read_records

__all__ = ["TaskResult", "append_line", "append_record", "read_records"]


@dataclass(frozen=True)
class TaskResult:
    """What a task actor returns for one task (and what the executor makes for a task that never came
    back): the record, and the trace of the plan it ran (the engine's trace as a dict) when there is one."""

    record: TaskRecord
    trace: dict[str, Any] | None = None


def append_line(path: str | Path, line: str) -> None:
    """Append one line and make it durable (flush + fsync); a torn last line left by a kill is cut first."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if not _ends_clean(p):
        _trim_torn_tail(p)
    with p.open("a", encoding="utf-8") as fh:
        fh.write(line.rstrip("\n") + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _ends_clean(path: Path) -> bool:
    """Whether the file is absent, empty or ends in a newline (one byte read, not the whole file)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return True
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"
    except FileNotFoundError:
        return True


def append_record(path: str | Path, record: TaskRecord) -> None:
    """Append one record as its canonical JSON line (``TaskRecord.to_json``: sorted keys)."""
    append_line(path, record.to_json())
