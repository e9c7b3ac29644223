"""The store against its log: read-only opens warn, write opens refuse before trimming, check and repair."""

from __future__ import annotations

import pytest

from tgms.engine.errors import CorruptError, NotFoundError, StoreWarning
from tgms.engine.store import Store, replay
from tgms.engine.store.check import check_store

from ._support import dir_fingerprint

NEXT = [{"op": "assert_node", "uid": "late", "vt_s": 7}]


@pytest.fixture
def root(make_store):
    store = make_store()
    store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in ("a", "b")])
    store.write([{"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "R", "vt_s": 1}])
    store.close()
    return store.root


def _crash_in_apply(root, clock):
    store = Store.open(root, now=clock(start=1))

    def crash(changes):
        raise SystemExit("simulated crash inside backend.apply")

    store.backend.apply = crash
    with pytest.raises(SystemExit):
        store.write(NEXT)
    store.close()


def test_read_only_open_warns_of_a_pending_batch_and_changes_nothing(root, fake_clock):
    _crash_in_apply(root, fake_clock)
    before = dir_fingerprint(root)
    with pytest.warns(StoreWarning, match="batch 3 is logged .* not applied.*tgms check --store"):
        Store.open(root, read_only=True).close()
    assert dir_fingerprint(root) == before


def test_check_and_repair_a_pending_batch(root, fake_clock, tmp_path, backend):
    _crash_in_apply(root, fake_clock)
    before = dir_fingerprint(root)
    found = check_store(root)
    assert found.state == "repairable" and found.findings[0]["finding"] == "pending_batch"
    assert dir_fingerprint(root) == before
    fixed = check_store(root, repair=True)
    assert fixed.state == "in_sync" and fixed.actions[0]["action"] == "applied_pending"
    with replay(root / "eventlog.jsonl", tmp_path / "replayed", backend) as r:
        assert r.digest() == fixed.digest


def test_write_open_refuses_before_trimming(root, tmp_path):
    """Database ahead of a log cut inside its last batch record: E_CORRUPT with the log as it was."""
    log = root / "eventlog.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    cut = b"".join(lines[:-2]) + lines[-2][:40]
    log.write_bytes(cut)
    with pytest.raises(CorruptError):
        Store.open(root)
    assert log.read_bytes() == cut
    assert check_store(root, repair=True).state == "damaged"
    assert log.read_bytes() == cut


def test_a_torn_tail_is_trimmed_with_a_warning(root):
    log = root / "eventlog.jsonl"
    good = log.read_bytes()
    log.write_bytes(good + b'{"kind":')
    with pytest.warns(StoreWarning, match="trimmed 8 bytes"):
        Store.open(root).close()
    assert log.read_bytes() == good


def test_a_missing_store_is_not_found(tmp_path):
    with pytest.raises(NotFoundError):
        Store.open(tmp_path / "nowhere", read_only=True)
    with pytest.raises(NotFoundError):
        check_store(tmp_path / "nowhere")
