"""A content-addressed response cache on disk.

The key is the sha256 of the canonical JSON of everything that determines a reply at temperature 0 with
a fixed seed: the model, the full message list, the sampling parameters and the response format
(:func:`request_key`). A rerun, or an ablation that sends the same prompt, reads the stored reply and
sends no request. Entries are written atomically (a temporary file in the same directory, then
``os.replace``) so concurrent writers and a crash never leave half an entry; an entry that does not parse,
or whose stored key is not its name, is treated as a miss and rewritten by the next store.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tgms.engine.api import write_atomic


def canonical_json(value: Any) -> str:
    """One byte sequence per value: sorted keys, no whitespace, UTF-8 kept, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_key(
    model: str, messages: list[dict[str, Any]], sampling: dict[str, Any], response_format: Any
) -> str:
    """The cache key (and request hash) of one chat request."""
    material = {
        "model": model,
        "messages": messages,
        "sampling": sampling,
        "response_format": response_format,
    }
    return hashlib.sha256(canonical_json(material).encode("utf-8")).hexdigest()


class ResponseCache:
    """Replies by request key, one JSON file per entry under ``root/<key[:2]>/<key>.json``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply, or None when absent or unreadable (a corrupt entry is a miss)."""
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("reply"), dict):
            return None
        return entry["reply"]

    def put(self, key: str, reply: dict[str, Any]) -> None:
        """Store ``reply`` under ``key`` atomically (replacing any previous, possibly corrupt, entry)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = canonical_json({"key": key, "reply": reply})
        write_atomic(path, data)
