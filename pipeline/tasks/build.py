"""Building a suite file from a store directory: probe corrections (written once), generation, the file.

Shared by ``tgms tasks generate``, the main job (``tgms quickstart``) and the tests, so all three make
the same suite from the same store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError, OpContext, Store
from tgms.pipeline.scoring.suite import Suite
from tgms.pipeline.tasks.checks import default_workers
from tgms.pipeline.tasks.generate import generate_suite


def read_manifest(store_dir: str | Path) -> dict[str, Any] | None:
    path = Path(store_dir) / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else None


def _require_events(store_dir: str | Path) -> None:
    with Store.open(store_dir, read_only=True) as store:
        if OpContext(store).edges(None).n == 0:
            raise InvalidArgError(
                f"the store at {store_dir} believes no edge events: a task suite draws its questions "
                "from events (ingest a data set, or write edges first)",
                store=str(store_dir),
            )


def build_suite(
    store_dir: str | Path,
    dataset: str,
    seed: int,
    *,
    probes: bool = True,
    crosscheck: bool = True,
    progress: Callable[[str], None] | None = None,
    workers: int | None = None,
) -> Suite:
    """The suite of ``store_dir``. With ``probes``, the probes' corrections are written into the store
    first unless its event log already holds them (then the store is only read). A store without edge
    events is refused before anything is written: every template draws its question from events.
    ``workers``: cross-check processes (None: :func:`~pipeline.tasks.checks.default_workers`)."""
    _require_events(store_dir)
    if probes:
        from tgms.pipeline.tasks.probes import ensure_corrections

        # writable: corrections go through the write API, stamped by the canonical clock (a function of
        # the log), so the same store and seed give the same corrections, digest and suite anywhere
        with Store.open(store_dir, clock="canonical") as store:
            n = ensure_corrections(store, dataset, seed)
        if progress and n:
            progress(f"wrote {n} probe correction batches into {store_dir}")
    with Store.open(store_dir, read_only=True) as store:
        ctx = OpContext(store)
        drafts = []
        if probes:
            from tgms.pipeline.tasks.probes import probe_drafts

            drafts = probe_drafts(ctx, dataset, seed)
        ostore = None
        if crosscheck:
            from tgms.pipeline.tasks.crosscheck import oracle_store_for

            ostore = oracle_store_for(store)
        return generate_suite(
            ctx,
            dataset,
            seed,
            store_digest=store.digest(),
            ostore=ostore,
            manifest=read_manifest(store_dir),
            probes=drafts,
            progress=progress,
            workers=default_workers() if workers is None else workers,
        )


def write_suite(suite: Suite, out: str | Path) -> None:
    Path(out).write_text(suite.to_json(), encoding="utf-8")
