"""The canonical clock: built stores get transaction times from their log alone, never the wall clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from tgms.engine.errors import InvalidArgError
from tgms.engine.store import Store
from tgms.engine.store.clock import CANONICAL_BASE, CANONICAL_STEP, CanonicalClock, make_clock


def _ops(uid: str) -> list[dict]:
    return [{"op": "assert_node", "uid": uid, "vt_s": 0}]


def test_sequence_starts_at_the_base_and_steps_per_batch() -> None:
    clock = CanonicalClock()
    assert [clock.next() for _ in range(3)] == [CANONICAL_BASE + i * CANONICAL_STEP for i in range(3)]
    later = CanonicalClock(CANONICAL_BASE + 10 * CANONICAL_STEP)  # reopened: continues from the log
    assert later.next() == CANONICAL_BASE + 11 * CANONICAL_STEP
    after_wall = CanonicalClock(CANONICAL_BASE + 10**15)  # a wall-clock batch came first: still increasing
    assert after_wall.next() == CANONICAL_BASE + 10**15 + CANONICAL_STEP


def test_two_stores_written_at_different_times_have_the_same_log(tmp_path: Path, monkeypatch) -> None:
    logs = []
    for i, fake_now in enumerate((1_800_000_000_000_000, 1_900_000_000_000_000)):
        monkeypatch.setattr("tgms.engine.store.clock.wall_clock_us", lambda v=fake_now: v)
        root = tmp_path / f"s{i}"
        with Store.create(root, clock="canonical") as store:
            store.write(_ops("a"))
        with Store.open(root, clock="canonical") as store:  # a later session continues the sequence
            store.write(_ops("b"))
        logs.append((root / "eventlog.jsonl").read_bytes())
    assert logs[0] == logs[1]
    assert b'"tt":%d' % (CANONICAL_BASE + CANONICAL_STEP) in logs[0]


def test_a_wall_write_after_canonical_batches_still_increases(tmp_path: Path) -> None:
    with Store.create(tmp_path / "s", clock="canonical") as store:
        first = store.write(_ops("a"))
    with Store.open(tmp_path / "s") as store:  # default: the wall clock
        second = store.write(_ops("b"))
    assert second.tt > first.tt >= CANONICAL_BASE


def test_an_unknown_clock_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgError, match="unknown clock"):
        Store.create(tmp_path / "s", clock="sundial")
    assert not (tmp_path / "s").exists()
    with pytest.raises(InvalidArgError):
        make_clock("sundial", 0)
