"""The actor's body on its own (no Ray): tasks come back as records (with the plan's trace for tgms), a system
that cannot be built makes unscored records without rebuilding for every task, and the cell's seed reaches
the model request."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pipeline.campaign.conftest import SUITE_NAME, Bundle
from tgms.models.config import EndpointConfig, GenerationConfig
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.models.testing.smoke_rule import smoke_reply
from tgms.pipeline.campaign.actors import TaskActor, node_build_lock
from tgms.pipeline.campaign.bundle import EVENTLOG
from tgms.pipeline.campaign.cells import Cell
from tgms.pipeline.campaign.endpoints import endpoint_to_dict
from tgms.pipeline.systems.base import RunSettings

SETTINGS = RunSettings(
    generation=GenerationConfig(
        model="scripted", seed=7, temperature=0.0, max_tokens=256, max_model_len=8192
    ),
    repair_budget=1,
    ablation="none",
)


@pytest.fixture(scope="module")
def served() -> Iterator[ScriptedServer]:
    with ScriptedServer(smoke_reply) as server:
        yield server


@pytest.fixture(scope="module")
def actor(
    small_bundle: Bundle, served: ScriptedServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TaskActor]:
    endpoint = endpoint_to_dict(EndpointConfig(base_urls=(served.url,), model="scripted", timeout_s=10))
    work = tmp_path_factory.mktemp("actor_work")
    body = TaskActor(
        SUITE_NAME, (small_bundle.dir / EVENTLOG).read_bytes(), small_bundle.manifest, endpoint, str(work)
    )
    yield body
    body.close()


def cell(system: str) -> Cell:
    return Cell(SUITE_NAME, system, "scripted", 7)


def test_tgms_task_returns_its_record_and_trace(
    actor: TaskActor, small_bundle: Bundle, served: ScriptedServer
) -> None:
    task = next(t for t in small_bundle.tasks if t.input_uids and t.answer_kind == "count")
    before = served.log.chat_count
    out = actor.run(task, cell("tgms"), {}, SETTINGS)
    rec = out.record
    assert rec.task_id == task.id and rec.system == "tgms" and rec.seed == 7
    assert rec.status == "answered" and rec.trace_digest
    assert out.trace is not None and out.trace["trace_digest"] == rec.trace_digest
    bodies = served.log.chat_bodies[before:]
    assert bodies and all(b["seed"] == 7 and b["max_tokens"] == 256 for b in bodies), "the cell's sampling"


def test_unbuildable_system_gives_unscored_records_built_once(
    actor: TaskActor, small_bundle: Bundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = actor._build
    monkeypatch.setattr(actor, "_build", lambda *a: calls.append(a) or real(*a))
    bad = {"max_edges": -1}
    out = [actor.run(t, cell("static_graph_rag"), bad, SETTINGS) for t in small_bundle.tasks[:3]]
    assert len(calls) == 1, "the failed build is remembered for the cell"
    for o in out:
        rec = o.record
        assert rec.status == "infra_error" and rec.correct is None and o.trace is None
        assert rec.errors[0]["error"] == "E_INVALID_ARG"
    ok = actor.run(small_bundle.tasks[0], cell("static_graph_rag"), {}, SETTINGS)
    assert ok.record.status == "answered" and ok.trace is None, "another config of the system builds"


def test_node_build_lock_lets_one_builder_at_a_time(tmp_path: Path) -> None:
    spans: list[tuple[str, float, float]] = []

    def build(name: str, system: str) -> None:
        with node_build_lock(tmp_path, system, {"k": 8}, "digest"):
            t0 = time.monotonic()
            time.sleep(0.3)
            spans.append((name, t0, time.monotonic()))

    threads = [threading.Thread(target=build, args=(n, "vector_rag")) for n in ("a", "b")]
    threads.append(threading.Thread(target=build, args=("other", "text_to_cypher")))
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (_, a0, a1), (_, b0, b1) = sorted(s for s in spans if s[0] in "ab")
    assert a1 <= b0 or b1 <= a0, "the same build never runs twice at once on a node"
    assert time.monotonic() - t0 < 0.9, "another system's build does not wait"
