"""Canonical bundles: the unit a campaign distributes and a paper table cites (DESIGN §3.3).

A bundle directory holds three files:

- ``eventlog.jsonl``: the canonical event log of the built store (the data set load and the suite's probe
  corrections, every batch stamped by the canonical clock, so the bytes are the same on any machine);
- ``suite.json``: the task suite generated from that store (gold cross-checked by the oracles);
- ``manifest.json``: what it is — data set, source file and its SHA-256, seed, build options, the store
  digest, the suite's SHA-256 and test-split SHA-256, the event log's SHA-256, the generator versions.

:func:`build_bundle` builds one in a scratch store next to the output and keeps only the three files;
:func:`verify_bundle` replays the log into a scratch store and checks every recorded hash and the digest.
Nothing in a bundle depends on where or when it was built: two builds are byte-identical (tested).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from tgms.engine.api import (
    LOG_NAME,
    ConflictError,
    CorruptError,
    NotFoundError,
    SchemaError,
    build_store,
    canonical_json,
    replay,
    sha256_hex,
    source_path,
    source_sha256,
)
from tgms.pipeline.boundary import validation_problems
from tgms.pipeline.scoring.suite import Suite, Task, parse_suite

BUNDLE_FORMAT = "tgms-bundle"
BUNDLE_VERSION = 1
EVENTLOG = "eventlog.jsonl"
SUITE = "suite.json"
MANIFEST = "manifest.json"
FILES = (EVENTLOG, SUITE, MANIFEST)

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def file_sha256(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BundleSource(_Frozen):
    """What a bundle was built from, by content."""

    name: str  # "SNAP <dataset>", "synthetic generator" or "SNAP <dataset> (analyst questions)"
    sha256: str | None = None  # the source file's content hash (None for the synthetic generator)
    events: int | None = None  # synthetic only (a field left unset is absent from the file)
    nodes: int | None = None  # synthetic only
    questions: list[str] | None = None  # an analyst bundle's question ids (pipeline.bench.analyst_bundle)


class BundleOptions(_Frozen):
    crosscheck: bool | None = None  # the suite's gold was cross-checked by the brute-force oracles
    probes: bool | None = None
    analyst_questions: int | None = None  # an analyst bundle: how many questions it holds


class Manifest(_Frozen):
    """A bundle's ``manifest.json``: what the bundle is, every hash :func:`verify_bundle` checks, and the
    versions that made it. Written as canonical JSON of the fields that were set (a SNAP source has no
    ``events``/``nodes``), so its bytes are what the bundle format has always written."""

    format: Literal["tgms-bundle"]
    version: int
    bundle_version: int
    dataset: str
    source: BundleSource
    seed: int
    options: BundleOptions
    clock: str  # "canonical": every batch stamped by the canonical clock
    store_digest: str
    suite_sha256: str
    test_sha256: str
    eventlog_sha256: str
    generator_version: str
    #: the synthetic generator's planted patterns (its own JSON document); None for a SNAP set
    planted: dict[str, Any] | None

    def to_json(self) -> str:
        return canonical_json(self.model_dump(mode="json", exclude_unset=True))


@dataclass(frozen=True)
class Verified:
    """A bundle that replayed to its manifest's digest and matched every hash: what was checked."""

    bundle: Path
    manifest: Manifest
    checks: dict[str, dict[str, Any]]  # per check: expected, found, ok

    def to_dict(self) -> dict[str, Any]:
        """``{"ok", "bundle", "checks", "manifest"}``: what ``tgms bundle verify`` prints."""
        manifest = self.manifest.model_dump(mode="json", exclude_unset=True)
        return {"ok": True, "bundle": str(self.bundle), "checks": self.checks, "manifest": manifest}


def source_record(dataset: str, source: str | None, events: int, nodes: int) -> BundleSource:
    """The manifest's ``source``: what the bundle was built from, by content."""
    if dataset == "synthetic":
        return BundleSource(name="synthetic generator", sha256=None, events=events, nodes=nodes)
    # the content's hash, not the path's name: the packaged .gz copy and a plain text copy of the same
    # data (a SNAP download, gunzipped) give the same manifest
    return BundleSource(name=f"SNAP {dataset}", sha256=source_sha256(source_path(dataset, source)))


