"""The bi-temporal store: a directory holding the event log and one backend database.

::

    DIR/store.json       {"format": "tgms-store", "backend": "duckdb" | "kuzu", ...}
    DIR/eventlog.jsonl   the source of truth (see engine.store.eventlog)
    DIR/store.duckdb     or DIR/store.kuzu: the materialized versions
    DIR/.lock            held (flock) by the one writer

Writing a batch: parse (a malformed batch is refused before anything is logged) -> take ``tt`` from the
hybrid logical clock -> append + fsync the batch record -> plan it against current belief -> apply it in
one backend transaction (meta ``last_seq`` in the same transaction) -> append the outcome. If planning
fails (unknown identity, ...), the batch is logged as failed and nothing changes. On open for writing, a
pending batch (logged, no outcome: a crash) is completed: applied if the store has not seen it, and its
outcome appended.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tgms.engine.canonical import dumps_canonical
from tgms.engine.errors import (
    ConflictError,
    CorruptError,
    NotFoundError,
    SchemaError,
    TGMSError,
    error_from_dict,
)
from tgms.engine.store.backends import backend_class
from tgms.engine.store.backends.base import Backend
from tgms.engine.store.clock import Clock, HybridLogicalClock, make_clock
from tgms.engine.store.digest import store_digest
from tgms.engine.store.eventlog import LOG_NAME, EventLogWriter, LoggedBatch, read_log
from tgms.engine.store.model import ScanFilter
from tgms.engine.store.ops import Op, op_to_json, parse_batch
from tgms.engine.store.reconcile import check_against_log, warn_unreconciled
from tgms.engine.store.writer import BatchPlanner

STORE_META = "store.json"
FORMAT = "tgms-store"
INGEST_CHUNK = 1_000_000  # events per logged batch on the bulk path


@dataclass(frozen=True)
class BatchResult:
    seq: int
    batch_id: str
    tt: int
    status: str  # "committed" | "failed"
    stats: dict[str, int]
    error: dict[str, Any] | None = None


class Store:
    """One open store. Use :meth:`create`, :meth:`open` or :func:`replay`; close it (or use ``with``)."""

    def __init__(
        self,
        root: Path,
        backend: Backend,
        read_only: bool,
        log: EventLogWriter | None,
        clock: Clock | None,
        lock_fd: int | None,
    ) -> None:
        self.root = root
        self.backend = backend
        self.read_only = read_only
        self._log = log
        self._clock = clock
        self._lock_fd = lock_fd
        self._entities: dict[str, int] | None = None
        #: bumped by every applied batch; readers key derived caches on it (cheaper than reading meta)
        self.generation = 0
        self._uids: pa.Array | None = None
        self._state_token: tuple[int, str] | None = None  # (generation, token)
        #: what opening for writing repaired: ``{"action": ..., ...}`` records (see ``tgms check``)
        self.recovered: list[dict[str, Any]] = []

    # -- lifecycle ----------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        root: str | os.PathLike[str],
        backend: str = "duckdb",
        now: Callable[[], int] | None = None,
        clock: str = "wall",
    ) -> Store:
        """Create a store. ``clock`` gives its batches' transaction times: ``wall`` (a hybrid logical
        clock over ``now``) or ``canonical`` (deterministic, for built stores: see
        :mod:`engine.store.clock`)."""
        clk = make_clock(clock, 0, now)  # an unknown clock is refused before anything is created
        root = Path(root)
        bcls = backend_class(backend)
        if (root / STORE_META).exists() or (root / LOG_NAME).exists():
            raise ConflictError("a store already exists in this directory", path=str(root))
        root.mkdir(parents=True, exist_ok=True)
        lock_fd = _lock(root)
        try:
            db = bcls.create(root / bcls.db_name)
            log = EventLogWriter.create(root / LOG_NAME)
            meta = {"format": FORMAT, "version": 1, "backend": backend, "log": LOG_NAME, "db": bcls.db_name}
            (root / STORE_META).write_text(dumps_canonical(meta) + "\n")
        except BaseException:
            os.close(lock_fd)
            raise
        return cls(root, db, False, log, clk, lock_fd)

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str],
        read_only: bool = False,
        now: Callable[[], int] | None = None,
        clock: str = "wall",
    ) -> Store:
        """Open a store. Read-only opens change no file; a log that needs repair (a pending batch, a torn
        tail) is reported with a :class:`~engine.errors.StoreWarning` naming ``tgms check --repair``. A
        write open first checks the database against the log (``E_CORRUPT`` with every byte left as it
        was), then trims a torn tail (with a warning) and completes a pending batch. ``clock`` is as for
        :meth:`create` (this session's writes only; the log records no clock)."""
        make_clock(clock, 0, now)  # an unknown clock is refused before anything is opened
        root = Path(root)
        bcls = backend_class(read_store_meta(root)["backend"])
        if read_only:
            state = read_log(root / LOG_NAME)  # refuse a damaged log (E_CORRUPT); a torn tail is left alone
            store = cls(root, bcls.open(root / bcls.db_name, read_only=True), True, None, None, None)
            try:
                warn_unreconciled(root, state, store.applied_seq())
            except BaseException:
                store.close()
                raise
            return store
        lock_fd = _lock(root)
        try:
            state = read_log(root / LOG_NAME)
            db = bcls.open(root / bcls.db_name, read_only=False)
            try:
                check_against_log(state, int(db.get_meta().get("last_seq", "0")))
                log = EventLogWriter.open(root / LOG_NAME, state)
            except BaseException:
                db.close()
                raise
            store = cls(root, db, False, log, make_clock(clock, log.state.last_tt, now), lock_fd)
            store.recovered = log.trimmed
            store._recover()
        except BaseException:
            os.close(lock_fd)
            raise
        return store

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        self.backend.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @property
    def log_path(self) -> Path:
        return self.root / LOG_NAME

    # -- writes -------------------------------------------------------------------------------------
    def write(self, ops: list[dict[str, Any]], batch_id: str | None = None) -> BatchResult:
        """Write one batch; raises the batch's TGMSError after logging it as failed."""
        result = self._write(ops, batch_id)
        if result.error is not None:
            raise error_from_dict(result.error)
        return result

    def try_write(self, ops: list[dict[str, Any]], batch_id: str | None = None) -> BatchResult:
        """Like :meth:`write`, but a failed batch is returned (status "failed") instead of raised."""
        return self._write(ops, batch_id)

    def _write(self, ops: list[dict[str, Any]], batch_id: str | None) -> BatchResult:
        if self.read_only or self._log is None or self._clock is None:
            raise ConflictError("the store is open read-only", path=str(self.root))
        parsed = parse_batch(ops)  # refuse malformed input before it is logged
        logged = [op_to_json(op) for op in parsed]
        seq = len(self._log.state.batches) + 1
        tt = self._clock.next()
        batch = self._log.append_batch(seq, tt, logged, batch_id)
        return self._apply_logged(batch, parsed)

    def _apply_logged(self, batch: LoggedBatch, ops: list[dict[str, Any]] | list[Op]) -> BatchResult:
        """Plan and apply a batch that is already in the log; append its outcome."""
        assert self._log is not None
        try:
            parsed: list[Op] = [o for o in ops if not isinstance(o, dict)]
            if len(parsed) < len(ops):  # JSON ops (from the log): parse them
                parsed = parse_batch(ops)
            planner = BatchPlanner(self.backend, batch.seq, batch.tt, self.entity_ids())
            changes = planner.plan(parsed)
        except TGMSError as exc:
            failed: dict[str, Any] = {"status": "failed", "error": exc.to_dict()}
            self._log.append_outcome(batch, failed)
            return BatchResult(batch.seq, batch.batch_id, batch.tt, "failed", {}, exc.to_dict())
        except Exception as exc:
            # A bug while planning: record the batch as failed (so the store still opens) and surface it.
            err = {"error": "E_INTERNAL", "message": f"{type(exc).__name__}: {exc}", "details": {}}
            self._log.append_outcome(batch, {"status": "failed", "error": err})
            raise
        self.backend.apply(changes)
        self.generation += 1
        self._entities = None
        self._uids = None
        outcome = {"status": "committed", "error": None, "stats": planner.stats}
        self._log.append_outcome(batch, outcome)
        return BatchResult(batch.seq, batch.batch_id, batch.tt, "committed", dict(planner.stats))

    def _recover(self) -> None:
        """Complete a pending batch after a crash (the database was checked against the log on open)."""
        assert self._log is not None
        pending = self._log.state.pending
        if pending is None:
            return
        if self.applied_seq() == pending.seq:  # applied, crashed before the outcome was written
            self._log.append_outcome(pending, {"status": "committed", "error": None, "stats": {}})
            self.recovered.append({"action": "recorded_outcome", "seq": pending.seq, "status": "committed"})
        else:
            result = self._apply_logged(pending, pending.ops(self.log_path))
            self.recovered.append({"action": "applied_pending", "seq": pending.seq, "status": result.status})

    def committed_batch_ids(self) -> set[str]:
        """The ``batch_id`` of every committed batch in the log (a writer that labels its batches skips
        those on a rerun: ``tgms write``)."""
        # a read-only store keeps no log state: read the log (it changes no file)
        batches = self._log.state.batches if self._log is not None else read_log(self.log_path).batches
        return {b.batch_id for b in batches if (b.outcome or {}).get("status") == "committed"}

    def applied_seq(self) -> int:
        """The last batch the database has applied (its meta ``last_seq``)."""
        return int(self.backend.get_meta().get("last_seq", "0"))

    def state_token(self) -> str:
        """A short token naming the store's belief state (last applied batch and its ``tt``).

        Equal on every backend for one log (replay reuses ``tt``); it changes with every applied batch,
        so a cursor bound to it is refused once the store has changed. Cached per ``generation``."""
        if self._state_token is None or self._state_token[0] != self.generation:
            meta = self.backend.get_meta()
            self._state_token = (self.generation, f"{meta.get('last_seq', '0')}@{meta.get('last_tt', '0')}")
        return self._state_token[1]

    # -- convenience writers (one op per batch) -----------------------------------------------------
    def assert_node(self, uid: str, vt_s: int, vt_e: int | None = None, **kw: Any) -> BatchResult:
        op = {"op": "assert_node", "uid": uid, "vt_s": vt_s, **kw}
        if vt_e is not None:
            op["vt_e"] = vt_e
        return self.write([op])

    def assert_edge(
        self, src: str, dst: str, rel_type: str, vt_s: int, vt_e: int | None = None, **kw: Any
    ) -> BatchResult:
        op = {"op": "assert_edge", "src": src, "dst": dst, "rel_type": rel_type, "vt_s": vt_s, **kw}
        if vt_e is not None:
            op["vt_e"] = vt_e
        return self.write([op])

    def retract(self, ref: dict[str, Any], t: int) -> BatchResult:
        return self.write([{"op": "retract", "ref": ref, "t": t}])

    def correct(
        self, ref: dict[str, Any], props: dict[str, Any], vt_s: int | None = None, vt_e: int | None = None
    ) -> BatchResult:
        op: dict[str, Any] = {"op": "correct", "ref": ref, "props": props}
        if vt_s is not None or vt_e is not None:
            op["vt_s"], op["vt_e"] = vt_s, vt_e
        return self.write([op])

    def ingest_events(self, frame: Any, chunk: int = INGEST_CHUNK) -> list[BatchResult]:
        """Bulk-ingest an event frame (``engine.ingest.events.EventFrame`` or a table/dict of columns)."""
        table, rel_type, label = _frame_parts(frame)
        disc = None
        if table.num_rows > chunk:
            # Several logged batches must believe what one op would: order by time (stable, so repeats
            # keep their order) so a uid's first event falls in the first chunk that names it, and fix
            # the repeat discriminators over the whole frame.
            table = table.take(pc.sort_indices(table, [("t", "ascending")]))
            disc = _repeat_discs(table)
        out = []
        for start in range(0, max(table.num_rows, 1), chunk):
            part = table.slice(start, chunk)
            op: dict[str, Any] = {
                "op": "ingest_events",
                "rel_type": rel_type,
                "label": label,
                "src": part["src"].to_pylist(),
                "dst": part["dst"].to_pylist(),
                "t": part["t"].to_pylist(),
            }
            if "t_end" in part.column_names and part["t_end"].null_count < part.num_rows:
                op["t_end"] = part["t_end"].to_pylist()
            if "props" in part.column_names and part["props"].null_count < part.num_rows:
                op["props"] = part["props"].to_pylist()
            if disc is not None:
                op["disc"] = disc[start : start + chunk]
            out.append(self.write([op]))
        return out

    # -- reads --------------------------------------------------------------------------------------
    def entity_ids(self) -> dict[str, int]:
        """uid -> nid (cached; invalidated by writes)."""
        if self._entities is None:
            t = self.backend.entities()
            self._entities = dict(zip(t["uid"].to_pylist(), t["nid"].to_pylist(), strict=True))
        return self._entities

    def uids(self) -> pa.Array:
        """uids indexed by nid."""
        if self._uids is None:
            self._uids = self.backend.entities()["uid"].combine_chunks()
        return self._uids

    def scan_nodes(self, flt: ScanFilter | None = None) -> pa.Table:
        return self.backend.scan_nodes(flt or ScanFilter())

    def scan_edges(self, flt: ScanFilter | None = None) -> pa.Table:
        return self.backend.scan_edges(flt or ScanFilter())

    def digest(self) -> str:
        every = ScanFilter(all_beliefs=True)
        return store_digest(self.backend.scan_nodes(every), self.backend.scan_edges(every), self.uids())

    def public_rows(self, flt: ScanFilter | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Node and edge versions as plain dicts (uids for endpoints, props parsed): the oracles' input."""
        flt = flt or ScanFilter(all_beliefs=True)
        uids = self.uids().to_pylist()
        nodes = self.backend.scan_nodes(flt).to_pylist()
        edges = self.backend.scan_edges(flt).to_pylist()
        for n in nodes:
            n.pop("nid")
            n["props"] = json.loads(n["props"]) if n["props"] else {}
        for e in edges:
            e["src"], e["dst"] = uids[e["src"]], uids[e["dst"]]
            e["props"] = json.loads(e["props"]) if e["props"] else {}
        return nodes, edges

    def stats(self) -> dict[str, Any]:
        from tgms.engine.store.stats import store_stats

        return store_stats(self)


def replay(log_path: str | os.PathLike[str], root: str | os.PathLike[str], backend: str = "duckdb") -> Store:
    """Rebuild a store from an event log: same ``tt`` per batch, recorded failures reproduced and skipped.

    The new store gets a byte-identical copy of the log. Replay refuses to continue (``E_CORRUPT``) if a
    batch's outcome differs from the recorded one.
    """
    log_path = Path(log_path)
    state = read_log(log_path)
    if state.torn_bytes:
        raise CorruptError(
            f"the event log ends in a torn record ({state.torn_bytes} bytes); trim it with "
            f"`tgms check --store {log_path.parent} --repair` (if that directory is its store), then replay",
            path=str(log_path),
            torn_bytes=state.torn_bytes,
        )
    store = Store.create(root, backend, now=lambda: 0)
    assert store._log is not None
    for b in state.batches:
        ops = b.ops(log_path)
        logged = store._log.append_batch(b.seq, b.tt, ops, b.batch_id)
        result = store._apply_logged(logged, ops)
        if b.outcome is None:  # a pending tail batch: acknowledged, so it is applied as on open
            continue
        want = b.outcome["status"]
        got_err = (result.error or {}).get("error")
        want_err = (b.outcome.get("error") or {}).get("error")
        if result.status != want or got_err != want_err:
            store.close()
            raise CorruptError(
                "replay diverged from the recorded outcome",
                seq=b.seq,
                recorded=want,
                recorded_error=want_err,
                replayed=result.status,
                replayed_error=got_err,
            )
    store._clock = HybridLogicalClock(state.last_tt)
    return store


def _repeat_discs(table: pa.Table) -> list[str]:
    """``""`` for the first occurrence of each (src, dst, t), ``"1"``, ``"2"``, ... for exact repeats."""
    seen: dict[tuple[str, str, int], int] = {}
    out = []
    for key in zip(table["src"].to_pylist(), table["dst"].to_pylist(), table["t"].to_pylist(), strict=True):
        k = seen.get(key, 0)
        seen[key] = k + 1
        out.append("" if k == 0 else str(k))
    return out


def _frame_parts(frame: Any) -> tuple[pa.Table, str, str]:
    table = getattr(frame, "table", None)
    if table is not None:
        return table, frame.rel_type, getattr(frame, "label", "node")
    if isinstance(frame, dict):
        return pa.table(frame["columns"]), frame["rel_type"], frame.get("label", "node")
    raise SchemaError("ingest_events needs an EventFrame or {'columns', 'rel_type'}")


def _lock(root: Path) -> int:
    try:
        fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # EACCES / EPERM / EROFS: a store we may read but not write
        raise ConflictError(
            "the store is read-only here (cannot take its writer lock); read-only commands still work",
            path=str(root),
            reason=exc.strerror or type(exc).__name__,
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise ConflictError("another writer holds this store", path=str(root)) from exc
    return fd


def read_store_meta(root: Path) -> dict[str, Any]:
    """``store.json`` of a store directory: ``E_NOT_FOUND`` when there is no such directory, ``E_CORRUPT``
    when the directory is not a TGMS store."""
    if not root.exists():
        raise NotFoundError(f"no store at {root}: the directory does not exist", path=str(root))
    if not root.is_dir():
        raise NotFoundError(f"no store at {root}: it is a file, not a store directory", path=str(root))
    meta_path = root / STORE_META
    if not meta_path.exists():
        raise CorruptError("not a TGMS store (store.json missing)", path=str(root))
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptError("store.json is not JSON", path=str(meta_path)) from exc
    except OSError as exc:
        raise CorruptError(f"store.json cannot be read: {exc.strerror}", path=str(meta_path)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CorruptError("store.json is not a TGMS store descriptor", path=str(meta_path))
    return meta


__all__ = ["BatchResult", "Store", "replay"]
