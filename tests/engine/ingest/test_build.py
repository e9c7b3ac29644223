"""``engine.ingest.build.build_store``: the one way a store is built from a data set.

It must build exactly what ingesting the frames by hand builds (same digest), write the synthetic
manifest and correction epoch only for ``synthetic``, honour ``corrections=False`` and the generator's
knobs, and refuse a directory that already holds a store without touching it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FakeClock
from tgms.engine.errors import ConflictError, NotFoundError
from tgms.engine.ingest.build import DATASETS, MANIFEST_NAME, build_store
from tgms.engine.ingest.snap import load_dataset
from tgms.engine.ingest.synthetic import generate
from tgms.engine.store import Store

KNOBS = {"n_rings": 4, "n_pingpongs": 4, "days": 14}  # small enough for 60 nodes


def test_collegemsg_is_the_packaged_copy_ingested(tmp_path: Path) -> None:
    with Store.create(tmp_path / "by-hand", now=FakeClock()) as store:
        store.ingest_events(load_dataset("collegemsg"))
        expected = store.digest()
    messages: list[str] = []
    with build_store("collegemsg", tmp_path / "built", now=FakeClock(), progress=messages.append) as store:
        assert store.digest() == expected
    assert not (tmp_path / "built" / MANIFEST_NAME).exists()
    assert any(m.startswith("built ") for m in messages)


def test_synthetic_writes_manifest_and_correction_epoch(tmp_path: Path) -> None:
    data = generate(n_nodes=60, n_events=2000, seed=1, **KNOBS)
    with Store.create(tmp_path / "by-hand", now=FakeClock()) as store:
        for frame in data.frames:
            store.ingest_events(frame)
        for batch in data.corrections:
            store.write(batch)
        expected = store.digest()
    root = tmp_path / "built"
    kw = {"events": 2000, "nodes": 60, "seed": 1, "knobs": KNOBS}
    with build_store("synthetic", root, now=FakeClock(), **kw) as store:
        assert store.digest() == expected
    assert json.loads((root / MANIFEST_NAME).read_text()) == json.loads(data.manifest_json())


def test_without_corrections_only_the_frames_are_ingested(tmp_path: Path) -> None:
    data = generate(n_nodes=60, n_events=2000, seed=1, **KNOBS)
    with Store.create(tmp_path / "by-hand", now=FakeClock()) as store:
        for frame in data.frames:
            store.ingest_events(frame)
        expected = store.digest()
    kw = {"events": 2000, "nodes": 60, "seed": 1, "knobs": KNOBS, "corrections": False}
    with build_store("synthetic", tmp_path / "built", now=FakeClock(), **kw) as store:
        assert store.digest() == expected


def test_an_existing_store_is_refused_and_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "s"
    build_store("synthetic", root, events=2000, nodes=60, seed=0, knobs=KNOBS).close()
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    with pytest.raises(ConflictError):
        build_store("synthetic", root, events=2000, nodes=60, seed=1, knobs=KNOBS)
    assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == before


def test_an_unknown_data_set_is_a_structured_error(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as err:
        build_store("no-such-set", tmp_path / "s")
    assert err.value.code == "E_NOT_FOUND" and not (tmp_path / "s").exists()
    assert "synthetic" in DATASETS
