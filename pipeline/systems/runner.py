"""Run a system over a list of tasks: concurrently, one JSON line per finished task, resumable.

``concurrency`` tasks run at once on a thread pool, so a vLLM replica holds that many requests and batches
them (one request at a time wastes a GPU); the client's per-replica limit still caps what each replica
holds. Each finished record is appended to the JSONL file and flushed at once, so a killed run loses at
most the tasks in flight; a rerun with the same output file skips the task ids already recorded
(``resume``). The summary is computed from the records alone.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import BuiltSystem, run_task
from tgms.pipeline.systems.record import TaskRecord, parse_record


def read_records(path: str | Path) -> list[TaskRecord]:
    """The records of a JSONL file, typed; a torn line (a kill mid-write) is ignored, and a line that is
    JSON but not a record is ``E_CORRUPT`` naming the file and line."""
    p = Path(path)
    if not p.exists():
        return []
    return parse_lines(p.read_text(encoding="utf-8"), str(p))


def system_records(path: str | Path, system: str, task_ids: set[str] | None = None) -> list[TaskRecord]:
    """One system's records in ``path`` (of ``task_ids`` when given): what a rerun skips and what the
    summary counts, decided here for both."""
    return [
        r for r in read_records(path) if r.system == system and (task_ids is None or r.task_id in task_ids)
    ]


def parse_lines(text: str, source: str) -> list[TaskRecord]:
    """The records of a JSONL text (a file, or an MLflow artifact named by ``source``)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        out.append(parse_record(value, source=f"{source}:{n}"))
    return out


def run_tasks(
    system: BuiltSystem,
    tasks: Iterable[Task],
    *,
    concurrency: int = 1,
    out: str | Path | None = None,
    resume: bool = True,
    progress: Callable[[int, int, TaskRecord], None] | None = None,
) -> list[TaskRecord]:
    """Run every task not yet in ``out``; the new records, in task order."""
    todo = list(tasks)
    if out is not None and resume:
        done = {r.task_id for r in system_records(out, system.name)}
        todo = [t for t in todo if t.id not in done]
    if out is not None:
        _trim_torn_tail(Path(out))
    lock = threading.Lock()
    fh = open(out, "a", encoding="utf-8") if out is not None else None  # noqa: SIM115
    results: dict[str, TaskRecord] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="task") as pool:
            futures = {pool.submit(run_task, system, t): t.id for t in todo}
            for n, fut in enumerate(as_completed(futures), 1):
                rec = fut.result()
                with lock:
                    results[futures[fut]] = rec
                    if fh is not None:
                        fh.write(rec.to_json() + "\n")
                        fh.flush()
                if progress is not None:
                    progress(n, len(todo), rec)
    finally:
        if fh is not None:
            fh.close()
    return [results[t.id] for t in todo]


def _trim_torn_tail(path: Path) -> None:
    """Cut a last line that a kill left without its newline, so the next record starts on its own line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    with path.open("r+b") as fh:
        fh.truncate(data.rfind(b"\n") + 1)


def summarize(records: Iterable[TaskRecord]) -> dict[str, Any]:
    """Accuracy and its denominators, first-emission validity, tokens and seconds per task."""
    rows = list(records)
    n = len(rows)
    scored = [r for r in rows if r.correct is not None]
    answered = [r for r in scored if r.status == "answered"]
    correct = sum(1 for r in scored if r.correct)
    firsts = [r.first_emission_valid for r in rows if r.first_emission_valid is not None]
    repeats = [r.repeat_replies for r in rows if r.repeat_replies is not None]
    status: dict[str, int] = {}
    for r in rows:
        status[r.status] = status.get(r.status, 0) + 1

    def per_task(key: str) -> float | None:
        return round(sum(getattr(r.tokens, key) for r in rows) / n, 1) if n else None

    return {
        "tasks": n,
        "scored": len(scored),
        "unscored_infra": n - len(scored),
        "correct": correct,
        "accuracy": round(correct / len(scored), 4) if scored else None,
        "coverage": round(len(answered) / len(scored), 4) if scored else None,
        "conditional_accuracy": round(correct / len(answered), 4) if answered else None,
        "first_emission_validity": round(sum(firsts) / len(firsts), 4) if firsts else None,
        "repeat_replies": sum(repeats) if repeats else None,
        "status": dict(sorted(status.items())),
        "prompt_tokens_per_task": per_task("prompt"),
        "completion_tokens_per_task": per_task("completion"),
        "seconds_per_task": round(sum(r.latency_s for r in rows) / n, 3) if n else None,
        "llm_calls_per_task": round(sum(len(r.llm_calls) for r in rows) / n, 2) if n else None,
    }
