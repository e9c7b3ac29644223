"""Live progress of a campaign: tasks done per cell, accuracy so far, rate and ETA.

The driver feeds every finished record to :meth:`Progress.record`; a background thread prints a compact
table to stderr every few seconds while anything changed, and at least every 30 s as a heartbeat (a
task on a CPU model takes minutes; stdout stays for the tables), so a log never shows a stale ETA for
long. The ETA comes from the recent throughput (the last :data:`RECENT` tasks), not the run's average: a
one-off build at the start (vector-RAG's embeddings) or a slower cell later would otherwise skew it for the
rest of the run. The last line names the cell that finished a task last. On a terminal the table is
redrawn in place; in a log file (sbatch, CI) each update is appended, so the history stays readable.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from tgms.pipeline.systems.record import TaskRecord

#: tasks the ETA's throughput is measured over
RECENT = 10


@dataclass
class CellProgress:
    total: int
    done: int = 0  # finished in earlier runs (resume) plus this run
    new: int = 0  # finished in this run
    scored: int = 0
    correct: int = 0
    infra: int = 0


class Progress:
    def __init__(
        self,
        every_s: float = 2.0,
        out: TextIO | None = None,
        heartbeat_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_s = every_s
        # a CPU model takes minutes per task: redraw now and then anyway, so a log shows the run is alive
        self.heartbeat_s = heartbeat_s
        self._clock = clock
        self._last_draw = clock()
        self.out = out or sys.stderr
        self.cells: dict[str, CellProgress] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = clock()
        self._dirty = True
        self._recent: deque[float] = deque(maxlen=RECENT)  # when the last tasks finished
        self._last_cell: str | None = None
        self._lines_drawn = 0
        self._tty = bool(getattr(self.out, "isatty", lambda: False)())

    def add_cell(self, cell_id: str, total: int, finished: list[TaskRecord]) -> None:
        cp = CellProgress(total=total)
        for r in finished:
            self._count(cp, r)
        with self._lock:
            self.cells[cell_id] = cp
            self._dirty = True

    @staticmethod
    def _count(cp: CellProgress, record: TaskRecord) -> None:
        if record.status == "infra_error":
            cp.infra += 1
            return
        cp.done += 1
        if record.correct is not None:
            cp.scored += 1
            cp.correct += int(record.correct)

    def record(self, cell_id: str, record: TaskRecord) -> None:
        with self._lock:
            cp = self.cells[cell_id]
            self._count(cp, record)
            if record.status != "infra_error":
                cp.new += 1
                self._recent.append(self._clock())
            self._last_cell = cell_id
            self._dirty = True

    def render(self) -> str:
        with self._lock:
            cells = dict(self.cells)
            now = self._clock()
            elapsed = now - self._t0
            recent, last_cell = list(self._recent), self._last_cell
        new = sum(c.new for c in cells.values())
        left = sum(max(0, c.total - c.done) for c in cells.values())
        rate = new / elapsed if elapsed > 0 else 0.0
        eta = f"{left / self._recent_rate(recent, now, rate):,.0f} s" if rate > 0 and left else None
        eta = eta or ("done" if not left else "?")
        width = max([len(k) for k in cells] + [4])
        lines = [f"{'cell':<{width}}  {'done':>9}  {'accuracy':>8}  infra"]
        for name, c in cells.items():
            acc = f"{c.correct / c.scored:.3f}" if c.scored else "-"
            lines.append(f"{name:<{width}}  {c.done:>4}/{c.total:<4}  {acc:>8}  {c.infra:>5}")
        last = f"; last finished: {last_cell}" if last_cell and left else ""
        lines.append(f"{new} tasks in {elapsed:,.0f} s ({rate:.2f}/s), {left} left, ETA {eta}{last}")
        return "\n".join(lines)

    def _recent_rate(self, recent: list[float], now: float, overall: float) -> float:
        """Tasks per second over the last :data:`RECENT` finishes, up to now (a stall slows it down);
        the run's average until there are two."""
        if len(recent) < 2:
            return overall
        return max((len(recent) - 1) / max(now - recent[0], 1e-9), 1e-9)

    def draw(self, final: bool = False) -> None:
        with self._lock:
            quiet = self._clock() - self._last_draw >= self.heartbeat_s
            if not self._dirty and not final and not quiet:
                return
            self._dirty = False
            self._last_draw = self._clock()
        text = self.render()
        if self._tty and self._lines_drawn:
            self.out.write(f"\x1b[{self._lines_drawn}F\x1b[J")
        self.out.write(text + "\n")
        self.out.flush()
        self._lines_drawn = text.count("\n") + 1 if self._tty else 0

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.draw()

    def __enter__(self) -> Progress:
        self._t0 = self._clock()
        self._thread = threading.Thread(target=self._loop, name="campaign-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.draw(final=True)
