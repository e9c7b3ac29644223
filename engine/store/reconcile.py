"""How a store's database stands against its event log, shared by opening a store and ``tgms check``.

After a crash the log can be ahead of the database in two repairable ways: a *pending* batch (logged and
fsynced, so acknowledged, but without its outcome record; applied or not) and a *torn tail* (the bytes of
a record whose append never finished; never acknowledged). Opening for writing repairs both; a read-only
open repairs nothing and says so with a warning (:class:`engine.errors.StoreWarning`), so a stale
``stats`` or ``digest`` is never shown silently. A database ahead of its log, or behind a committed batch,
cannot be repaired here.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from tgms.engine.errors import CorruptError, StoreWarning
from tgms.engine.store.eventlog import LogState


def check_against_log(state: LogState, applied: int) -> None:
    """Raise ``E_CORRUPT`` when the database (last applied seq ``applied``) cannot be reconciled with the
    log: it holds a batch the log does not, or it lacks a batch the log records as committed."""
    committed = [b.seq for b in state.batches if b.outcome and b.outcome["status"] == "committed"]
    last_committed = committed[-1] if committed else 0
    pending = state.pending
    if applied > (pending.seq if pending else last_committed):
        raise CorruptError(
            "the database has batches the event log does not", applied_seq=applied, log_seq=last_committed
        )
    if applied < last_committed:
        raise CorruptError(
            "the database is behind its event log; rebuild it with `tgms replay`",
            applied_seq=applied,
            log_seq=last_committed,
        )


def unreconciled(state: LogState, applied: int) -> list[dict[str, object]]:
    """The repairable findings: a pending batch (applied or not) and a torn tail."""
    found: list[dict[str, object]] = []
    pending = state.pending
    if pending is not None:
        found.append({"finding": "pending_batch", "seq": pending.seq, "applied": applied == pending.seq})
    if state.torn_bytes:
        found.append({"finding": "torn_tail", "bytes": state.torn_bytes})
    return found


def describe(finding: dict[str, object]) -> str:
    if finding["finding"] == "pending_batch":
        if finding["applied"]:
            return f"batch {finding['seq']} is applied but its outcome is not recorded in the log"
        return (
            f"batch {finding['seq']} is logged (acknowledged) but not applied: "
            "the database shows the state before it"
        )
    return f"the event log ends in {finding['bytes']} bytes of a torn (unfinished) record"


def warn_unreconciled(root: Path, state: LogState, applied: int) -> None:
    for finding in unreconciled(state, applied):
        warnings.warn(
            f"{root}: {describe(finding)}; run `tgms check --store {root} --repair`",
            StoreWarning,
            stacklevel=3,
        )
