"""A repair that can change the answer (issue 25, item 1), against the scripted server (a test double).

Measured with Qwen2.5-Coder-1.5B and SmolLM2 at temperature 0: every repair reply was byte-identical to the
bad reply before it. These tests pin the fix: no assistant turn replays the bad reply, the repair names the
failing step and field with the legal alternatives, and a reply that repeats an earlier attempt is asked
again with seeded sampling (a fixed seed per task and attempt, so the response cache keeps reruns free and
deterministic).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.models.conftest import config
from tests.models.test_planner import by_turn, complete_with, invented_ref_plan, reach_plan, runner, task
from tgms.engine.api import OpContext, Store
from tgms.models.client import ChatClient
from tgms.models.config import Sampling
from tgms.models.plan_repair import (
    TOP,
    describe,
    failing_fields,
    failing_steps,
    operators_taking,
    repair_section,
    repeat_seed,
    repeat_temperature,
    targets,
)
from tgms.models.planner import PlannerConfig, plan_and_run


@pytest.fixture(scope="module")
def ctx(head_store: Store) -> OpContext:
    return OpContext(head_store)


def fixed_plan() -> dict[str, Any]:
    plan = invented_ref_plan()
    plan["steps"][1]["args"]["input"] = {"$ref": "s1.rows[*].uid"}
    return plan


BAD, GOOD = json.dumps(invented_ref_plan()), json.dumps(fixed_plan())


def run(client: ChatClient, ctx: OpContext, cfg: PlannerConfig | None = None, runs: list[Any] | None = None):
    plan_runner = runner(ctx)

    def counted(plan: dict[str, Any]) -> Any:
        if runs is not None:
            runs.append(plan)
        return plan_runner(plan)

    return plan_and_run(complete_with(client), task(), ctx, counted, cfg)


def test_a_repeated_bad_plan_is_asked_again_with_seeded_sampling(scripted_client, ctx) -> None:
    # the same bad plan twice (the second time re-indented: the same plan, other bytes), then a good one
    server, client = scripted_client(by_turn(BAD, json.dumps(invented_ref_plan(), indent=2), GOOD))
    out = run(client, ctx)
    first, second, third = out.attempts
    assert (first.valid, second.valid, third.valid) == (False, False, True)
    assert (first.repeated, second.repeated, third.repeated) == (False, True, False)
    assert second.sha256 == first.sha256 and third.sha256 != first.sha256
    assert second.violations == first.violations  # the repeat's problems are the earlier attempt's
    assert out.repeat_replies == 1 and out.repaired and out.trace is not None and out.trace.status == "ok"
    bodies = server.log.chat_bodies
    assert [b["temperature"] for b in bodies[:2]] == [0.0, 0.0] and [b["seed"] for b in bodies[:2]] == [0, 0]
    # the retry of the repeated repair: sampled with the task's seed for attempt 3, and the failing step
    # left out of the quoted plan (the model cannot copy what it is not shown)
    assert bodies[2]["temperature"] == 0.7 and bodies[2]["seed"] == repeat_seed("t/1", 3) != 0
    assert bodies[2]["messages"][0] == bodies[1]["messages"][0]
    retry = bodies[2]["messages"][-1]["content"]
    assert "without the failing steps (s2)" in retry and "write those steps anew" in retry
    quoted_plan = retry.split('<data name="previous_plan">\n', 1)[1].split("\n</data>", 1)[0]
    assert '"id":"s1"' in quoted_plan and '"id":"s2"' not in quoted_plan
    assert '"id":"s2"' in bodies[1]["messages"][-1]["content"]  # the first repair quotes it whole
    # and constrained by the per-operator schema: the keys and types it refused cannot be written again
    assert "response_format" not in bodies[0] and "response_format" not in bodies[1]
    sent = bodies[2]["response_format"]["json_schema"]["schema"]  # the vllm form (this endpoint's flavour)
    branches = sent["properties"]["steps"]["items"]["anyOf"]
    assert {b["properties"]["op"]["const"] for b in branches} >= {"compute", "temporal_reachability"}
    assert third.sampling == {"temperature": bodies[2]["temperature"], "seed": bodies[2]["seed"]}
    assert first.sampling is None and second.sampling is None
    for body in bodies:  # the bad reply is never replayed as the model's own turn
        assert all(m["role"] != "assistant" for m in body["messages"])
    repair = bodies[1]["messages"][-1]["content"]
    assert 'legal: ["truncated","cursor","rows","rows_total"]' in repair and "s2 args.input" in repair
    assert '"keep":["s1"]' in repair
    # the value the problem names is not quoted back (the model cannot copy it), the rest of s2 is
    first_quote = repair.split('<data name="previous_plan">\n', 1)[1].split("\n</data>", 1)[0]
    assert '"fn":"count"' in first_quote and "s1.reached" not in first_quote
    assert "a value a problem names is left out of the quote: write it anew" in repair


def test_a_byte_identical_unreadable_reply_is_a_repeat(scripted_client, ctx) -> None:
    server, client = scripted_client(by_turn("about 40", "about 40", json.dumps(reach_plan())))
    out = run(client, ctx)
    assert [a.repeated for a in out.attempts] == [False, True, False] and out.repeat_replies == 1
    assert [a.sha256 for a in out.attempts[:2]] == [None, None] and out.attempts[2].valid
    assert server.log.chat_bodies[2]["temperature"] > 0


def test_each_repeat_gets_a_new_seed_and_the_budget_still_bounds_the_requests(scripted_client, ctx) -> None:
    server, client = scripted_client(by_turn(BAD))  # the model never changes its plan
    runs: list[Any] = []
    out = run(client, ctx, runs=runs)
    # budget 3 repairs + the first attempt, and 2 redraws of a repeated repair that spend no budget
    assert out.exhausted and server.log.chat_count == 6 and out.repeat_replies == 5
    assert [a.redraw for a in out.attempts] == [False, False, True, True, False, False]
    seeds = [b["seed"] for b in server.log.chat_bodies]
    assert seeds[:2] == [0, 0] and seeds[2:] == [repeat_seed("t/1", n) for n in (3, 4, 5, 6)]
    assert len(set(seeds[2:])) == 4
    # each further repeat samples hotter (a 1.5B model repeated 4 of 8 retries at 0.7), up to the cap
    assert [b["temperature"] for b in server.log.chat_bodies] == [0.0, 0.0, 0.7, 1.0, 1.3, 1.3]
    assert runs == []  # never valid, never run
    assert all(a.reply == BAD for a in out.attempts)  # every reply recorded as received


def test_a_redraw_after_a_repeat_spends_no_budget(scripted_client, ctx) -> None:
    # the last budgeted repair repeats: the redraw still gets its chance, and its new plan is the answer
    good = json.dumps(reach_plan())
    server, client = scripted_client(by_turn(BAD, "about 40", "no plan either", BAD, good))
    out = run(client, ctx)
    assert not out.exhausted and out.attempts[-1].valid and out.attempts[-1].redraw
    assert [a.repeated for a in out.attempts] == [False, False, False, True, False]
    assert server.log.chat_count == 5


def test_no_redraws_keeps_the_budget_as_the_bound(scripted_client, ctx) -> None:
    server, client = scripted_client(by_turn(BAD))
    out = run(client, ctx, PlannerConfig(repeat_redraws=0))
    assert out.exhausted and server.log.chat_count == 4 and not any(a.redraw for a in out.attempts)


def other_bad_plan(field: str) -> str:
    plan = invented_ref_plan()
    plan["steps"][1]["args"]["input"] = {"$ref": f"s1.{field}[*].uid"}
    return json.dumps(plan)


def test_repairs_after_the_first_greedy_one_are_seeded_samples(scripted_client, ctx) -> None:
    # three different bad plans, then a good one: no repeat, yet repair 2 and 3 are sampled (a greedy decode
    # of a prompt that differs from the last only in the quoted plan wrote the last repair again, byte for
    # byte, in 2 of 15 repair replies of the 1.5B model)
    bads = [other_bad_plan(f) for f in ("reached", "nodes", "found")]
    server, client = scripted_client(by_turn(*bads, GOOD))
    out = run(client, ctx)
    assert [a.repeated for a in out.attempts] == [False] * 4 and out.attempts[-1].valid
    bodies = server.log.chat_bodies
    assert [b["temperature"] for b in bodies] == [0.0, 0.0, 0.5, 0.5]
    assert [b["seed"] for b in bodies] == [0, 0, repeat_seed("t/1", 3), repeat_seed("t/1", 4)]
    assert all("response_format" not in b for b in bodies)  # only a repeat's retry is constrained
    assert [a.sampling for a in out.attempts[:2]] == [None, None]
    assert out.attempts[2].sampling == {"temperature": 0.5, "seed": repeat_seed("t/1", 3)}


def test_greedy_repairs_sets_how_many_repairs_stay_greedy(scripted_client, ctx) -> None:
    bads = [other_bad_plan(f) for f in ("reached", "nodes", "found")]
    server, client = scripted_client(by_turn(*bads, GOOD))
    run(client, ctx, PlannerConfig(greedy_repairs=3))
    assert [b["temperature"] for b in server.log.chat_bodies] == [0.0] * 4


def test_a_repeated_plan_that_failed_at_run_time_is_not_run_again(scripted_client, ctx) -> None:
    runs: list[Any] = []
    # passes the verifier without contracts, fails at run time on the invented field, three times
    _, client = scripted_client(by_turn(BAD, BAD, BAD, GOOD))
    out = run(client, ctx, PlannerConfig(contracts=False), runs=runs)
    assert [a.repeated for a in out.attempts] == [False, True, True, False]
    assert [a.runtime_error is not None for a in out.attempts] == [True, True, True, False]
    assert len(runs) == 2  # the bad plan once, the good one once: no double work on a repeat
    assert out.trace is not None and out.trace.status == "ok"


def test_sampled_repairs_are_deterministic_through_the_response_cache(scripted_client, ctx, tmp_path) -> None:
    cache = tmp_path / "responses"
    server, client = scripted_client(by_turn(BAD, BAD, GOOD), cache=cache)
    out = run(client, ctx)
    again = ChatClient(config(server.url, cache_dir=Path(cache)))
    try:
        rerun = run(again, ctx)
    finally:
        again.close()
    assert server.log.chat_count == 3  # the rerun, sampled request included, came from the cache
    assert [a.to_dict() for a in rerun.attempts] == [a.to_dict() for a in out.attempts]


def test_the_sampling_override_reaches_the_request_and_its_cache_key(scripted_client) -> None:
    _, client = scripted_client(lambda body: f"t={body['temperature']} s={body['seed']}")
    messages = [{"role": "user", "content": "hi"}]
    greedy = client.complete(messages)
    sampled = client.complete(messages, sampling=Sampling(0.7, 42))
    assert (greedy.text, sampled.text) == ("t=0.0 s=0", "t=0.7 s=42")
    assert greedy.request_hash != sampled.request_hash


def test_targets_name_failing_fields_and_keep_the_rest() -> None:
    plan = {"steps": [{"id": "s1"}, {"id": "s2"}, {"id": "s3"}], "answer_spec": {}}
    problems = [
        {"code": "output_field", "step": "s2", "field": "args.input"},
        {"code": "answer_field", "step": "s3", "field": "answer_spec.from"},
    ]
    assert targets(problems, plan) == {"change": ["s2.args.input", "answer_spec.from"], "keep": ["s1", "s3"]}
    # a problem of the whole plan names no target: nothing is promised to be kept
    assert targets([{"code": "schema", "message": "steps is not a list"}], plan) == {"change": [], "keep": []}


def test_repeat_seeds_are_fixed_31_bit_and_differ_by_task_and_attempt() -> None:
    seeds = {repeat_seed(t, n) for t in ("a", "b") for n in (2, 3, 4)}
    assert len(seeds) == 6 and all(0 <= s < 2**31 for s in seeds)
    assert repeat_seed("a", 2) == repeat_seed("a", 2)


def test_repeat_temperatures_rise_to_a_cap() -> None:
    assert [repeat_temperature(k) for k in (1, 2, 3, 4, 9)] == [0.7, 1.0, 1.3, 1.3, 1.3]
    assert repeat_temperature(1, 0.2) == 0.2 and repeat_temperature(2, 0.2) == 0.5


def test_an_argument_the_operator_does_not_take_names_the_operators_that_do() -> None:
    # Qwen2.5-Coder-1.5B, "contacts n42 gained": diff_snapshots with a uid, repeated when shown only
    # diff_snapshots' own arguments; neighborhood_evolution takes uid, t1 and t2
    assert operators_taking("uid", {"uid", "t1", "t2"}, "diff_snapshots")[0] == "neighborhood_evolution"
    assert "diff_snapshots" not in operators_taking("t1", {"t1"}, "diff_snapshots")
    assert operators_taking("no_such_arg", {"no_such_arg"}, None) == []
    plan = {
        "steps": [{"id": "s1", "op": "diff_snapshots", "args": {"uid": "U1", "t1": 1, "t2": 2}}],
        "answer_spec": {"kind": "count", "from": "s1.added_total"},
    }
    problem = {
        "code": "arg_name",
        "step": "s1",
        "field": "args.uid",
        "message": "step s1: diff_snapshots: uid: Extra inputs are not permitted",
        "legal": ["as_of_tt", "cursor", "limit", "scope", "t1", "t2"],
    }
    text = describe([problem], plan)
    assert "operators that take uid: neighborhood_evolution" in text
    assert "operators that take" not in describe([problem])  # without the plan nothing is guessed


def test_a_repeat_whose_every_step_fails_is_quoted_whole() -> None:
    # with its only step left out, Qwen2.5-Coder-1.5B lost the plan's shape and wrote step keys at the top
    plan = {"steps": [{"id": "s1", "op": "list_events", "args": {}}], "answer_spec": {}}
    problems = [{"code": "grounding", "step": "s1", "field": "args.src"}]
    assert failing_steps(problems, plan) == frozenset()
    two = {"steps": [*plan["steps"], {"id": "s2", "op": "compute", "args": {}}], "answer_spec": {}}
    assert failing_steps(problems, two) == {"s1"}
    assert failing_steps([{"code": "grounding", "step": "s9"}], two) == frozenset()  # no such step


def test_every_repair_leaves_out_the_values_the_problems_name() -> None:
    one = {
        "plan_id": "p",
        "steps": [{"id": "s1", "op": "aggregate_events", "args": {"window": {}, "group_by": ["src"]}}],
        "answer_spec": {"kind": "entity", "from": "s1.rows[0].count(src)"},
    }
    problems = [
        {"code": "arg_missing", "step": "s1", "field": "args.window.t_a", "message": "t_a is required"},
        {"code": "grounding", "step": "s1", "field": "args.src[0]", "message": "src not in the plan"},
        {"code": "ref_syntax", "field": "answer_spec.from", "message": "not a ref"},
        {"code": "schema", "step": "s1", "field": "args", "message": "whole args: nothing to leave out"},
    ]
    assert failing_fields(problems, one) == {"s1": {"window"}, "answer_spec": {"from"}}  # src: not in args
    section = repair_section(json.dumps(one), one, problems, runtime=False)
    quote = section.split('<data name="previous_plan">\n', 1)[1].split("\n</data>", 1)[0]
    # a plan of one failing step keeps its step (the plan's shape) but not the refused values
    assert json.loads(quote) == {
        "steps": [{"id": "s1", "op": "aggregate_events", "args": {"group_by": ["src"]}}],
        "answer_spec": {"kind": "entity"},
    }
    assert "write it anew" in section and "args.window.t_a" in section  # the problem still names it
    # nothing named, nothing left out: the quote is the plan (less the task's keys)
    assert failing_fields([{"code": "schema", "message": "x"}], one) == {}
    whole = repair_section("", one, [{"code": "schema", "message": "x"}], False)
    assert json.loads(whole.split('<data name="previous_plan">\n', 1)[1].split("\n</data>", 1)[0]) == {
        "steps": one["steps"],
        "answer_spec": one["answer_spec"],
    }
    # a step's keys written at the plan's top are the plan's unknown keys: left out, the rest quoted
    flat = {"args": {"window": {}}, "group_by": ["src"], "steps": [], "answer_spec": {"kind": "count"}}
    stray = [
        {"code": "schema", "field": k, "message": f"unknown plan key {k!r}"} for k in ("args", "group_by")
    ]
    stray.append({"code": "schema", "field": "steps", "message": "steps must be a non-empty list"})
    assert failing_fields(stray, flat) == {TOP: {"args", "group_by"}}
    section = repair_section(json.dumps(flat), flat, stray, runtime=False)
    quote = section.split('<data name="previous_plan">\n', 1)[1].split("\n</data>", 1)[0]
    assert json.loads(quote) == {"steps": [], "answer_spec": {"kind": "count"}}
    # an argument key holding a dot or a bracket is still found (matched against the step's own keys)
    odd = {"steps": [{"id": "s1", "op": "x", "args": {"a": 2, "a.b[0]": 1}}], "answer_spec": {}}
    assert failing_fields([{"step": "s1", "field": "args.a.b[0].c"}], odd) == {"s1": {"a.b[0]"}}
