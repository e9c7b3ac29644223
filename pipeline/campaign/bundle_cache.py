"""Built bundles kept for reuse, by content: a second run (another run directory, a sweep job, a rerun
after ``rm -rf campaigns/``) of the same suite copies the bundle instead of building it again (a full
CollegeMsg build is a minute of oracle cross-checks on 2 cores).

A bundle is a function of the data (the source file's SHA-256, or the synthetic generator's sizes), the
data set, the seed, the build options and the code that builds it, so the cache key is a hash of exactly
those, the code taken as the bytes of every module of ``engine`` and ``pipeline``: any code change makes a
new key, and an entry can never be stale. An entry is a directory ``<root>/<key>/`` holding the bundle's
three files; it appears by one rename, so a reader never sees half of one and two builders racing keep
one. A reused bundle is verified (replayed, every hash checked) before the run uses it; one that fails is
removed and the bundle is built again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

from tgms.engine.api import CorruptError, NotFoundError, atomic_dir, canonical_json, sha256_hex
from tgms.pipeline.campaign.bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    FILES,
    Manifest,
    remove_stale_scratch,
    source_record,
    verify_bundle,
)


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 over the path and bytes of every ``.py`` and ``.json`` file of the ``engine`` and ``pipeline``
    packages (code, and data that decides a build, like the shipped cost model)."""
    from tgms import engine, pipeline

    h = hashlib.sha256()
    for pkg in (engine, pipeline):
        root = Path(pkg.__file__).resolve().parent  # type: ignore[arg-type]
        for path in sorted([*root.rglob("*.py"), *root.rglob("*.json")]):
            h.update(f"{pkg.__name__}/{path.relative_to(root).as_posix()}\0".encode())
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def bundle_key(dataset: str, seed: int, source: str | None, events: int, nodes: int) -> str:
    """The cache key of the bundle ``build_bundle(dataset, seed, source=..., events=..., nodes=...)``."""
    spec: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "dataset": dataset,
        "seed": seed,
        "source": source_record(dataset, source, events, nodes).model_dump(mode="json", exclude_unset=True),
        "options": {"crosscheck": True, "probes": True},
        "code": code_fingerprint(),
    }
    return sha256_hex(canonical_json(spec))[:32]


def fetch(root: Path, key: str, target: Path) -> Manifest | None:
    """Copy the cached bundle ``key`` into ``target`` and return its manifest once :func:`verify_bundle`
    passes; None when there is no entry, or when the copy fails verification (the entry is then removed)."""
    entry = root / key
    if not all((entry / f).is_file() for f in FILES):
        return None
    target.mkdir(parents=True, exist_ok=True)
    try:
        for f in FILES:
            shutil.copyfile(entry / f, target / f)
        return verify_bundle(target).manifest
    except (CorruptError, NotFoundError, OSError):
        for f in FILES:
            (target / f).unlink(missing_ok=True)
        shutil.rmtree(entry, ignore_errors=True)
        return None


def keep(root: Path, key: str, bundle: Path) -> bool:
    """Put a copy of the built ``bundle`` in the cache as ``key``; False when it could not (a read-only or
    full cache costs a rebuild next time, never the run)."""
    if (root / key).is_dir():
        return True
    try:
        root.mkdir(parents=True, exist_ok=True)
        remove_stale_scratch(root)  # what a killed keep left (its pid no longer runs)
        # the entry appears by one rename; a racing builder that got there first wins (OSError here)
        with atomic_dir(root / key, prefix=f".bundle-{os.getpid()}-") as scratch:
            for f in FILES:
                shutil.copyfile(bundle / f, scratch / f)
        return True
    except OSError:
        return (root / key).is_dir()
