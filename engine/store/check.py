"""``tgms check``: a store's state against its event log, and its repair without adding a batch.

States: ``in_sync`` (nothing to do), ``repairable`` (a pending batch and/or a torn tail: ``repair`` completes
the batch, appending only its outcome record, and trims the tail) and ``damaged`` (the log is damaged before
its tail, or the database is ahead of it or behind a committed batch: nothing here can fix that; a database
behind its log is rebuilt with ``tgms replay``). Inspecting changes no file.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tgms.engine.errors import CorruptError, StoreWarning, TGMSError
from tgms.engine.store.eventlog import LOG_NAME, read_log
from tgms.engine.store.reconcile import check_against_log, describe, unreconciled
from tgms.engine.store.store import Store, read_store_meta


@dataclass
class StoreCheck:
    root: str
    state: str  # "in_sync" | "repairable" | "damaged"
    findings: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)  # what repair did
    log: dict[str, Any] = field(default_factory=dict)  # batches, committed, failed, bytes
    applied_seq: int | None = None
    digest: str | None = None  # of the database as it stands after the check (and repair)

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.root,
            "state": self.state,
            "findings": self.findings,
            "actions": self.actions,
            "log": self.log,
            "applied_seq": self.applied_seq,
            "digest": self.digest,
        }

    def text(self) -> str:
        lines = [f"store {self.root}: {self.state.replace('_', ' ')}"]
        if self.log:
            lines.append(
                f"log: {self.log['batches']} batches ({self.log['committed']} committed, "
                f"{self.log['failed']} failed), {self.log['bytes']} bytes; database applied through batch "
                f"{self.applied_seq}"
            )
        lines += [f"found: {_finding_text(f)}" for f in self.findings]
        lines += [f"did: {_action_text(a)}" for a in self.actions]
        if self.state == "repairable" and not self.actions:
            lines.append(f"repair with `tgms check --store {self.root} --repair` (adds no batch)")
        if self.digest is not None:
            lines.append(self.digest)
        return "\n".join(lines) + "\n"


def _finding_text(f: dict[str, Any]) -> str:
    if f["finding"] == "damaged":
        return f"{f['message']} {f.get('details', {})}"
    return describe(f)


def _action_text(a: dict[str, Any]) -> str:
    if a["action"] == "trimmed_torn_tail":
        return f"trimmed {a['bytes']} bytes of the torn record"
    if a["action"] == "recorded_outcome":
        return f"recorded the outcome of batch {a['seq']} ({a['status']}; it was already applied)"
    return f"applied pending batch {a['seq']} and recorded its outcome ({a['status']})"


def check_store(root: str | Path, *, repair: bool = False) -> StoreCheck:
    """Inspect a store (``E_NOT_FOUND`` if there is none); with ``repair``, reconcile it first."""
    root = Path(root)
    read_store_meta(root)  # no store: a structured error, not a finding
    actions: list[dict[str, Any]] = []
    if repair:
        before = inspect(root)
        if before.state == "repairable":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", StoreWarning)  # reported as actions instead
                with Store.open(root) as store:
                    actions = list(store.recovered)
    result = inspect(root)
    result.actions = actions
    return result


def inspect(root: Path) -> StoreCheck:
    """The state of the store at ``root``; changes no file."""
    out = StoreCheck(root=str(root), state="in_sync")
    try:
        state = read_log(root / LOG_NAME)
    except CorruptError as exc:
        out.state = "damaged"
        out.findings.append(
            {"finding": "damaged", "message": exc.message, "details": exc.to_dict()["details"]}
        )
        return out
    out.log = {
        "batches": len(state.batches),
        "committed": sum(1 for b in state.batches if b.outcome and b.outcome["status"] == "committed"),
        "failed": sum(1 for b in state.batches if b.outcome and b.outcome["status"] == "failed"),
        "bytes": state.good_bytes + state.torn_bytes,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreWarning)  # the findings below say it
        try:
            store = Store.open(root, read_only=True)
        except TGMSError as exc:
            out.state = "damaged"
            out.findings.append(
                {"finding": "damaged", "message": exc.message, "details": exc.to_dict()["details"]}
            )
            return out
    with store:
        out.applied_seq = store.applied_seq()
        try:
            check_against_log(state, out.applied_seq)
        except CorruptError as exc:
            out.state = "damaged"
            out.findings.append(
                {"finding": "damaged", "message": exc.message, "details": exc.to_dict()["details"]}
            )
        else:
            out.findings = unreconciled(state, out.applied_seq)
            out.state = "repairable" if out.findings else "in_sync"
        out.digest = store.digest()
    return out