def remove_stale_scratch(out: Path) -> list[str]:
    """Remove the scratch folders (``.bundle-<pid>-*``) that builds into ``out`` left behind when they were
    killed (SIGKILL runs no clean-up); a live build's folder (its pid running) is kept. Returns the names
    removed."""
    removed = []
    for folder in sorted(out.glob(".bundle-*")):
        pid = folder.name.split("-")[1]
        if pid.isdigit() and _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder.name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def build_bundle(
    dataset: str,
    seed: int,
    out: str | os.PathLike[str],
    *,
    source: str | None = None,
    events: int = 100_000,
    nodes: int = 1_000,
    crosscheck: bool = True,
    progress: Progress = _quiet,
) -> Manifest:
    """Build the bundle of ``dataset`` and ``seed`` into ``out`` (created; it must not hold a bundle) and
    return its manifest. ``events``/``nodes`` apply to ``synthetic``; ``source`` to the SNAP sets."""
    from tgms.pipeline.tasks.build import build_suite, write_suite

    out = Path(out)
    if any((out / f).exists() for f in FILES):
        raise ConflictError(f"{out} already holds a bundle; choose an empty directory", path=str(out))
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_scratch(out)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f".bundle-{os.getpid()}-", dir=out) as scratch:
        store_dir = Path(scratch) / "store"
        progress(f"building the {dataset} store (canonical clock) ...")
        build_store(
            dataset, store_dir, source=source, events=events, nodes=nodes, seed=seed, progress=progress
        ).close()
        progress(f"generating the {dataset} suite (seed {seed}) ...")
        suite = build_suite(store_dir, dataset, seed, crosscheck=crosscheck, progress=progress)
        write_suite(suite, Path(scratch) / SUITE)
        planted = store_dir / "manifest.json"  # the synthetic generator's planted patterns
        manifest = Manifest(
            format=BUNDLE_FORMAT,
            version=BUNDLE_VERSION,
            dataset=dataset,
            source=source_record(dataset, source, events, nodes),
            seed=seed,
            options=BundleOptions(crosscheck=crosscheck, probes=True),
            clock="canonical",
            store_digest=suite.store_digest,
            suite_sha256=file_sha256(Path(scratch) / SUITE),
            test_sha256=suite.test_sha256,
            eventlog_sha256=file_sha256(store_dir / LOG_NAME),
            generator_version=suite.generator_version,
            bundle_version=BUNDLE_VERSION,
            planted=json.loads(planted.read_text()) if planted.exists() else None,
        )
        # the three files appear only once all are made: a killed build leaves no half bundle
        shutil.move(str(store_dir / LOG_NAME), out / EVENTLOG)
        shutil.move(str(Path(scratch) / SUITE), out / SUITE)
        (out / MANIFEST).write_text(manifest.to_json() + "\n", encoding="utf-8")
    progress(f"bundle {out} built in {time.perf_counter() - t0:.1f} s (digest {manifest.store_digest})")
    return manifest


def _read_json(path: Path, missing: NotFoundError) -> Any:
    """A bundle file's JSON: ``missing`` when the file is absent, ``E_CORRUPT`` when it does not parse."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise missing from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptError(f"{path} is not valid JSON: {exc}", path=str(path)) from exc


def read_manifest(bundle: str | os.PathLike[str]) -> Manifest:
    """The bundle's manifest: ``E_NOT_FOUND`` without one, ``E_CORRUPT`` (with its first problems) for one
    that does not parse or is not a TGMS bundle manifest."""
    path = Path(bundle) / MANIFEST
    raw = _read_json(path, NotFoundError(f"{bundle} is not a bundle: no {MANIFEST}", path=str(bundle)))
    if not isinstance(raw, dict) or raw.get("format") != BUNDLE_FORMAT:
        raise CorruptError(f"{path} is not a TGMS bundle manifest", path=str(path))
    try:
        return Manifest.model_validate(raw)
    except ValidationError as err:
        problems = validation_problems(err, 5)
        raise CorruptError(
            f"{path} is not a TGMS bundle manifest", path=str(path), problems=problems
        ) from None


def verify_bundle(bundle: str | os.PathLike[str], *, progress: Progress = _quiet) -> Verified:
    """Replay the bundle's event log into a scratch store and check the log, suite and digest against the
    manifest; what was checked, with the manifest. A mismatch raises :class:`CorruptError` naming every
    check that failed (expected and found)."""
    root = Path(bundle)
    manifest = read_manifest(root)
    for f in (EVENTLOG, SUITE):
        if not (root / f).is_file():
            raise NotFoundError(f"{root} is not a complete bundle: no {f}", path=str(root / f))
    found: dict[str, Any] = {
        "eventlog_sha256": file_sha256(root / EVENTLOG),
        "suite_sha256": file_sha256(root / SUITE),
    }
    suite = json.loads((root / SUITE).read_text(encoding="utf-8"))
    # recomputed from the test split itself, not read back from the field that records it
    found["test_sha256"] = sha256_hex(canonical_json(suite.get("splits", {}).get("test")))
    found["suite_store_digest"] = suite.get("store_digest")
    found["suite_schema"] = _schema_problem(suite)
    t0 = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="tgms-bundle-verify-") as scratch,
        replay(root / EVENTLOG, Path(scratch) / "store", "duckdb") as store,
    ):
        found["store_digest"] = store.digest()
    progress(f"replayed {root / EVENTLOG} in {time.perf_counter() - t0:.2f} s")
    expected = {
        "eventlog_sha256": manifest.eventlog_sha256,
        "suite_sha256": manifest.suite_sha256,
        "test_sha256": manifest.test_sha256,
        "suite_store_digest": manifest.store_digest,
        "store_digest": manifest.store_digest,
        "suite_schema": "valid",
    }
    checks = {k: {"expected": v, "found": found[k], "ok": v == found[k]} for k, v in expected.items()}
    bad = sorted(k for k, c in checks.items() if not c["ok"])
    if bad:
        raise CorruptError(
            f"bundle {root} does not match its manifest: {', '.join(bad)}",
            path=str(root),
            failed={k: checks[k] for k in bad},
        )
    return Verified(root, manifest, checks)


def _schema_problem(suite: Any) -> str:
    """``valid`` when ``suite`` is a :class:`Suite`, else the first problem (a verify check)."""
    try:
        parse_suite(suite, SUITE)
    except SchemaError as err:
        return err.message
    return "valid"


def read_suite(bundle_dir: str | os.PathLike[str]) -> Suite:
    """The bundle's suite, validated (``E_SCHEMA`` naming the fields when ``suite.json`` is not a suite)."""
    path = Path(bundle_dir) / SUITE
    missing = NotFoundError(f"{bundle_dir} is not a complete bundle: no {SUITE}", path=str(path))
    return parse_suite(_read_json(path, missing), str(path))


def train_split(bundle_dir: str | os.PathLike[str]) -> list[Task]:
    """The suite's ``train`` split (the worked plans a planner may retrieve), [] for a suite without one.
    Only this split leaves the bundle for the systems' prompts: dev and test never do."""
    return list(read_suite(bundle_dir).splits.train)
