"""Where memory notes live: one append-only JSON-lines file, fsynced line by line.

Every change is a new line, never an edit, so the file is its own audit log:

- ``{"type": "note", ...}`` — a stored note (:class:`Note`): its week, text, facts with their operator
  calls, the transaction time it was made at, the model and the hash of the prompt that wrote it;
- ``{"type": "refusal", ...}`` — a summary that failed the number check, with the structured error;
- ``{"type": "quarantine", "id", "tt", "changes"}`` — a later write overlapped the note's week: the note
  is kept (its line is untouched) but never reaches a prompt again;
- ``{"type": "scan", "tt"}`` — belief changes up to this transaction time have been looked at.

Crash safety: a line is written whole with one ``write`` and ``fsync``ed before the call returns, under an
exclusive ``flock`` (two processes may share a memory directory). A crash mid-write leaves at most one torn
last line, without its newline; reading skips it, and the next append first finishes it with a newline so
it stays a single unreadable line instead of corrupting the next record.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

NOTES_FILE = "notes.jsonl"


@dataclass(frozen=True)
class Note:
    id: str
    week: str  # "2004-W16"
    t_a: int  # the week's valid-time window [t_a, t_b), µs
    t_b: int
    text: str
    created_tt: int  # the store's transaction time when the note was made
    model: str
    prompt_sha256: str
    facts: list[dict[str, Any]] = field(default_factory=list)  # Fact.to_dict() of each fact
    store_digest: str | None = None

    def overlaps(self, t_a: int, t_b: int) -> bool:
        return self.t_a < t_b and t_a < self.t_b

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Bank:
    """What a memory file holds, read back: notes by id, quarantines, refusals, the last scan."""

    notes: dict[str, Note] = field(default_factory=dict)
    quarantined: dict[str, dict[str, Any]] = field(default_factory=dict)  # note id -> quarantine record
    refusals: list[dict[str, Any]] = field(default_factory=list)
    scanned_tt: int | None = None
    torn_lines: int = 0

    def live(self) -> list[Note]:
        """The notes that may reach a prompt, by week."""
        return sorted(
            (n for n in self.notes.values() if n.id not in self.quarantined), key=lambda n: (n.t_a, n.id)
        )


class NoteFile:
    """The notes file of one memory directory (thread-safe; process-safe through ``flock``)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.path = self.dir / NOTES_FILE
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one fsynced line."""
        line = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        with self._lock:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # close a torn last line (a crash mid-write) before ours
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)  # releases the flock

    def read(self) -> Bank:
        """Everything the file holds; a torn or unreadable line is skipped and counted."""
        bank = Bank()
        if not self.path.exists():
            return bank
        with self._lock:
            raw = self.path.read_bytes()
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                kind = rec["type"]
            except (ValueError, KeyError, TypeError):
                bank.torn_lines += 1
                continue
            if kind == "note":
                note = Note(**{k: v for k, v in rec.items() if k != "type"})
                bank.notes.setdefault(note.id, note)
            elif kind == "quarantine":
                bank.quarantined.setdefault(rec["id"], rec)
            elif kind == "refusal":
                bank.refusals.append(rec)
            elif kind == "scan":
                bank.scanned_tt = max(bank.scanned_tt or 0, int(rec["tt"]))
        return bank
