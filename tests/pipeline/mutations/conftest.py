"""A small pool on the claims tests' store: hand-written tasks whose oracle plans cover every class.

Tasks (each with its oracle plan's answer):

- ``reach``: n1's reachability count (``s1.rows_total`` = 6; a list with a ``limit``: truncated page);
- ``arrival``: the first reached node's arrival time (a µs value: unit confusion);
- ``first``: the first reached node's uid as a value (``rows[0]`` vs ``rows[1]``: wrong row);
- ``history``: n2's edge count (its edges have intervals: ordering claims are added);
- ``present``: which of n1, n2, n3 exist at 1 s (a multi-uid entity claim);
- ``motif``: cyclic triangles (a count plus a temporal-pattern claim);
- ``common``: nodes reached from n1 and from n2 (a three-step plan: wrong-step citation);
- ``versions``: n2's node versions believed before its correction (a probe ``before`` half).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.claims._support import (
    MOTIF,
    TT_BEFORE,
    S,
    build_store,
    history,
    raw_plan,
    reach,
    ref,
    step,
)
from tests.suite_fixtures import task
from tgms.engine.operators.context import OpContext
from tgms.engine.store import Store
from tgms.pipeline.mutations.pool import Pool, PoolItem, build_pool
from tgms.pipeline.scoring.suite import Task


def _task(tid: str, plan: dict[str, Any], **kw: Any) -> Task:
    return task(id=tid, family=kw.pop("family", "T1"), oracle_plan=plan, **kw)


def tasks() -> list[Task]:
    snap = {"seeds": ["n1", "n2", "n3"], "hops": 0, "t_valid": S}
    return [
        _task("reach", raw_plan(step("s1", "temporal_reachability", reach()), answer="s1.rows_total",
                                kind="count")),
        _task("arrival", raw_plan(step("s1", "temporal_reachability", reach()),
                                  answer="s1.rows[0].earliest_arrival")),
        _task("first", raw_plan(step("s1", "temporal_reachability", reach()), answer="s1.rows[0].uid")),
        _task("history", raw_plan(step("s1", "entity_history", history()), answer="s1.edges_total",
                                  kind="count")),
        _task("present", raw_plan(step("s1", "snapshot_subgraph", snap), answer="s1.nodes[*].uid",
                                  kind="entity_set")),
        _task("motif", raw_plan(step("s1", "count_temporal_motifs", dict(MOTIF)), answer="s1.count",
                                kind="count")),
        _task("common", raw_plan(
            step("s1", "temporal_reachability", reach()),
            step("s2", "temporal_reachability", reach(src="n2")),
            step("s3", "compute",
                 {"fn": "intersection", "input": [ref("s1.rows[*].uid"), ref("s2.rows[*].uid")]}, "s1", "s2"),
            answer="s3.rows_total", kind="count"), family="T4"),
        _task("versions", raw_plan(step("s1", "entity_history", {"uid": "n2", "as_of_tt": TT_BEFORE}),
                                   answer="s1.rows_total", kind="count"),
              family="probe", probe_half="before", probe_pair="p0"),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mutations") / "store"
    build_store(root).close()
    return root


@pytest.fixture(scope="module")
def ctx(store_dir: Path) -> Iterator[OpContext]:
    with Store.open(store_dir, read_only=True) as store:
        yield OpContext(store)


@pytest.fixture(scope="module")
def pool(ctx: OpContext) -> Pool:
    return build_pool(tasks(), ctx, 0)


def item(pool: Pool, task: str, typ: str) -> PoolItem:
    """The pool's first ``typ`` claim of ``task``."""
    return next(it for it in pool.items if it.task_id == task and it.claim["type"] == typ)
