"""Evolution memory on a real store (the first 3,000 CollegeMsg events: ISO weeks 2004-W16..W18) against
the scripted server (a test double): facts are the operators' values, a note that agrees with them is stored
with its transaction time, one that does not is refused, a correction quarantines exactly the notes whose
week it overlaps, quarantined notes never reach the planner prompt, and retrieval follows the question's
own window (never the oracle plan's)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import collegemsg_head
from tests.models.conftest import HEAD_EVENTS
from tgms.engine.api import OpContext, Store, build_store, call, replay
from tgms.models.config import GenerationConfig
from tgms.models.errors import ModelOutputError
from tgms.models.memory import SUMMARY_PREFIX, Memory, current_tt, notes_block, summary_messages
from tgms.models.memory_facts import week_facts, week_of, weeks_between
from tgms.models.memory_store import NOTES_FILE
from tgms.models.planner import FIXED_LAYOUT, PlanTask, plan_and_run, static_prefix
from tgms.models.testing.smoke_rule import MEMORY_PREFIX, memory_note
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import CallLog, RunSettings, SystemEnv, build_system, run_task

W16, W17, W18 = "2004-W16", "2004-W17", "2004-W18"
W17_A = 1082332800000000  # 2004-04-19T00:00:00Z, Monday
W17_B = W17_A + 7 * 86_400_000_000


@pytest.fixture(scope="module")
def head_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The event log of a store of the first HEAD_EVENTS CollegeMsg events (built once)."""
    root = tmp_path_factory.mktemp("memory_head")
    build_store("collegemsg", root / "store", source=collegemsg_head(root, HEAD_EVENTS)).close()
    return root / "store" / "eventlog.jsonl"


@pytest.fixture
def store(head_log: Path, tmp_path: Path) -> Iterator[Store]:
    """A writable copy of the head store (each test may correct it)."""
    st = replay(head_log, tmp_path / "store")
    yield st
    st.close()


Rule = Callable[[dict[str, Any]], str]


