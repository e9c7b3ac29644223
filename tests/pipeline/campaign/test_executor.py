"""The executor: tasks spread over the actors, a bounded number in flight, a dead actor's tasks resubmitted,
and the records files (durable appends, torn tails, what counts as done)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

from tests.pipeline.campaign._records import record as make
from tests.pipeline.campaign.conftest import Bundle, cluster_conf, jobs_for, scripted_model
from tgms.models.config import EndpointConfig
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.models.testing.smoke_rule import smoke_reply
from tgms.pipeline.campaign.actors import SCRATCH_PREFIX, sweep_stale
from tgms.pipeline.campaign.executor import CellJob, Prepare, run_jobs, start_actors, write_result
from tgms.pipeline.campaign.records import TaskResult, append_record, read_records
from tgms.pipeline.systems.record import TaskRecord


def test_tasks_spread_over_actors_with_bounded_flight_and_a_killed_actor_loses_nothing(
    ray_info: dict, small_bundle: Bundle, tmp_path: Path
) -> None:
    import ray

    n_tasks = 20
    cluster = cluster_conf(actors=2, actor_concurrency=3)
    with ScriptedServer(smoke_reply) as server:
        server.delay_s = 0.3
        endpoint = EndpointConfig(base_urls=(server.url,), model="scripted", concurrency=64, timeout_s=10)
        jobs = jobs_for(small_bundle, ["static_graph_rag"], n_tasks, tmp_path, scripted_model())
        seen = {"n": 0}
        with start_actors(small_bundle.bundles(), endpoint, cluster, tmp_path / "work") as pool:
            victim = pool.actors["collegemsg"][0]

            def on_record(job: CellJob, result: TaskResult) -> None:
                write_result(job, result)
                seen["n"] += 1
                if seen["n"] == 4:  # the first actor dies with tasks in flight; Ray must not restart it
                    ray.kill(victim.handle, no_restart=True)

            stats = run_jobs(pool, jobs, on_record)
            assert not victim.alive
        high_water = server.log.high_water
    records = [r for j in jobs for r in read_records(j.records_path)]
    assert sorted(r.task_id for r in records) == sorted(t.id for t in small_bundle.tasks[:n_tasks])
    assert all(r.status != "infra_error" for r in records)
    assert stats["resubmitted"] >= 1, "the killed actor's tasks in flight were resubmitted"
    assert stats["finished"] == n_tasks and stats["submitted"] == n_tasks + stats["resubmitted"]
    # one request per static_graph_rag task: never more in flight than actors x actor_concurrency
    assert 2 <= high_water <= cluster.actors * cluster.actor_concurrency


def test_a_memory_kill_holds_new_tasks_back_but_keeps_collecting_finished_ones(
    ray_info: dict, small_bundle: Bundle, tmp_path: Path, monkeypatch: Any
) -> None:
    """After a memory kill nothing new is submitted for the pause, but tasks already in flight are still
    collected and recorded meanwhile (the driver does not sleep on its loop); the killed task reruns once.
    The kill is ``ray.kill`` taken for a memory kill: Ray's memory monitor cannot be made to kill one
    chosen worker reliably on a machine whose other processes' memory moves under the test."""
    import threading
    import time

    import ray

    import tgms.pipeline.campaign.executor as ex

    monkeypatch.setattr(ex, "memory_kill", lambda _ray, _err: True)
    # replies take 3 s and the pause is 4 s. The kill comes while both actors have their three first
    # requests at the server (none answered yet); Ray takes up to about a second to report the killed
    # actor's tasks, so the other actor's three replies, due ~3 s after the kill, come inside the pause.
    # (Killing on the third record instead raced: when those records were the other actor's first wave
    # and the victim's came next, the other actor had nothing in flight during the pause.)
    monkeypatch.setattr(ex, "MEMORY_BACKOFF_S", 4.0)
    backoffs: list[float] = []  # when the driver learnt of each kill
    real_backoff = ex._memory_backoff

    def timed_backoff(*args: Any) -> Any:
        backoffs.append(time.monotonic())
        return real_backoff(*args)

    monkeypatch.setattr(ex, "_memory_backoff", timed_backoff)
    n_tasks = 10
    cluster = cluster_conf(actors=2, actor_concurrency=3)
    with ScriptedServer(smoke_reply) as server:
        server.delay_s = 3.0
        endpoint = EndpointConfig(base_urls=(server.url,), model="scripted", concurrency=64, timeout_s=10)
        jobs = jobs_for(small_bundle, ["static_graph_rag"], n_tasks, tmp_path, scripted_model())
        written: list[float] = []
        with start_actors(small_bundle.bundles(), endpoint, cluster, tmp_path / "work") as pool:
            victim = pool.actors["collegemsg"][0]
            both_busy = 2 * 3  # two actors, three requests each in flight

            def kill_when_both_are_busy() -> None:
                deadline = time.monotonic() + 120
                while server.log.in_flight < both_busy and time.monotonic() < deadline:
                    time.sleep(0.01)
                ray.kill(victim.handle, no_restart=True)

            def on_record(job: CellJob, result: TaskResult) -> None:
                write_result(job, result)
                written.append(time.monotonic())

            killer = threading.Thread(target=kill_when_both_are_busy, daemon=True)
            killer.start()
            stats = run_jobs(pool, jobs, on_record)
            killer.join()
    records = [r for j in jobs for r in read_records(j.records_path)]
    assert sorted(r.task_id for r in records) == sorted(t.id for t in small_bundle.tasks[:n_tasks])
    assert all(r.status != "infra_error" for r in records)
    # one actor killed with tasks in flight is one kill: one pause, the cap halved once
    assert stats["memory_kills"] == len(backoffs) == 1 and stats["resubmitted"] >= 1
    # the other actor's tasks in flight at the kill were recorded during the pause, not after it
    during = [t for t in written if 0 < t - backoffs[0] < ex.MEMORY_BACKOFF_S]
    assert during, (backoffs, written)


