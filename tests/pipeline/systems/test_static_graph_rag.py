"""static_graph_rag: exactly the 2-hop edges of the latest state around the task's entities, no time."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.systems._scripted import make_env, system_text
from tests.pipeline.systems.conftest import SmallSuite
from tgms.engine.api import ScanFilter, Store
from tgms.models.testing.scripted_server import ScriptedServer, last_user_message
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import build_system, run_task
from tgms.pipeline.systems.record import TaskRecord

_EDGES = re.compile(r'<data name="edges">\n(.*?)\n</data>', re.DOTALL)
_TIME = re.compile(r"\d{4}-\d\d-\d\dT|\d{9,}|µs")  # an ISO date, an epoch number, a unit of time


def brute_two_hop(store_dir: Path, seeds: list[str]) -> set[str]:
    """Every believed edge on a walk of ≤ 2 hops from a seed (direction ignored), as the lines shown."""
    with Store.open(store_dir, read_only=True) as st:
        _, edges = st.public_rows(ScanFilter())  # current belief, straight from the store
    near = set(seeds)
    for e in edges:
        if e["src"] in seeds or e["dst"] in seeds:
            near |= {e["src"], e["dst"]}
    counts = Counter(
        (e["src"], e["dst"], e["rel_type"]) for e in edges if e["src"] in near or e["dst"] in near
    )
    return {f"{s} → {d} {r} ×{n}" for (s, d, r), n in counts.items()}


def _run(cm: SmallSuite, work: Path, task: Task, **cfg: Any) -> tuple[TaskRecord, dict[str, Any]]:
    reply = json.dumps({"text": "x", "answer": {"kind": task.answer_kind, "value": task.gold}})
    with ScriptedServer(lambda body: reply) as server:
        env = make_env(cm.store_dir, server.url, work, context_window=1_000_000)  # the content is tested here
        rec = run_task(build_system("static_graph_rag", env, cfg), task)
        env.close()
        return rec, server.log.chat_bodies[0]


def _shown(body: dict[str, Any]) -> set[str]:
    m = _EDGES.search(last_user_message(body))
    assert m is not None
    return set(html.unescape(m.group(1)).splitlines())


@pytest.mark.parametrize("n_seeds", [1, 2])
def test_context_is_exactly_the_two_hop_edges_without_time(
    cm_small: SmallSuite, tmp_path: Path, n_seeds: int
) -> None:
    task = next(t for t in cm_small.dev if len(t.input_uids) == n_seeds)
    rec, body = _run(cm_small, tmp_path, task, max_edges=100_000)
    expected = brute_two_hop(cm_small.store_dir, task.input_uids)
    assert len(expected) > n_seeds  # a real neighbourhood, not a trivial one
    assert _shown(body) == expected
    assert rec.context is not None and rec.context["edges_total"] == rec.context["edges_shown"] == len(
        expected
    )
    assert rec.context["capped"] is False and rec.status == "answered"
    for message in body["messages"]:  # nothing in the prompt tells time, the question aside
        text = message["content"]
        if message["role"] == "user":
            text = text.split('<data name="question">')[0]
        assert not _TIME.search(text), _TIME.search(text)


def test_a_hub_neighbourhood_is_capped_and_says_so(cm_small: SmallSuite, tmp_path: Path) -> None:
    task = next(t for t in cm_small.dev if len(t.input_uids) == 1)
    seed = task.input_uids[0]
    rec, body = _run(cm_small, tmp_path, task, max_edges=5)
    shown = _shown(body)
    total = len(brute_two_hop(cm_small.store_dir, [seed]))
    assert len(shown) == 5 and shown <= brute_two_hop(cm_small.store_dir, [seed])
    assert all(seed in line.split(" ")[0::2] for line in shown)  # the pairs touching the seed come first
    assert rec.context is not None and rec.context["capped"] is True
    assert (rec.context["edges_shown"], rec.context["edges_total"]) == (5, total)
    assert f"Showing 5 of {total} edges" in last_user_message(body)


def test_without_input_uids_the_question_names_the_seeds(cm_small: SmallSuite, tmp_path: Path) -> None:
    base = next(t for t in cm_small.dev if len(t.input_uids) == 1)
    seed = base.input_uids[0]
    task = base.model_copy(update={"input_uids": (), "question": f"How many neighbours does {seed} have?"})
    rec, body = _run(cm_small, tmp_path, task, max_edges=100_000)
    assert rec.context is not None and rec.context["seeds"] == [seed]
    assert _shown(body) == brute_two_hop(cm_small.store_dir, [seed])
    assert 'Nodes of interest:\n<data name="nodes">\n' + seed + "\n</data>" in last_user_message(body)
    assert system_text(body).startswith("You answer")
