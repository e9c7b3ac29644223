"""Writing a file all at once or not at all: the one way the project replaces a file's content.

The content goes to a temporary file in the target's own directory (same file system, so the final
``os.replace`` is atomic), flushed and fsynced, then renamed over the target. A crash or an exception
leaves the old file (or none) and no temporary behind; two writers racing each leave a whole file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomic(
    path: str | os.PathLike[str],
    content: str | bytes | Callable[[BinaryIO], object],
    *,
    fsync: bool = True,
    shared: bool = False,
) -> None:
    """Replace ``path``'s content with ``content`` (text as UTF-8, bytes, or a function writing to the
    open binary file). ``fsync``: flush to disk before the rename (off for caches a crash may lose).
    ``shared``: the usual mode under the umask (a page for people) instead of mkstemp's 0600."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.absolute().parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        if shared:
            umask = os.umask(0o022)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            if callable(content):
                content(f)
            else:
                f.write(content.encode("utf-8") if isinstance(content, str) else content)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
