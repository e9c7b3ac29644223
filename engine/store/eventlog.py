"""The append-only event log: the store's source of truth and its audit trail of attempts.

``eventlog.jsonl`` holds a header line, then for every attempted batch a *batch* record (``seq``,
``batch_id``, ``tt``, ``ops``), appended and fsynced **before** the batch is applied, then an *outcome*
record (``committed`` with counts, or ``failed`` with the structured error) once it has been. Every record
is one canonical-JSON line whose last member ``"~sha"`` is the SHA-256 of the record's canonical JSON
without it; a line is verified from its bytes alone, so opening a large log does not parse its ops.

Opening checks every line. A torn final record (a crash mid-append: no newline, bad JSON or a bad sha on
the last line only) is trimmed when opened for writing and ignored when opened read-only. Damage anywhere
else refuses to open with ``E_CORRUPT`` naming the line. A batch record without an outcome is *pending*: it
was acknowledged (fsynced), so the store applies it on open; nothing acknowledged is lost.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tgms.engine.canonical import dumps_canonical, sha256_hex
from tgms.engine.errors import CorruptError, StoreWarning

LOG_NAME = "eventlog.jsonl"
FORMAT = "tgms-eventlog"
VERSION = 1


SEAL_KEY = "~sha"  # sorts after every other key, so the seal is always the line's last member
_SEAL_LEN = len(',"~sha":""}') + 64


def _seal(record: dict[str, Any]) -> str:
    """The record's canonical JSON with ``"~sha"`` (SHA-256 of the JSON without it) as last member."""
    body = dumps_canonical(record)
    sealed = body[:-1] + ("," if len(body) > 2 else "") + f'"{SEAL_KEY}":"{sha256_hex(body)}"}}'
    return sealed + "\n"


def _check_seal(raw: bytes | memoryview) -> bool:
    """Verify a sealed line from its bytes alone (no JSON parse: a batch line may be tens of MB).

    ``raw`` may be a memoryview into the mapped log: the body is hashed in place, never copied."""
    n = len(raw)
    if n < _SEAL_LEN + 2 or raw[n - 3 :] != b'"}\n':
        return False
    tail = bytes(raw[n - _SEAL_LEN - 1 :])
    if not tail.startswith(b',"~sha":"'):
        return False
    h = hashlib.sha256(raw[: n - _SEAL_LEN - 1])  # hashlib releases the GIL on large buffers
    h.update(b"}")
    return h.hexdigest() == tail[9:73].decode("ascii", "replace")


_BATCH_HEAD = re.compile(rb'^\{"batch_id":("(?:[^"\\]|\\.)*"),"kind":"batch","ops":')
_BATCH_TAIL = re.compile(rb',"seq":(\d+),"tt":(\d+),"~sha":"[0-9a-f]{64}"\}\n$')


def _head(raw: bytes | memoryview) -> dict[str, Any] | None:
    """kind/seq/tt/batch_id of a verified line; parses only small records fully."""
    m = _BATCH_HEAD.match(bytes(raw[:4096]))
    if m:
        t = _BATCH_TAIL.search(bytes(raw[-120:]))
        if not t:
            return None
        return {
            "kind": "batch",
            "batch_id": json.loads(m.group(1)),
            "seq": int(t.group(1)),
            "tt": int(t.group(2)),
        }
    try:
        rec = json.loads(bytes(raw))
    except ValueError:
        return None
    if not isinstance(rec, dict):
        return None
    rec.pop(SEAL_KEY, None)
    return rec


@dataclass
class LoggedBatch:
    seq: int
    batch_id: str
    tt: int
    offset: int  # byte offset of the batch line in the log
    length: int
    outcome: dict[str, Any] | None = None  # None while pending
    _ops: list[dict[str, Any]] | None = None

    def ops(self, path: Path) -> list[dict[str, Any]]:
        """The batch's ops, read back from the log on demand."""
        if self._ops is None:
            with open(path, "rb") as fh:
                fh.seek(self.offset)
                raw = fh.read(self.length)
            if not _check_seal(raw):
                raise CorruptError("event log batch changed on disk", seq=self.seq, path=str(path))
            return json.loads(raw)["ops"]
        return self._ops