def user_of(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def wrong_events(body: dict[str, Any]) -> str:
    """A summary like the smoke rule's, with the event count off by one."""
    from tgms.models.testing.smoke_rule import _data

    facts = _data(user_of(body), "facts")
    return memory_note(user_of(body)).replace(
        f" {facts['events']} messages", f" {facts['events'] + 1} messages"
    )


def test_weeks_are_iso_weeks_of_valid_time() -> None:
    week = week_of(W17_A + 5)
    assert (week.t_a, week.t_b, week.label) == (W17_A, W17_B, W17)
    assert (week.first_day, week.last_day) == ("2004-04-19", "2004-04-25")
    assert week_of(W17_A - 1).label == W16 and week_of(W17_B).label == W18
    labels = [w.label for w in weeks_between(1082040961000000, 1083198015000001)]  # the head's extent
    assert labels == [W16, W17, W18]
    assert week_of(1356912000000000).label == "2013-W01"  # 2012-12-31 belongs to ISO year 2013


def test_facts_are_the_operators_values_and_reproducible(store: Store) -> None:
    ctx = OpContext(store)
    tt = current_tt(store)
    assert tt == store.stats()["last_tt"] > 0
    wf = week_facts(ctx, week_of(W17_A), tt)
    window = {"t_a": W17_A, "t_b": W17_B}
    events = call(ctx, "list_events", {"window": window, "limit": 1})["payload"]["rows_total"]
    assert wf.value("events") == events > 0
    rows = call(ctx, "list_events", {"window": window, "limit": 10_000})["payload"]["rows"]
    assert wf.value("distinct_pairs") == len({(r["src"], r["dst"]) for r in rows})
    assert wf.value("active_nodes") == len({u for r in rows for u in (r["src"], r["dst"])})
    top = wf.value("top_senders")
    assert len(top) == 3 and top[0]["events"] == max(
        sum(r["src"] == s for r in rows) for s in {r["src"] for r in rows}
    )
    for fact in wf.facts:  # each fact's recorded call, pinned to its as_of_tt, gives the same value again
        assert fact.args["as_of_tt"] == tt
        payload = call(ctx, fact.op, fact.args, check_cost=False)["payload"]
        if fact.field == "rows_total":
            assert payload["rows_total"] == fact.value
        elif fact.name == "top_senders":
            assert [{"uid": r["src"], "events": r["count"]} for r in payload["rows"]] == fact.value
        else:
            key = fact.field.split(".", 1)[1]
            assert payload["rows"][0][key] == fact.value, fact.name


def test_an_agreeing_summary_is_stored_with_its_tt_and_a_rebuild_sends_nothing(
    store, scripted_client, tmp_path
):
    server, client = scripted_client(cache=tmp_path / "cache")
    ctx = OpContext(store)
    memory = Memory(tmp_path / "mem", store_digest=store.digest())
    calls = CallLog(client, 256)
    report = memory.build(calls.complete, ctx, "scripted")
    assert report.to_dict() == {"weeks": 3, "stored": 3, "reused": 0, "refused": 0, "empty": 0}
    assert server.log.chat_count == 3 and {c.role for c in calls.calls} == {"memory"}
    assert all(b["messages"][0]["content"].startswith(SUMMARY_PREFIX) for b in server.log.chat_bodies)
    assert SUMMARY_PREFIX == MEMORY_PREFIX  # the smoke rule recognizes the memory prompt by it
    live = memory.bank().live()
    assert [n.week for n in live] == [W16, W17, W18]
    tt = current_tt(store)
    for note in live:
        assert note.created_tt == tt and note.model == "scripted" and note.store_digest == store.digest()
        facts = {f["name"]: f["value"] for f in note.facts}
        assert f"there were {facts['events']} messages" in note.text
    lines = (tmp_path / "mem" / NOTES_FILE).read_text().splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["note"] * 3

    again = memory.build(calls.complete, ctx, "scripted")  # the notes are on disk: no request at all
    assert again.reused == 3 and not again.stored and server.log.chat_count == 3
    fresh = Memory(tmp_path / "mem2").build(calls.complete, ctx, "scripted")  # same prompts: cache hits
    assert len(fresh.stored) == 3 and server.log.chat_count == 3 and calls.calls[-1].cached


def test_a_summary_whose_numbers_disagree_is_refused(store, scripted_client, tmp_path) -> None:
    _, client = scripted_client(wrong_events)
    ctx = OpContext(store)
    memory = Memory(tmp_path / "mem")
    wf = week_facts(ctx, week_of(W17_A), current_tt(store))
    with pytest.raises(ModelOutputError) as caught:
        memory.summarize(CallLog(client, 256).complete, wf, "scripted")
    err = caught.value.to_dict()
    assert err["error"] == "E_MODEL_OUTPUT" and err["details"]["reason"] == "unmatched"
    assert err["details"]["week"] == W17
    assert err["details"]["problems"] == [
        {"kind": "number", "text": str(wf.value("events") + 1), "why": "not a computed value"}
    ]
    bank = memory.bank()
    assert not bank.notes and len(bank.refusals) == 1
    assert bank.refusals[0]["error"] == err and bank.refusals[0]["created_tt"] == current_tt(store)
    report = memory.build(CallLog(client, 256).complete, ctx, "scripted")
    assert len(report.refused) == 2 and report.reused == 1  # W17's refusal is not asked again
    assert not memory.bank().live()


def _event_in(ctx: OpContext, t_a: int, t_b: int) -> dict[str, Any]:
    window = {"t_a": t_a, "t_b": t_b}
    return call(ctx, "list_events", {"window": window, "limit": 1})["payload"]["rows"][0]


def test_a_correction_quarantines_the_overlapping_note_and_only_it(store, scripted_client, tmp_path) -> None:
    _, client = scripted_client()
    ctx = OpContext(store)
    memory = Memory(tmp_path / "mem")
    memory.build(CallLog(client, 256).complete, ctx, "scripted")
    notes = {n.week: n for n in memory.bank().live()}
    assert memory.quarantine(ctx) == []  # nothing written since the notes were made

    event = _event_in(ctx, W17_A, W17_B)
    result = store.write([{"op": "correct", "ref": {"vid": event["vid"]}, "props": {"fixed": True}}])
    assert result.status == "committed"
    assert current_tt(store) > notes[W17].created_tt
    assert memory.quarantine(ctx) == [notes[W17].id]
    bank = memory.bank()
    assert set(bank.quarantined) == {notes[W17].id}
    assert [n.week for n in bank.live()] == [W16, W18]
    assert notes[W17].id in bank.notes  # kept for audit
    change = bank.quarantined[notes[W17].id]["changes"][0]
    assert change["change"] == "corrected" and W17_A <= change["vt_s"] < W17_B
    assert memory.quarantine(ctx) == []  # scanned: the same change is not read twice

    # the whole span's retrieval no longer holds W17's note ...
    got = memory.retrieve(ctx, {"t_a": W17_A - 7 * 86_400_000_000, "t_b": W17_B + 7 * 86_400_000_000})
    assert [n.week for n in got] == [W16, W18]
    # ... and a rebuild notes W17 afresh from the corrected store, stamped with the new tt
    report = memory.build(CallLog(client, 256).complete, ctx, "scripted")
    assert len(report.stored) == 1 and report.reused == 2
    (fresh,) = [n for n in memory.bank().live() if n.week == W17]
    assert fresh.id != notes[W17].id and fresh.created_tt == current_tt(store)


def test_a_later_assertion_in_another_week_leaves_the_notes_alone(store, scripted_client, tmp_path) -> None:
    _, client = scripted_client()
    ctx = OpContext(store)
    memory = Memory(tmp_path / "mem")
    memory.build(CallLog(client, 256).complete, ctx, "scripted")
    later = W17_B + 30 * 86_400_000_000  # a month after the data: no note's week
    edge = {"op": "assert_edge", "src": "n1", "dst": "n2", "rel_type": "msg"}
    store.write([{**edge, "vt_s": later, "vt_e": later + 1}])
    assert memory.quarantine(ctx) == [] and len(memory.bank().live()) == 3
    store.write([{**edge, "vt_s": W17_A + 60, "vt_e": W17_A + 61}])
    (w17,) = [n.id for n in memory.bank().live() if n.week == W17]
    assert memory.quarantine(ctx) == [w17]


def test_quarantined_notes_never_reach_the_planner_prompt(store, scripted_client, tmp_path) -> None:
    _, client = scripted_client()
    ctx = OpContext(store)
    memory = Memory(tmp_path / "mem")
    memory.build(CallLog(client, 256).complete, ctx, "scripted")
    notes = {n.week: n for n in memory.bank().live()}
    event = _event_in(ctx, W17_A, W17_B)
    store.write([{"op": "correct", "ref": {"vid": event["vid"]}, "props": {"fixed": True}}])

    window = {"t_a": notes[W16].t_a, "t_b": notes[W18].t_b}
    block = notes_block(memory.retrieve(ctx, window))
    seen: list[dict[str, Any]] = []

    def planner(body: dict[str, Any]) -> str:
        seen.append(body)
        return "no plan"

    _, pclient = scripted_client(planner)
    task = PlanTask("t/1", "How many messages?", (), "count", "Dataset: test.", memory=block)
    plan_and_run(CallLog(pclient, 256).complete, task, ctx, lambda p: None, None)  # type: ignore[arg-type]
    # the prefix is untouched
    assert seen and seen[0]["messages"][0]["content"] == static_prefix(FIXED_LAYOUT)
    user = seen[0]["messages"][1]["content"]
    assert "MEMORY" in user and user.index("DATASET") < user.index("MEMORY") < user.index("QUESTION")
    assert notes[W16].text in user and notes[W18].text in user
    assert notes[W17].text.split(" there were")[0] not in user  # "In week 2004-W17 (...)": absent


def test_retrieval_follows_the_question_window_not_the_oracle_plan(
    head_log, scripted_client, tmp_path
) -> None:
    """The tgms system with memory on: the task's question names W16 only, its oracle plan W18; the
    planner prompt carries W16's note and the record says so."""
    store_dir = tmp_path / "ro-store"
    replay(head_log, store_dir).close()  # the system opens it read-only
    server, client = scripted_client()
    env = SystemEnv(
        store_dir,
        client,
        RunSettings(generation=GenerationConfig(model="scripted")),
        tmp_path / "work",
        dataset="collegemsg",
    )
    try:
        system = build_system("tgms", env, {"memory": True, "memory_k": 2})
        assert server.log.chat_count == 3  # the notes were built with the system
        w18 = {"t_a": W17_B, "t_b": W17_B + 7 * 86_400_000_000}
        task = Task(
            id="mem/1",
            question="How many nodes can n1 reach between 2004-04-15T00:00:00Z (1081987200000000 µs) "
            "and 2004-04-18T00:00:00Z (1082246400000000 µs)?",
            input_uids=("n1",),
            answer_kind="count",
            gold=0,
            oracle_plan={  # never read by retrieval: it names another week
                "steps": [{"id": "s1", "op": "temporal_reachability", "args": {"src": "n1", "window": w18}}],
                "answer_spec": {"kind": "count", "from": "s1.rows_total"},
            },
        )
        rec = run_task(system, task)
        mem = rec.extras["memory"]
        assert mem["weeks"] == [W16] and len(mem["notes"]) == 1
        assert mem["build"]["stored"] == 3 and mem["build"]["requests"] == 3
        note = Memory(next((tmp_path / "work" / "memory").glob("*/*"))).bank().notes[mem["notes"][0]]
        assert note.week == W16
        planner_body = next(
            b for b in server.log.chat_bodies if b["messages"][0]["content"] == static_prefix(FIXED_LAYOUT)
        )
        assert "2004-W16" in user_of(planner_body) and "2004-W18" not in user_of(planner_body)

        off = build_system("tgms", env, {})  # memory off (the default): the prompt has no memory section
        rec_off = run_task(off, task.model_copy(update={"id": "mem/2"}))
        assert "memory" not in rec_off.extras
        prefix = static_prefix(FIXED_LAYOUT)
        last = [b for b in server.log.chat_bodies if b["messages"][0]["content"] == prefix][-1]
        assert "MEMORY" not in user_of(last)
    finally:
        env.close()


def test_summary_prompt_fences_the_facts(store) -> None:
    wf = week_facts(OpContext(store), week_of(W17_A), current_tt(store))
    messages = summary_messages(wf)
    assert messages == summary_messages(wf)  # pure
    assert messages[0]["content"].startswith(SUMMARY_PREFIX)
    user = messages[1]["content"]
    assert user.count('<data name="facts">') == 1 and user.count("</data>") == 2
    for sender in wf.value("top_senders"):
        assert f'"uid":"{sender["uid"]}"' in user
