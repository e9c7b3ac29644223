"""A content-addressed object store on disk: each JSON object is written once, under the SHA-256 of its
canonical form, and checked against that name when read back.

The executor keeps every step's result envelope and resolved arguments here, so a trace names its evidence
by digest and the claim verifier can load (and authenticate) exactly what a step returned. Layout::

    ROOT/ab/abcdef0123....json      canonical JSON of one object

Writes go to a temporary file that is renamed into place, so a crash leaves either nothing or the whole
object; an object that is already there is never rewritten (same name, same bytes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tgms.engine.canonical import Dumped, canonicalize, dumps_canonical, sha256_hex, sha256_pieces
from tgms.engine.errors import CorruptError, NotFoundError
from tgms.engine.execute.background import later
from tgms.engine.fileio import write_atomic

#: an object's canonical JSON: text, or UTF-8 byte pieces to write or hash one after another
Text = str | list[bytes | memoryview]


def _text(obj: Any, canonical: bool, dumped: Dumped | None) -> Text:
    """The canonical JSON of ``obj``: byte pieces when ``dumped`` splices large values in (never joined
    into one 17 MB copy), else text."""
    if dumped is not None:
        return dumped.data_of(obj, canonical=canonical)
    return dumps_canonical(obj if canonical else canonicalize(obj))


def _digest(text: Text) -> str:
    return sha256_hex(text) if isinstance(text, str) else sha256_pieces(text)


def _joined(text: Text) -> str | bytes:
    return text if isinstance(text, str) else b"".join(text)


class ResultStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / f"{digest}.json"

    def put(self, obj: Any, *, canonical: bool = False, dumped: Dumped | None = None) -> str:
        """Store ``obj`` and return its digest; ``canonical=True`` skips re-canonicalizing a value that
        already is (an operator envelope), which is a full walk of a possibly large payload; ``dumped``
        holds the texts of large values in it already dumped (spliced in, not dumped again)."""
        return self._store(_text(obj, canonical, dumped))

    def put_later(
        self, obj: Any, *, canonical: bool = False, dumped: Dumped | None = None
    ) -> Callable[[], str]:
        """:meth:`put`, its text built now and its hashing and storing on a worker thread when the text is
        large (engine/execute/background.py): call the result for the digest."""
        text = _text(obj, canonical, dumped)
        size = len(text) if isinstance(text, str) else sum(len(p) for p in text)
        return later(lambda: self._store(text), size)

    def _store(self, text: Text) -> str:
        digest = _digest(text)
        path = self._path(digest)
        if path.exists():
            return digest
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text if isinstance(text, str) else lambda f: f.writelines(text))
        return digest

    def has(self, digest: str) -> bool:
        return self._path(digest).exists()

    def get(self, digest: str) -> Any:
        path = self._path(digest)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"no stored object {digest}", digest=digest, root=str(self.root)) from None
        if sha256_hex(text) != digest:
            raise CorruptError(f"stored object {digest} does not match its digest", path=str(path))
        return json.loads(text)


class MemoryResults(ResultStore):
    """The same interface in memory (an executor run that keeps nothing on disk)."""

    def __init__(self) -> None:
        super().__init__(os.devnull)
        self._objects: dict[str, Text] = {}

    def _store(self, text: Text) -> str:
        digest = _digest(text)
        self._objects.setdefault(digest, text)
        return digest

    def has(self, digest: str) -> bool:
        return digest in self._objects

    def get(self, digest: str) -> Any:
        if digest not in self._objects:
            raise NotFoundError(f"no stored object {digest}", digest=digest)
        return json.loads(_joined(self._objects[digest]))
