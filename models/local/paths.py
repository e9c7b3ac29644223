"""Where the local servers keep what they build once: logs, the vLLM venv, converted weights.

The same root as the rest of the project's caches (``$TGMS_CACHE``, else ``~/.cache/tgms``), outside any
checkout, so a clone stays clean and a second checkout reuses the 3.5 GiB vLLM venv. :func:`cache_root` is
the one rule; ``pipeline/cli`` calls it too (``models/`` may not import ``pipeline``).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$TGMS_CACHE`` when set, else ``~/.cache/tgms``."""
    return Path(os.environ.get("TGMS_CACHE") or Path.home() / ".cache" / "tgms")


def logs_dir() -> Path:
    """Server logs: one file per start (``<name>-<port>-<time>.log``)."""
    return cache_root() / "logs" / "local"
