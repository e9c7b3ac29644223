"""The planner's prompt and repair loop against the scripted server (a test double) and a real small store.

Each scripted rule answers by the request it sees (:func:`by_turn`): the first request of a task carries
two messages (the static prefix and the task), and so does a repair (the task's user message with the
repair section after it: the bad plan quoted as data, the problems, the targets), so a rule can script
"first reply wrong, second reply right" and the tests can read exactly what the repair said. The repeat
detection and the seeded fallback are tested in ``test_plan_repair.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.models.conftest import HEAD_T_A, HEAD_T_B
from tgms.engine.api import (
    ExecConfig,
    OpContext,
    Store,
    Trace,
    build_plan,
    execute,
    get_operator,
    parse_args,
    profile,
)
from tgms.models.client import ChatClient
from tgms.models.manual import estimate_tokens, operator_manual
from tgms.models.planner import (
    FIXED_LAYOUT,
    PlannerConfig,
    PlanOutcome,
    PlanTask,
    plan_and_run,
    plan_schema,
    static_prefix,
    task_suffix,
)

T_A, T_B = HEAD_T_A, HEAD_T_B  # the whole valid-time extent of the store
DAY_A, DAY_B = 1082592000000000, 1082678400000000  # one day inside it


@pytest.fixture(scope="module")
def store(head_store: Store) -> Store:
    return head_store


@pytest.fixture(scope="module")
def ctx(store: Store) -> OpContext:
    return OpContext(store)


def task(
    question: str = "How many nodes can n1 reach?", uids: tuple[str, ...] = ("n1",), kind: str = "count"
):
    return PlanTask("t/1", question, uids, kind, "Dataset: test. Node uids look like: n1, n2.")


def reach_plan(field: str = "rows_total", src: str = "n1") -> dict[str, Any]:
    return {
        "steps": [
            {
                "id": "s1",
                "op": "temporal_reachability",
                "args": {"src": src, "window": {"t_a": T_A, "t_b": T_B}},
                "depends_on": [],
            }
        ],
        "answer_spec": {"kind": "count", "from": f"s1.{field}"},
    }


def invented_ref_plan() -> dict[str, Any]:
    """s2 counts ``s1.reached[*].uid``: temporal_reachability declares ``rows``, not ``reached``."""
    plan = reach_plan()
    plan["steps"].append(
        {
            "id": "s2",
            "op": "compute",
            "args": {"fn": "count", "input": {"$ref": "s1.reached[*].uid"}},
            "depends_on": ["s1"],
        }
    )
    plan["answer_spec"] = {"kind": "count", "from": "s2.value"}
    return plan


def by_turn(*replies: str) -> Callable[[dict[str, Any]], str]:
    """Reply ``replies[k]`` to the k-th request (the last one repeats): requests of one task are sequential,
    so the k-th request is attempt k + 1."""
    sent = [0]

    def rule(body: dict[str, Any]) -> str:
        k = sent[0]
        sent[0] += 1
        return replies[min(k, len(replies) - 1)]

    return rule


def complete_with(client: ChatClient):
    def complete(
        role: str, messages: list[dict[str, Any]], schema: Any = None, max_tokens: Any = None, sampling=None
    ):
        return client.complete(messages, schema=schema, max_tokens=max_tokens, sampling=sampling)

    return complete


def runner(ctx: OpContext, budget_s: float | None = None) -> Callable[[dict[str, Any]], Trace]:
    cfg = ExecConfig() if budget_s is None else ExecConfig(budget_s=budget_s)
    return lambda plan: execute(build_plan(plan), ctx, config=cfg)


def run(client: ChatClient, ctx: OpContext, t: PlanTask, cfg: PlannerConfig | None = None, budget_s=None):
    return plan_and_run(complete_with(client), t, ctx, runner(ctx, budget_s), cfg)


# -- the prompt -----------------------------------------------------------------------------------------


def test_static_prefix_is_byte_identical_across_tasks(scripted_client, ctx) -> None:
    def rule(body: dict[str, Any]) -> str:  # each task's own uid as the source
        return json.dumps(reach_plan(src="n2" if '["n2"]' in body["messages"][1]["content"] else "n1"))

    server, client = scripted_client(rule)
    a = task("How many nodes can n1 reach?", ("n1",))
    b = task("Count what n2 reaches, please.", ("n2",), kind="count")
    run(client, ctx, a)
    run(client, ctx, b)
    first, second = server.log.chat_bodies
    assert first["messages"][0]["content"].encode() == second["messages"][0]["content"].encode()
    assert first["messages"][0]["content"] == static_prefix(FIXED_LAYOUT)
    assert first["messages"][1]["content"] != second["messages"][1]["content"]
    assert '["n2"]' in second["messages"][1]["content"] and "n2 reaches" in second["messages"][1]["content"]


def test_manual_lists_each_operators_declared_outputs_and_stays_small() -> None:
    from tgms.engine.api import all_operators

    manual = operator_manual()
    for spec in all_operators():
        block = manual.split(f"\n{spec.name}: ", 1)[1].split("\n  out: ", 1)[1].split("\n", 1)[0]
        for name in spec.declared_outputs:
            if name in ("truncated", "cursor") or name.endswith("_truncated"):
                continue
            assert name in block, (spec.name, name)
    assert "rows[{uid,earliest_arrival,hops,src}]" in manual  # list outputs show their element keys
    # the whole planner prompt (prefix + a typical suffix) must leave room for the repair turns and the
    # reply in vLLM's 4,096-token window: aim at ~3,000. Estimated at 2.7 chars per token (SmolLM2's
    # tokenizer measured 2.76 on the prefix; the real-tokenizer test belongs with the local servers)
    question = (
        "Within the window from 2004-05-07T00:00:00Z (1083888000000000 µs) to 2004-05-08T00:00:00Z "
        "(1083974400000000 µs), how many nodes are temporally reachable from n36 and also from n277?"
    )
    card = (
        "Dataset: collegemsg, a temporal graph of timestamped directed edges (events).\n"
        "Node uids look like: n1, n2, n3.\nSize: 1899 nodes, 59879 edges. Relation types: msg.\n"
        "Valid time: from 2004-04-15T14:56:01Z (1082040961000000 µs) to 2004-10-26T07:52:22.000001Z "
        "(1098777142000001 µs)."
    )
    t = PlanTask("t/2", question, ("n277", "n36"), "count", card)
    # 3100 with the thirteen; issue 17's four analyst operators and compute's join/derive bring it to
    # ~3,600. Every configured serving window (conf/model/) is >= 8,192 tokens now (the 4,096 above was
    # the paper's smallest), which leaves prefix + suffix + three repair turns (~600 each) + a 512-token
    # reply room to spare; the cap still stops the manual from growing unnoticed. Issue 24's units legend
    # (one header block, ~450 tokens) brings it to ~4,050; issue 27's compute arguments (compare, add,
    # fraction, order, tie_by) to ~4,280; its static graph operators (connected_components, hop_distance)
    # and two aggregates (count_within_first, max_session) to ~4,600.
    # issue 27: edge predicates (where) on five graph operators, ~4,700; the node-simple longest path
    # (simple, strict) ~4,770; next_event (per-entity sequences: two nested event selections) ~+300, and
    # with the aggregate max_session_events and reachability's depart_by ~5,260; compute's group, quantile
    # and distinct (with the two worked examples in the manual) ~5,360; derive's copy and number(bool), and
    # temporal_reachability's list of sources (the fifth question set) ~5,420: the cap moves by 30, seen
    assert estimate_tokens(static_prefix(FIXED_LAYOUT) + task_suffix(t)) < 5430


def test_the_reply_may_come_in_think_blocks_and_code_fences(scripted_client, ctx) -> None:
    reply = (
        "<think>use reachability</think>\nHere is the plan:\n```json\n" + json.dumps(reach_plan()) + "\n```"
    )
    _, client = scripted_client(by_turn(reply))
    out = run(client, ctx, task())
    assert [a.valid for a in out.attempts] == [True] and out.first_emission_valid is True
    assert out.trace is not None and out.trace.status == "ok"
    assert out.plan is not None and out.plan["plan_id"] == "t/1" and out.plan["question"] == task().question


def test_a_bare_step_with_its_arguments_beside_op_is_read_as_the_plan_it_means(scripted_client, ctx) -> None:
    # two shapes the 1.5B model wrote for people's questions: one step at the top (answer_spec beside it),
    # its arguments next to op
    plan = reach_plan()
    step = plan["steps"][0]
    bare = {
        "id": "s1",
        "op": step["op"],
        **step["args"],
        "depends_on": [],
        "answer_spec": plan["answer_spec"],
    }
    _, client = scripted_client(by_turn(json.dumps(bare)))
    out = run(client, ctx, task())
    assert [a.valid for a in out.attempts] == [True] and out.trace is not None and out.trace.status == "ok"
    assert out.plan is not None and out.plan["steps"] == plan["steps"]
    assert out.attempts[0].reply == json.dumps(bare)  # the record keeps what the model wrote


# -- repairs ----------------------------------------------------------------------------------------------


def test_repair_fixes_an_invented_output_field_with_the_legal_list(scripted_client, ctx) -> None:
    fixed = invented_ref_plan()
    fixed["steps"][1]["args"]["input"] = {"$ref": "s1.rows[*].uid"}
    server, client = scripted_client(by_turn(json.dumps(invented_ref_plan()), json.dumps(fixed)))
    out = run(client, ctx, task())
    first, second = out.attempts
    assert not first.valid and first.runtime_error is None
    bad = [v for v in first.violations if v["code"] == "output_field"]
    assert bad and bad[0]["step"] == "s2" and "rows" in bad[0]["legal"] and "rows_total" in bad[0]["legal"]
    assert second.valid and second.runtime_error is None and out.first_emission_valid is False
    assert out.repaired and not out.exhausted and out.trace is not None and out.trace.status == "ok"
    repair = server.log.chat_bodies[1]["messages"]
    # no assistant turn: the bad plan is quoted as data in the one user turn, after the task's own message
    assert [m["role"] for m in repair] == ["system", "user"]
    first_request = server.log.chat_bodies[0]["messages"]
    assert repair[0] == first_request[0] and repair[1]["content"].startswith(first_request[1]["content"])
    section = repair[1]["content"][len(first_request[1]["content"]) :]
    quote = section.split('<data name="previous_plan">\n', 1)[1].split("\n</data>", 1)[0]
    # the refused ref is named in the problems, not quoted in the plan (plan_repair.failing_fields)
    assert "s1.reached[*].uid" not in quote and '"fn":"count"' in quote
    assert section.count("s1.reached[*].uid") == 1
    assert "output_field" in section and "s2 args.input" in section
    assert 'legal: ["truncated","cursor","rows","rows_total"]' in section
    assert '{"change":["s2.args.input"],"keep":["s1"]}' in section  # only s2 changes, s1 is kept
    assert first.sha256 is not None and first.sha256 != second.sha256


def test_a_runtime_cost_refusal_is_fed_back_with_its_suggestions(scripted_client, ctx) -> None:
    def args(t_a: int, t_b: int) -> dict[str, Any]:
        return {"motif": "M_path_3", "delta": 3600000000, "window": {"t_a": t_a, "t_b": t_b}}

    def motifs(t_a: int, t_b: int) -> str:
        step = {"id": "s1", "op": "count_temporal_motifs", "args": args(t_a, t_b), "depends_on": []}
        return json.dumps({"steps": [step], "answer_spec": {"kind": "count", "from": "s1.count"}})

    def estimate(t_a: int, t_b: int) -> float:
        spec = get_operator("count_temporal_motifs")
        return spec.cost(profile(ctx, None), parse_args(spec.args, args(t_a, t_b), spec.name)).seconds

    wide, narrow = estimate(T_A, T_B), estimate(DAY_A, DAY_B)
    assert narrow < wide  # an executor budget between the two refuses the whole extent, admits one day
    server, client = scripted_client(by_turn(motifs(T_A, T_B), motifs(DAY_A, DAY_B)))
    out = run(client, ctx, task("How many paths?", ()), budget_s=(wide + narrow) / 2)
    first, second = out.attempts
    assert first.valid and first.runtime_error is not None  # passed the verifier, refused by the executor
    assert first.runtime_error["error"] == "E_COST" and first.runtime_error["step"] == "s1"
    assert second.valid and second.runtime_error is None
    assert out.trace is not None and out.trace.status == "ok" and out.first_emission_valid is True
    repair = server.log.chat_bodies[1]["messages"][-1]["content"]
    assert "running it failed" in repair and "E_COST" in repair
    assert "suggestions" in repair and "narrow the window" in repair


def test_an_unparseable_reply_is_repaired(scripted_client, ctx) -> None:
    server, client = scripted_client(by_turn("I think about 40 nodes.", json.dumps(reach_plan())))
    out = run(client, ctx, task())
    first, second = out.attempts
    assert (first.n, first.sha256, first.valid) == (1, None, False)
    assert first.violations[0]["code"] == "unparseable"
    assert second.valid and out.trace is not None
    repair = server.log.chat_bodies[1]["messages"][-1]["content"]
    assert "no JSON object" in repair and '<data name="previous_reply">\nI think about 40 nodes.' in repair


def test_the_budget_runs_out_after_four_attempts(scripted_client, ctx) -> None:
    bad = [json.dumps(reach_plan(f)) for f in ("reach_count", "n_reached", "reached", "total")]
    server, client = scripted_client(by_turn(*bad))
    out = run(client, ctx, task())
    assert out.exhausted and len(out.attempts) == 4 and server.log.chat_count == 4
    assert [a.n for a in out.attempts] == [1, 2, 3, 4] and not any(a.valid for a in out.attempts)
    assert all(v["code"] == "answer_field" for a in out.attempts for v in a.violations)
    assert out.repeat_replies == 0 and not any(a.repeated for a in out.attempts)
    # the first repair greedy, the later ones seeded samples (models.planner.PlannerConfig.greedy_repairs)
    assert [bool(a.sampling) for a in out.attempts] == [False, False, True, True]
    # only the latest bad plan is quoted: the prompt does not grow with the repairs
    repairs = [b["messages"][-1]["content"] for b in server.log.chat_bodies[1:]]
    assert {len(b["messages"]) for b in server.log.chat_bodies} == {2}
    assert [r.count('<data name="previous_plan">') for r in repairs] == [1, 1, 1]
    assert all(f"s1.{f}" in r for f, r in zip(("reach_count", "n_reached", "reached"), repairs, strict=True))
    assert all(f"REPAIR. Your attempt {n} of 4" in r for n, r in enumerate(repairs, 1))


def test_a_literal_uid_outside_the_task_input_is_a_grounding_violation(scripted_client, ctx) -> None:
    _, client = scripted_client(by_turn(json.dumps(reach_plan(src="n2")), json.dumps(reach_plan())))
    out = run(client, ctx, task())
    assert [v["code"] for v in out.attempts[0].violations] == ["grounding"]
    assert out.attempts[0].violations[0]["legal"] == ["n1"] and out.attempts[1].valid


# -- ablation switches ------------------------------------------------------------------------------------


def test_constrained_sends_the_plan_schema_as_the_response_format(scripted_client, ctx) -> None:
    server, client = scripted_client(by_turn(json.dumps(reach_plan())))
    run(client, ctx, task())
    run(client, ctx, task(), PlannerConfig(constrained=True))
    plain, constrained = server.log.chat_bodies
    assert "response_format" not in plain
    fmt = constrained["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == plan_schema("count")
    steps = fmt["json_schema"]["schema"]["properties"]["steps"]
    assert steps["maxItems"] == 12 and "temporal_reachability" in steps["items"]["properties"]["op"]["enum"]
    assert steps["items"]["properties"]["id"]["pattern"] == "^s[0-9]{1,2}$"
    assert fmt["json_schema"]["schema"]["properties"]["answer_spec"]["properties"]["kind"]["enum"] == [
        "count"
    ]


def test_without_contracts_an_invented_field_fails_at_run_time_instead(scripted_client, ctx) -> None:
    fixed = invented_ref_plan()
    fixed["steps"][1]["args"]["input"] = {"$ref": "s1.rows[*].uid"}
    _, client = scripted_client(by_turn(json.dumps(invented_ref_plan()), json.dumps(fixed)))
    out: PlanOutcome = run(client, ctx, task(), PlannerConfig(contracts=False))
    first, second = out.attempts
    assert first.valid and first.violations == []  # the verifier let it through
    assert first.runtime_error is not None and first.runtime_error["step"] == "s2"
    assert "reached" in first.runtime_error["message"]
    assert second.valid and second.runtime_error is None and out.trace is not None


def test_verifier_config_follows_the_contracts_switch() -> None:
    on = PlannerConfig().verifier_config(frozenset({"n1"}))
    off = PlannerConfig(contracts=False).verifier_config(frozenset({"n1"}))
    assert "output_contracts" in on.checks and "output_contracts" not in off.checks
    assert on.task_uids == off.task_uids == frozenset({"n1"})


def test_a_plan_without_answer_spec_is_repaired_not_run(scripted_client, ctx) -> None:
    # measured with SmolLM2 on vLLM: a copied worked plan without its answer_spec verified and ran, answering
    # nothing; it is a violation to repair
    plan = reach_plan()
    bare = {"steps": plan["steps"]}
    server, client = scripted_client(by_turn(json.dumps(bare), json.dumps(plan)))
    out = run(client, ctx, task())
    assert [a.valid for a in out.attempts] == [False, True] and out.first_emission_valid is False
    assert [v["code"] for v in out.attempts[0].violations] == ["answer_spec"]
    assert "answer_spec" in server.log.chat_bodies[1]["messages"][-1]["content"]
    # the legal answer_specs are concrete (the last step's declared outputs), never a placeholder to copy
    legal = out.attempts[0].violations[0]["legal"]
    assert {"kind": "count", "from": "s1.rows_total"} in legal and all("<" not in x["from"] for x in legal)
    assert not any(x["from"].endswith((".cursor", ".truncated")) for x in legal)


def test_the_units_switch_turns_off_only_the_units_check() -> None:
    """The no_units ablation (conf/ablation/no_units.yaml): the planner's verifier skips the units group."""
    from tgms.models.planner import PlannerConfig

    on = PlannerConfig().verifier_config(frozenset({"n9"}))
    off = PlannerConfig(units=False).verifier_config(frozenset({"n9"}))
    assert "units" in on.checks and "units" not in off.checks
    assert off.checks == on.checks - {"units"} and off.task_uids == frozenset({"n9"})
    both = PlannerConfig(units=False, contracts=False).verifier_config(frozenset())
    assert both.checks == on.checks - {"units", "output_contracts"}
