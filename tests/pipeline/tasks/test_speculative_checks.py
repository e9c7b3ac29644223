"""Cross-checks in worker processes (pipeline/tasks/checks.py): the suite is byte-for-byte the serial one,
when every check agrees and when some disagree (then the suite is generated again in line)."""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tgms.engine.ingest.build import build_store
from tgms.engine.operators.context import OpContext
from tgms.engine.store import Store
from tgms.pipeline.tasks.checks import SpeculativeCheck, default_workers
from tgms.pipeline.tasks.crosscheck import SharedOracleStore, oracle_store_for
from tgms.pipeline.tasks.generate import generate_suite, suite_text


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    root: Path = tmp_path_factory.mktemp("spec") / "syn"
    # small: the oracle cross-checks are most of a generation, and this file makes eight (9 s each alone here)
    build_store("synthetic", root, events=3000, nodes=120, seed=3, corrections=False).close()
    with Store.open(root, read_only=True) as s:
        yield s


def _suite(store: Store, ostore: SharedOracleStore, workers: int, lines: list[str] | None = None) -> str:
    ctx = OpContext(store)
    progress = lines.append if lines is not None else None
    suite = generate_suite(
        ctx, "synthetic", 1, store_digest="x", ostore=ostore, workers=workers, progress=progress
    )
    return suite_text(suite)


@pytest.fixture(scope="module")
def serial(store: Store) -> str:
    """The suite made with every cross-check in line, against the honest oracle store (made once: three
    tests compare with it)."""
    return _suite(store, oracle_store_for(store), 1)  # type: ignore[arg-type]


def test_checks_in_workers_make_the_serial_suite(store: Store, serial: str) -> None:
    lines: list[str] = []
    parallel = _suite(store, oracle_store_for(store), 2, lines)  # type: ignore[arg-type]
    assert parallel == serial
    assert not any("disagreed" in line for line in lines)


def test_a_disagreeing_oracle_makes_the_suite_again_in_line(store: Store, serial: str) -> None:
    # an oracle store missing half the edges: many golds disagree, so the speculative pass is thrown away
    nodes, edges = store.public_rows()
    lying = SharedOracleStore(nodes, edges[::2])
    lines: list[str] = []
    lied = _suite(store, lying, 1)
    parallel = _suite(store, lying, 2, lines)
    assert parallel == lied
    assert any("disagreed" in line and "generating in order" in line for line in lines), lines
    assert lied != serial, "the lying store must have dropped draws, or this test shows nothing"


def test_a_worker_that_dies_while_starting_leaves_the_build_in_line_not_hung(
    store: Store, serial: str
) -> None:
    # a user's script without a __main__ guard: every spawned worker re-runs it and dies before reading
    # what the parent writes to it. With the oracle store in those bytes (hundreds of KB here; a pipe holds
    # 64) the parent blocked on the write for ever; the store now goes through a file, and the build ends
    # with the serial suite.
    root = Path(__file__).parents[3]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
    }
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("unguarded_suite.py")), str(store.root)],
        capture_output=True, text=True, timeout=240, env=env, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == hashlib.sha256(serial.encode()).hexdigest()
    assert "bootstrapping phase" in done.stderr  # the workers did die while starting


def test_a_speculative_check_says_yes_and_reports_each_disagreement_after(store: Store) -> None:
    suite = generate_suite(OpContext(store), "synthetic", 1, store_digest="x", ostore=None)
    task = next(t for t in suite.splits.test if t.answer_kind == "count")
    plan, kind, gold = task.oracle_plan, task.answer_kind, task.gold
    ostore = oracle_store_for(store)
    with SpeculativeCheck(ostore, 2) as check:
        assert check(plan, kind, gold) is True
        assert check({**plan, "plan_id": "wrong"}, kind, gold + 1) is True  # answered before it is run
        assert check({**plan, "plan_id": "broken", "steps": []}, kind, gold) is True
        assert check.disagreements() == ["wrong", "broken"]


def test_the_shared_oracle_memo_is_not_pickled() -> None:
    # the memo is keyed by id() of the version lists: a copy in another process must start empty
    o = SharedOracleStore([], [{"vid": 1, "eid": "e", "src": "a", "dst": "b", "rel_type": "r", "props": {},
                               "vt_s": 0, "vt_e": 5, "tt_s": 0, "tt_e": 2**62}])  # fmt: skip
    assert o.known_uids(None) == {"a", "b"} and o.believed_edges(None)
    copy = pickle.loads(pickle.dumps(o))
    assert copy._memo == {} and copy._known == {}
    assert copy.known_uids(None) == {"a", "b"} and len(copy.believed_edges(None)) == 1


def test_default_workers_use_the_usable_cores_at_most_four() -> None:
    assert 1 <= default_workers() <= 4
