"""The campaign's progress table (pipeline/campaign/progress.py): counts, the ETA from recent throughput,
the heartbeat, the cell that finished last. A fake clock stands in for time; nothing sleeps."""

from __future__ import annotations

import io

from tests.pipeline.campaign._records import record
from tgms.pipeline.campaign.progress import RECENT, Progress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def progress(clock: Clock, **kw: float) -> tuple[Progress, io.StringIO]:
    out = io.StringIO()
    p = Progress(out=out, clock=clock, **kw)
    p.add_cell("a", 10, [record(status="answered", correct=True)])  # one done in an earlier run
    p.add_cell("b", 30, [])
    return p, out


def test_counts_and_accuracy_per_cell() -> None:
    clock = Clock()
    p, _ = progress(clock)
    p.record("a", record(status="answered", correct=False))
    p.record("b", record(status="infra_error"))
    lines = p.render().splitlines()
    assert lines[1].split()[1:] == ["2/10", "0.500", "0"]
    assert lines[2].split()[1:] == ["0/30", "-", "1"]
    assert lines[-1].startswith("1 tasks in 0 s") and "38 left" in lines[-1]
    assert lines[-1].endswith("last finished: b")


def test_the_eta_follows_recent_throughput_not_the_run_average() -> None:
    clock = Clock()
    p, _ = progress(clock)
    clock.now += 600  # a slow start: a one-off build
    for _ in range(RECENT):
        clock.now += 2
        p.record("b", record(status="answered", correct=True))
    left = 40 - 1 - RECENT
    # recent: 9 tasks in the 18 s since the first of the last ten = 0.5/s; the average is ~0.016/s
    assert f"ETA {left / 0.5:,.0f} s" in p.render()
    clock.now += 180  # a stall lowers the recent rate: 9 tasks in 198 s
    assert f"ETA {left / (9 / 198):,.0f} s" in p.render()


def test_a_heartbeat_redraws_an_unchanged_table_every_30_s() -> None:
    clock = Clock()
    p, out = progress(clock)
    p.draw()
    drawn = out.getvalue().count("tasks in")
    clock.now += 29
    p.draw()
    assert out.getvalue().count("tasks in") == drawn  # nothing changed, no heartbeat due
    clock.now += 1
    p.draw()
    assert out.getvalue().count("tasks in") == drawn + 1
    assert "30 s" in out.getvalue().splitlines()[-1]


def test_a_finished_run_says_done() -> None:
    clock = Clock()
    out = io.StringIO()
    p = Progress(out=out, clock=clock)
    p.add_cell("a", 1, [])
    p.record("a", record(status="answered", correct=True))
    last = p.render().splitlines()[-1]
    assert last.endswith("0 left, ETA done") and "last finished" not in last
