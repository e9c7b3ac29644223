"""Writing a file or a directory all at once or not at all: the one way the project replaces content.

:func:`write_atomic` (a file): the content goes to a temporary file in the target's own directory (same
file system, so the final ``os.replace`` is atomic), flushed and fsynced, optionally checked, then
renamed over the target. A crash or an exception leaves the old file (or none) and no temporary behind;
two writers racing each leave a whole file.

:func:`atomic_dir` (a directory): built in a temporary directory beside the target and renamed into
place whole, so a reader never sees half of one; a directory cannot be renamed over a full one, so of
two builders racing the first wins and the second's rename fails (the caller decides what that means).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO


def write_atomic(
    path: str | os.PathLike[str],
    content: str | bytes | Callable[[BinaryIO], object],
    *,
    fsync: bool = True,
    shared: bool = False,
    check: Callable[[Path], object] | None = None,
) -> None:
    """Replace ``path``'s content with ``content`` (text as UTF-8, bytes, or a function writing to the
    open binary file, e.g. a streamed download). ``fsync``: flush to disk before the rename (off for
    caches a crash may lose). ``shared``: the usual mode under the umask (a page for people) instead of
    mkstemp's 0600. ``check``: called with the complete temporary file before the rename; whatever it
    raises leaves ``path`` as it was (a download that is not a whole gzip stream, a wrong checksum)."""
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
        if check is not None:
            check(Path(tmp))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str], *, prefix: str | None = None) -> Iterator[Path]:
    """A new empty directory beside ``path`` to build in; renamed to ``path`` when the block ends without
    an exception, removed in every case (nothing of it is left behind).

    ``path``'s parent must exist. The rename replaces an empty directory at ``path`` but raises
    :class:`OSError` when a full one is there (a racing builder finished first): callers that expect
    races catch it and use the winner's copy. ``prefix``: the temporary's name start (a sweep of stale
    temporaries may key on it); by default ``.<name>.``."""
    target = Path(path)
    scratch = Path(tempfile.mkdtemp(prefix=prefix or f".{target.name}.", dir=target.absolute().parent))
    try:
        yield scratch
        os.rename(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
