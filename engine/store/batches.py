"""Reading a store's committed batches back from its event log, for callers outside the store.

A caller that writes labelled batches (``batch_id`` prefixes, e.g. the task suite's correction probes)
and later rebuilds what it wrote asks for them here instead of parsing the log's records itself: only
committed batches are returned (a failed or pending one changed nothing), in log order, with their
transaction time and ops.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tgms.engine.store.eventlog import LOG_NAME, read_log


@dataclass(frozen=True)
class CommittedBatch:
    batch_id: str
    tt: int  # the batch's transaction time: a read pinned to tt - 1 sees the store just before it
    ops: list[dict[str, Any]]


def committed_batches(root: str | os.PathLike[str], prefix: str = "") -> list[CommittedBatch]:
    """The committed batches of the store at ``root`` whose ``batch_id`` starts with ``prefix``."""
    path = Path(root) / LOG_NAME
    return [
        CommittedBatch(b.batch_id, b.tt, b.ops(path))
        for b in read_log(path).batches
        if b.batch_id.startswith(prefix) and b.outcome is not None and b.outcome.get("status") == "committed"
    ]