def record(task_id: str, status: str = "answered") -> TaskRecord:
    return make(task_id=task_id, status=status, correct=False if status != "infra_error" else None)


def test_an_append_cuts_a_torn_tail_first(tmp_path: Path) -> None:
    # which of these records count on a rerun is test_resume_decision.py's subject
    path = tmp_path / "records" / "cell.jsonl"
    append_record(path, record("a"))
    append_record(path, record("b", "infra_error"))
    with path.open("a", encoding="utf-8") as fh:  # a kill mid-write leaves half a line
        fh.write(record("d").to_json()[:20])
    assert [r.task_id for r in read_records(path)] == ["a", "b"], "a torn line is not a record"
    append_record(path, record("b"))  # the rerun of b: the torn tail is cut first
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and all(json.loads(line) for line in lines)


def test_sweep_removes_only_the_scratch_of_dead_actors(tmp_path: Path) -> None:
    dead = tmp_path / f"{SCRATCH_PREFIX}999999999-collegemsg-abc"
    alive = tmp_path / f"{SCRATCH_PREFIX}{os.getpid()}-collegemsg-def"
    other = tmp_path / "unrelated-999999999"
    for d in (dead, alive, other):
        (d / "store").mkdir(parents=True)
    assert sweep_stale(tmp_path) == [dead]
    assert not dead.exists() and alive.exists() and other.exists()


def fresh_embedding_knobs(tmp_path: Path) -> dict[str, Any]:
    """vector_rag's knobs for a build that takes seconds: the real embedder into a fresh directory, 200
    events a chunk (60 chunks of the small store). The embedder's load alone (~9 s of imports) is several
    times the graph's build. The tests that use it run one actor: each actor builds each cell, and two
    actors loading the embedder at once under CI's three workers on two cores took 75-310 s a test (35 s
    alone)."""
    return {"cache_dir": str(tmp_path / "embeddings"), "chunk_events": 200}


def run_in_order(
    bundle: Bundle,
    systems: list[str],
    n_tasks: int,
    out: Path,
    max_in_flight: int,
    knobs: dict[str, dict[str, Any]] | None = None,
    prepare: Prepare = "overlap",
    written: list[float] | None = None,
    actors: int = 2,
) -> tuple[dict[str, int], list[str], int, list[CellJob]]:
    """Run ``systems`` on ``actors`` actors with ``prepare`` against the scripted server: the stats, the
    systems in the order their records were written, the most requests the server had in flight, the
    jobs. ``written`` collects the wall-clock time each record was written."""
    cluster = cluster_conf(actors=actors, actor_concurrency=4)
    with ScriptedServer(smoke_reply) as server:
        endpoint = EndpointConfig(base_urls=(server.url,), model="scripted", concurrency=1, timeout_s=30)
        jobs = [
            dataclasses.replace(j, system_config=(knobs or {}).get(j.cell.system, j.system_config))
            for j in jobs_for(bundle, systems, n_tasks, out, scripted_model())
        ]
        order: list[str] = []
        with start_actors(bundle.bundles(), endpoint, cluster, out / "work") as pool:

            def on_record(job: CellJob, result: TaskResult) -> None:
                write_result(job, result)
                order.append(job.cell.system)
                if written is not None:
                    written.append(time.time())

            stats = run_jobs(pool, jobs, on_record, max_in_flight=max_in_flight, prepare=prepare)
        return stats, order, server.log.high_water, jobs


