"""One way to build a store from a data set: a SNAP file or the seeded synthetic generator.

``build_store(dataset, root, backend="duckdb", ...)`` creates the store at ``root`` (which must not hold
one yet), ingests the data set's event frames through the bulk path and returns the open, writable store.
The command line (``tgms ingest``), the quickstart, the benchmarks and the tests all call it, so a store
of one data set and options is built the same way everywhere.

- SNAP sets (``collegemsg``, ``bitcoin-otc``, ``email-eu``) come from ``source`` when given, else from the
  packaged copy or the download cache (:func:`engine.ingest.snap.load_dataset`).
- ``synthetic`` is :func:`engine.ingest.synthetic.generate` with ``events``, ``nodes``, ``seed`` and any
  further generator ``knobs``; its planted-pattern manifest is written to ``root/manifest.json`` (the task
  generator reads its gold there) and, unless ``corrections=False``, its second belief epoch (corrections,
  retractions, late facts) is written as later batches.

:func:`load_data` and :func:`ingest_data` are build_store's two halves, for a caller that times them apart
(``tgms bench store``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tgms.engine.canonical import dumps
from tgms.engine.ingest.events import EventFrame
from tgms.engine.store import Store

#: the data sets build_store knows: the SNAP sets and the generator
DATASETS = ("collegemsg", "bitcoin-otc", "email-eu", "synthetic")
MANIFEST_NAME = "manifest.json"
#: progress is reported every this many correction batches (and after the last)
_CORRECTIONS_EVERY = 50

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class DatasetData:
    """What a data set ingests as: event frames, then (synthetic) correction batches and a manifest."""

    frames: tuple[EventFrame, ...]
    corrections: list[list[dict[str, Any]]] = field(default_factory=list)
    manifest: dict[str, Any] | None = None


def load_data(
    dataset: str,
    *,
    source: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    events: int = 100_000,
    nodes: int = 1_000,
    seed: int = 0,
    knobs: dict[str, Any] | None = None,
    progress: Progress = _quiet,
) -> DatasetData:
    """The data of ``dataset`` before it is ingested (a benchmark times loading and ingesting apart)."""
    if dataset == "synthetic":
        from tgms.engine.ingest.synthetic import generate

        progress(f"generating synthetic data: {events} events, {nodes} nodes, seed {seed}")
        data = generate(n_nodes=nodes, n_events=events, seed=seed, **(knobs or {}))
        return DatasetData(data.frames, data.corrections, data.manifest)
    from tgms.engine.ingest.snap import load_dataset

    return DatasetData((load_dataset(dataset, source, cache_dir),))


def build_store(
    dataset: str,
    root: str | os.PathLike[str],
    backend: str = "duckdb",
    *,
    source: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    events: int = 100_000,
    nodes: int = 1_000,
    seed: int = 0,
    corrections: bool = True,
    knobs: dict[str, Any] | None = None,
    now: Callable[[], int] | None = None,
    clock: str | None = None,
    progress: Progress = _quiet,
) -> Store:
    """Build the store of ``dataset`` at ``root`` and return it open for writing (the caller closes it).

    ``source`` and ``cache_dir`` apply to the SNAP sets; ``events``, ``nodes``, ``seed``, ``corrections``
    and ``knobs`` to ``synthetic``. ``clock`` is ``canonical`` by default: the same data set and options
    give the same event log and digest on every machine (:mod:`engine.store.clock`); ``wall`` stamps the
    batches with the time of the build, ``now`` being its time source (giving ``now`` alone means
    ``wall``: tests pass a fake one). A failure part-way closes the store before the error propagates.
    """
    t0 = time.perf_counter()
    root = Path(root)
    data = load_data(
        dataset, source=source, cache_dir=cache_dir, events=events, nodes=nodes, seed=seed, knobs=knobs,
        progress=progress,
    )  # fmt: skip
    store = Store.create(root, backend, now=now, clock=clock or ("wall" if now is not None else "canonical"))
    try:
        ingest_data(store, data, corrections=corrections, progress=progress)
    except BaseException:
        store.close()
        raise
    progress(f"built {root} ({backend}) in {time.perf_counter() - t0:.2f} s")
    return store


def ingest_data(
    store: Store, data: DatasetData, *, corrections: bool = True, progress: Progress = _quiet
) -> None:
    """Ingest a data set's frames into ``store``, then its correction batches (unless ``corrections`` is
    false) and its manifest (``store.root/manifest.json``)."""
    for frame in data.frames:
        progress(f"ingesting {frame.num_rows} {frame.rel_type} events")
        store.ingest_events(frame)
    batches = data.corrections if corrections else []
    for i, batch in enumerate(batches, start=1):
        store.write(batch)
        if i % _CORRECTIONS_EVERY == 0 or i == len(batches):
            progress(f"corrections: {i}/{len(batches)} batches")
    if data.manifest is not None:
        (store.root / MANIFEST_NAME).write_text(dumps(data.manifest) + "\n")
