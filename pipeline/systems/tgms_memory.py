"""The ``tgms`` system's evolution memory (the ``memory`` switch, ablation ``memory``): build the store's
weekly notes once, when the system is built, and give each task the notes of its question's weeks.

The notes live under the system's work directory, one notes file per (store digest, model, seed): a note is
what that model wrote about that store, and a rerun (or another actor on the node) finds them on disk and
sends no request; a week not noted yet is asked through the run's client, whose response cache makes a
rerun free anyway. Each task's record says what memory did in ``extras["memory"]``: the window read from the
question, the weeks it touches, the ids of the notes put in the prompt, and the build's counts.

Retrieval reads only the task's ``question`` (never its oracle plan or gold).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tgms.engine.api import OpContext
from tgms.models.memory import Memory, notes_block
from tgms.models.memory_window import question_window, weeks_of
from tgms.pipeline.systems.base import CallLog, SystemEnv

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def memory_dir(env: SystemEnv, store_digest: str) -> Path:
    """Where ``env``'s notes live: ``<work>/memory/<digest16>/<model>-s<seed>``."""
    model = _UNSAFE.sub("-", env.settings.generation.model).strip("-") or "model"
    return Path(env.work_dir) / "memory" / store_digest[:16] / f"{model}-s{env.settings.generation.seed}"


class TaskMemory:
    """The built memory of one system instance: notes on disk, the store's extent, the build's report."""

    def __init__(self, env: SystemEnv, store_digest: str, k: int) -> None:
        self.k = k
        self.memory = Memory(memory_dir(env, store_digest), store_digest=store_digest)
        ctx = OpContext(env.store())
        extent = env.store().stats().get("extent") or {}
        self.extent = (extent["vt_min"], extent["vt_max"]) if extent.get("vt_min") is not None else None
        calls = CallLog(env.client, env.settings.generation.max_tokens)
        report = self.memory.build(calls.complete, ctx, env.settings.generation.model)
        self.build = {
            **report.to_dict(),
            "requests": sum(1 for c in calls.calls if not c.cached),
            "cached": sum(1 for c in calls.calls if c.cached),
            "live_notes": len(self.memory.bank().live()),
        }

    def for_task(self, ctx: OpContext, question: str) -> tuple[str, dict[str, Any]]:
        """The planner's memory section for ``question`` and what to record about it."""
        window = question_window(question, self.extent)
        notes = self.memory.retrieve(ctx, window, self.k)
        info = {
            "window": window,
            "weeks": weeks_of(window)[:60],  # a question over the whole history touches ~30
            "notes": [n.id for n in notes],
            "build": self.build,
        }
        return notes_block(notes), info