@dataclass
class LogState:
    batches: list[LoggedBatch] = field(default_factory=list)
    good_bytes: int = 0  # length of the valid prefix
    torn_bytes: int = 0  # bytes of a torn final record (0 when the tail is clean)

    @property
    def last_tt(self) -> int:
        return self.batches[-1].tt if self.batches else 0

    @property
    def pending(self) -> LoggedBatch | None:
        if self.batches and self.batches[-1].outcome is None:
            return self.batches[-1]
        return None


def header_line() -> str:
    return _seal({"format": FORMAT, "kind": "header", "version": VERSION})


_PARALLEL_MIN = 1 << 20  # lines at least this long are hashed on the thread pool


def read_log(path: Path) -> LogState:
    """Parse and check a log; raises ``E_CORRUPT`` for damage before the final record.

    The file is memory-mapped and every line's seal is hashed in place; long batch lines are hashed on
    a few threads (SHA-256 releases the GIL), so verifying a 520 MB log costs one hashing pass, not a
    copy and a readline per line."""
    if not path.is_file():
        raise CorruptError("event log is missing", path=str(path))
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        lines = _scan_mapped(fh.fileno(), size) if size else []
    state = LogState()
    by_seq: dict[int, LoggedBatch] = {}
    for lineno, (a, b, rec, newline) in enumerate(lines, start=1):
        if rec is None:
            # A torn append leaves a final line without its newline; a complete but bad line is damage.
            if b == size and not newline:
                state.torn_bytes = b - a
                break
            final = lineno == len(lines)
            raise CorruptError(
                f"event log line {lineno} is damaged"
                + (
                    " (its final record, complete but with a bad seal)"
                    if final
                    else ", before its final record"
                )
                + "; refusing to open",
                path=str(path),
                line=lineno,
                byte_offset=a,
            )
        _check_record(rec, lineno, state, by_seq, path, a, b - a)
        state.good_bytes = b
    if state.good_bytes == 0:
        raise CorruptError("event log has no valid header", path=str(path))
    return state


def _scan_mapped(fd: int, size: int) -> list[tuple[int, int, dict[str, Any] | None, bool]]:
    """(start, end, head record or None if its seal or JSON is bad, ends with newline) per line.

    Only plain values leave this function, so no view into the map outlives it (an exception raised
    while a view is alive would keep the map from closing)."""
    out: list[tuple[int, int, dict[str, Any] | None, bool]] = []
    mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    try:
        view = memoryview(mm)
        try:
            spans: list[tuple[int, int]] = []
            pos = 0
            while pos < size:
                nl = mm.find(b"\n", pos)
                end = size if nl < 0 else nl + 1
                spans.append((pos, end))
                pos = end
            big = [i for i, (a, b) in enumerate(spans) if b - a >= _PARALLEL_MIN]
            verdict: dict[int, bool] = {}
            if big:
                workers = min(len(big), os.cpu_count() or 1, 4)
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    oks = pool.map(lambda i: _check_seal(view[spans[i][0] : spans[i][1]]), big)
                    verdict = dict(zip(big, oks, strict=True))
            for i, (a, b) in enumerate(spans):
                raw = view[a:b]
                try:
                    ok = verdict[i] if i in verdict else _check_seal(raw)
                    out.append((a, b, _head(raw) if ok else None, mm[b - 1 : b] == b"\n"))
                finally:
                    raw.release()
        finally:
            view.release()
    except BaseException:
        # on the way out of an error or an interrupt (a SIGTERM turned KeyboardInterrupt mid-scan), a view
        # still alive would make close() raise BufferError in place of the real exception: the map is then
        # left to the garbage collector and the exception goes on
        with contextlib.suppress(BufferError):
            mm.close()
        raise
    mm.close()
    return out


