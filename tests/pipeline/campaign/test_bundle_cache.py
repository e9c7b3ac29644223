"""The bundle cache (pipeline/campaign/bundle_cache.py): a kept bundle comes back byte for byte and
verified, a damaged entry is dropped (never used), a cache that cannot be written costs nothing but the
reuse, and the key changes with everything that decides the bundle's bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pipeline.campaign.conftest import Bundle
from tgms.pipeline.campaign import bundle_cache
from tgms.pipeline.campaign.bundle import FILES, SUITE
from tgms.pipeline.campaign.bundle_cache import bundle_key, fetch, keep


def test_a_kept_bundle_comes_back_identical_and_verified(small_bundle: Bundle, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    assert fetch(root, "k1", tmp_path / "none") is None  # nothing kept yet
    assert keep(root, "k1", small_bundle.dir) and keep(root, "k1", small_bundle.dir)  # twice: one entry
    assert sorted(p.name for p in root.iterdir()) == ["k1"]  # no scratch folder left
    (root / ".bundle-999999999-x").mkdir()  # what a SIGKILLed keep left: swept by the next one
    assert keep(root, "k0", small_bundle.dir)
    assert sorted(p.name for p in root.iterdir()) == ["k0", "k1"]
    target = tmp_path / "run" / "bundles" / "collegemsg-s0"
    manifest = fetch(root, "k1", target)
    assert manifest == small_bundle.manifest
    for name in FILES:
        assert (target / name).read_bytes() == (small_bundle.dir / name).read_bytes()


def test_a_damaged_entry_is_dropped_not_used(small_bundle: Bundle, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    assert keep(root, "k2", small_bundle.dir)
    suite = json.loads((root / "k2" / SUITE).read_text())
    suite["splits"]["test"][0]["gold"] = "tampered"
    (root / "k2" / SUITE).write_text(json.dumps(suite))
    target = tmp_path / "run"
    assert fetch(root, "k2", target) is None
    assert not (root / "k2").exists()  # the next run builds and keeps a good one
    assert not any((target / name).exists() for name in FILES)


def test_a_cache_that_cannot_be_written_only_costs_the_reuse(small_bundle: Bundle, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert keep(blocked, "k3", small_bundle.dir) is False
    assert keep(blocked / "deeper", "k3", small_bundle.dir) is False


def test_the_key_follows_everything_that_decides_the_bytes(
    small_bundle: Bundle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    head = tmp_path / "head.txt"
    head.write_bytes((small_bundle.dir.parent / "CollegeMsg.head.txt").read_bytes())
    base = bundle_key("collegemsg", 0, str(head), 0, 0)
    assert bundle_key("collegemsg", 0, str(head), 0, 0) == base
    assert bundle_key("collegemsg", 1, str(head), 0, 0) != base  # the seed
    other = tmp_path / "other.txt"
    other.write_bytes(head.read_bytes()[: len(head.read_bytes()) // 2])
    assert bundle_key("collegemsg", 0, str(other), 0, 0) != base  # the data, by content
    moved = tmp_path / "elsewhere" / "renamed.txt"
    moved.parent.mkdir()
    moved.write_bytes(head.read_bytes())
    assert bundle_key("collegemsg", 0, str(moved), 0, 0) == base  # not the path
    synthetic = bundle_key("synthetic", 0, None, 5_000, 100)
    assert synthetic != bundle_key("synthetic", 0, None, 5_001, 100)  # the generator's sizes
    monkeypatch.setattr(bundle_cache, "code_fingerprint", lambda: "0" * 64)
    assert bundle_key("collegemsg", 0, str(head), 0, 0) != base  # the code that builds it