def test_a_small_flight_cap_runs_cells_one_after_another_after_preparing_them(
    ray_info: dict, small_bundle: Bundle, tmp_path: Path
) -> None:
    """max_in_flight=1 (a one-request-at-a-time server): one request at a time, tasks cell by cell (so
    consecutive requests share a prompt prefix), every system built once by ``prepare`` beforehand."""
    n_tasks = 6
    stats, order, high_water, jobs = run_in_order(
        small_bundle, ["static_graph_rag", "tgms"], n_tasks, tmp_path, 1
    )
    assert stats["finished"] == 2 * n_tasks and stats["submitted"] == 2 * n_tasks
    assert high_water == 1, "one task in flight at a time"
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    # cell-major, except that a cell still being prepared may let the other go first once
    assert switches <= 2, order
    assert all(r.status != "infra_error" for j in jobs for r in read_records(j.records_path))


def test_no_slot_waits_on_a_build_while_another_cell_is_ready(
    ray_info: dict, small_bundle: Bundle, tmp_path: Path
) -> None:
    """vector_rag's build (the embedder's load and the chunk embeddings) takes seconds, text_to_cypher's
    (a Kuzu graph of the small store) far less: its tasks go first. Before, the first tasks went out while
    nothing was ready yet and two vector_rag tasks held both slots for the whole embedding."""
    # vectors cached by an earlier run would make the build fast: embed into a fresh directory
    knobs = {"vector_rag": fresh_embedding_knobs(tmp_path)}
    stats, order, _, _ = run_in_order(
        small_bundle, ["vector_rag", "text_to_cypher"], 3, tmp_path, 2, knobs, actors=1
    )
    assert stats["finished"] == 6 and sorted(order) == ["text_to_cypher"] * 3 + ["vector_rag"] * 3
    assert order[0] == "text_to_cypher", order


def test_prepare_first_sends_no_task_before_every_build_has_ended(
    ray_info: dict, small_bundle: Bundle, tmp_path: Path
) -> None:
    """``first`` (a model server on the actors' cores): text_to_cypher is ready long before vector_rag's
    embeddings are written, yet no task of either runs until they are, unlike ``overlap`` above."""
    knobs = {"vector_rag": fresh_embedding_knobs(tmp_path)}
    written: list[float] = []
    stats, order, _, _ = run_in_order(
        small_bundle, ["vector_rag", "text_to_cypher"], 3, tmp_path, 2, knobs, "first", written, actors=1
    )
    assert stats["finished"] == 6 and sorted(order) == ["text_to_cypher"] * 3 + ["vector_rag"] * 3
    (built,) = (tmp_path / "embeddings").glob("*.json")  # the vectors' metadata: written last
    assert min(written) >= built.stat().st_mtime, (written, built.stat().st_mtime)


def test_a_memory_kill_is_recognised_and_backs_off_with_fewer_tasks_in_flight() -> None:
    import ray

    import tgms.pipeline.campaign.executor as ex

    oom = ray.exceptions.OutOfMemoryError("Task was killed due to the node running low on memory.")
    assert ex.memory_kill(ray, oom)
    died = ray.exceptions.ActorDiedError()
    assert not ex.memory_kill(ray, died)  # an actor that died otherwise is not a memory kill
    stats: dict[str, int] = {}
    out = [ex._memory_backoff(oom, cap, in_flight, stats) for cap, in_flight in ((8, 6), (3, 3), (1, 1))]
    assert [cap for cap, _ in out] == [3, 1, 1] and stats["memory_kills"] == 3
    # the pauses double (the driver holds submissions for them; it never sleeps on its loop)
    assert [pause for _, pause in out] == [
        ex.MEMORY_BACKOFF_S,
        2 * ex.MEMORY_BACKOFF_S,
        4 * ex.MEMORY_BACKOFF_S,
    ]