def _check_record(
    rec: dict[str, Any],
    lineno: int,
    state: LogState,
    by_seq: dict[int, LoggedBatch],
    path: Path,
    offset: int,
    length: int,
) -> None:
    def bad(msg: str) -> CorruptError:
        return CorruptError(f"event log line {lineno}: {msg}", path=str(path), line=lineno)

    kind = rec.get("kind")
    if lineno == 1:
        if kind != "header" or rec.get("format") != FORMAT:
            raise bad("not a TGMS event log header")
        if rec.get("version") != VERSION:
            raise bad(f"unsupported event log version {rec.get('version')!r}")
        return
    if kind == "batch":
        seq = rec["seq"]
        prev = state.batches[-1] if state.batches else None
        if prev is not None and prev.outcome is None:
            raise bad(f"batch {seq} follows batch {prev.seq}, which has no outcome")
        if seq != (prev.seq + 1 if prev else 1):
            raise bad(f"batch seq {seq} out of order")
        tt = rec["tt"]
        if prev is not None and tt <= prev.tt:
            raise bad("transaction times must strictly increase")
        b = LoggedBatch(seq=seq, batch_id=str(rec["batch_id"]), tt=tt, offset=offset, length=length)
        state.batches.append(b)
        by_seq[seq] = b
    elif kind == "outcome":
        pending = by_seq.get(rec.get("seq"))  # type: ignore[arg-type]
        if pending is None or pending is not state.batches[-1] or pending.outcome is not None:
            raise bad(f"outcome for seq {rec.get('seq')} without its pending batch")
        if rec.get("status") not in ("committed", "failed"):
            raise bad(f"unknown outcome status {rec.get('status')!r}")
        pending.outcome = {k: v for k, v in rec.items() if k not in ("kind", "seq", "batch_id")}
    else:
        raise bad(f"unknown record kind {kind!r}")


class EventLogWriter:
    """Appends sealed records with write-ahead fsync."""

    def __init__(self, path: Path, state: LogState) -> None:
        self.path = path
        self.state = state
        self.trimmed: list[dict[str, Any]] = []
        self._fh = open(path, "ab")  # noqa: SIM115 - held open for the store's lifetime

    @classmethod
    def create(cls, path: Path) -> EventLogWriter:
        with open(path, "xb") as fh:
            fh.write(header_line().encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        _fsync_dir(path.parent)
        return cls(path, read_log(path))

    @classmethod
    def open(cls, path: Path, state: LogState | None = None) -> EventLogWriter:
        """Open for appending; a torn tail (never acknowledged) is trimmed, with a warning.

        ``state`` is the log as :func:`read_log` just read it (the caller checked it against the database
        first, so a refused open has trimmed nothing)."""
        state = read_log(path) if state is None else state
        trimmed: list[dict[str, Any]] = []
        if state.torn_bytes:
            torn = state.torn_bytes
            with open(path, "r+b") as fh:
                fh.truncate(state.good_bytes)
                fh.flush()
                os.fsync(fh.fileno())
            state.torn_bytes = 0
            trimmed.append({"action": "trimmed_torn_tail", "bytes": torn})
            warnings.warn(
                f"{path}: trimmed {torn} bytes of a torn (unfinished, never acknowledged) final record",
                StoreWarning,
                stacklevel=3,
            )
        writer = cls(path, state)
        writer.trimmed = trimmed
        return writer

    def _append(self, line: str) -> None:
        self._fh.write(line.encode("utf-8"))
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.state.good_bytes += len(line.encode("utf-8"))

    def append_batch(
        self, seq: int, tt: int, ops: list[dict[str, Any]], batch_id: str | None = None
    ) -> LoggedBatch:
        bid = batch_id or f"b{seq:08d}"
        line = _seal({"batch_id": bid, "kind": "batch", "ops": ops, "seq": seq, "tt": tt})
        offset = self.state.good_bytes
        self._append(line)
        b = LoggedBatch(seq=seq, batch_id=bid, tt=tt, offset=offset, length=len(line.encode("utf-8")))
        self.state.batches.append(b)
        return b

    def append_outcome(self, batch: LoggedBatch, outcome: dict[str, Any]) -> None:
        rec = {"batch_id": batch.batch_id, "kind": "outcome", "seq": batch.seq, **outcome}
        self._append(_seal(rec))
        batch.outcome = dict(outcome)

    def close(self) -> None:
        self._fh.close()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
