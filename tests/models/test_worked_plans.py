"""Named times and the prompt layouts (issue 25, item 2): what a plan may write instead of a 16-digit
number, and what goes in the static prefix and what in the task's message."""

from __future__ import annotations

import pytest

from tgms.engine.api import InvalidArgError
from tgms.models.manual import estimate_tokens, operator_manual
from tgms.models.plan_prompt import (
    FIXED_EXAMPLES,
    FIXED_LAYOUT,
    NO_TIMES,
    NO_UIDS,
    PlanTask,
    PromptLayout,
    first_messages,
    static_prefix,
)
from tgms.models.planner import read_plan
from tgms.models.worked_plans import (
    NamedValue,
    WorkedPlan,
    belief_time,
    pin_to_question,
    resolve_names,
    time_names,
    with_names,
)

Q = (
    "How many δ-temporal paths with δ = 10 minutes (600000000 µs) occur between 2004-06-14T06:00:00Z "
    "(1087192800000000 µs) and 2004-06-14T00:00:00Z (1087171200000000 µs)?"
)


def test_times_are_named_in_increasing_order_and_durations_apart() -> None:
    assert time_names(Q) == (
        NamedValue("T1", 1087171200000000, "time"),
        NamedValue("T2", 1087192800000000, "time"),
        NamedValue("D1", 600000000, "duration"),
    )
    assert time_names("in [1083369600000000 µs, 1083974400000000 µs)") == (
        NamedValue("T1", 1083369600000000, "time"),
        NamedValue("T2", 1083974400000000, "time"),
    )
    assert time_names("How many nodes are there?") == ()


def test_names_resolve_in_step_args_only_and_refs_stay() -> None:
    plan = {
        "steps": [
            {
                "id": "s1",
                "op": "count_temporal_motifs",
                "args": {"motif": "M_path_3", "delta": "D1", "window": {"t_a": "T1", "t_b": "T2"}},
            },
            {"id": "s2", "op": "compute", "args": {"fn": "count", "input": {"$ref": "T1"}, "as": "T9"}},
        ],
        "answer_spec": {"kind": "count", "from": "T1"},
    }
    out, used = resolve_names(plan, time_names(Q))
    assert out["steps"][0]["args"] == {
        "motif": "M_path_3",
        "delta": 600000000,
        "window": {"t_a": 1087171200000000, "t_b": 1087192800000000},
    }
    assert out["steps"][1]["args"]["input"] == {"$ref": "T1"}  # a reference is a path, never a constant
    assert out["steps"][1]["args"]["as"] == "T9"  # not a listed name
    assert out["answer_spec"] == plan["answer_spec"] and used == ["D1", "T1", "T2"]
    assert with_names(out, time_names(Q))["steps"][0]["args"] == plan["steps"][0]["args"]


def test_read_plan_puts_the_numbers_in_before_the_verifier() -> None:
    task = PlanTask("t/1", Q, (), "count", "card")
    reply = '{"steps":[{"id":"s1","op":"count_temporal_motifs","args":{"motif":"M_path_3","delta":"D1",'
    reply += '"window":{"t_a":"T1","t_b":"T2"}}}],"answer_spec":{"kind":"count","from":"s1.count"}}'
    plan = read_plan(reply, task, named=True)
    assert plan["steps"][0]["args"]["window"] == {"t_a": 1087171200000000, "t_b": 1087192800000000}
    assert read_plan(reply, task)["steps"][0]["args"]["delta"] == "D1"  # names off: left as written


def test_layouts_refuse_a_manual_without_retrieved_examples() -> None:
    with pytest.raises(InvalidArgError):
        PromptLayout("fixed", "retrieved")
    with pytest.raises(InvalidArgError):
        PromptLayout("some")


def _example(op_plan: dict, question: str) -> WorkedPlan:
    return WorkedPlan(question, (), "count", op_plan, "train/x")


def test_the_retrieved_layout_keeps_a_short_constant_prefix_and_moves_the_blocks() -> None:
    layout = PromptLayout("retrieved", "retrieved")
    ex = _example(
        {
            "steps": [
                {
                    "id": "s1",
                    "op": "count_temporal_motifs",
                    "args": {"motif": "M_path_3", "delta": 600000000, "window": {"t_a": 1, "t_b": 2}},
                }
            ],
            "answer_spec": {"kind": "count", "from": "s1.count"},
        },
        "Paths with δ = (600000000 µs)?",
    )
    a = first_messages(PlanTask("t/1", Q, (), "count", "card", examples=(ex,)), layout)
    b = first_messages(PlanTask("t/2", "How many?", (), "count", "card"), layout)
    assert a[0]["content"] == static_prefix(layout)
    assert estimate_tokens(static_prefix(layout)) < estimate_tokens(static_prefix(FIXED_LAYOUT)) / 2
    user = a[1]["content"]
    assert "count_temporal_motifs: Counts" in user and "compute: Combines" not in user
    assert '"delta":"D1"' in user  # the worked plan cites its own named duration
    assert "T1 = 1087171200000000; T2 = 1087192800000000; D1 = 600000000" in user
    # a task with no retrieved plans (a question outside any suite) gets the fixed layout, prefix included
    assert b == first_messages(PlanTask("t/2", "How many?", (), "count", "card"), FIXED_LAYOUT)
    assert operator_manual() in b[0]["content"] and "new_node_rate" in b[0]["content"]


def test_a_question_without_times_is_told_to_leave_the_window_out() -> None:
    timed = first_messages(PlanTask("t/1", Q, (), "count", "card"))[1]["content"]
    untimed = first_messages(
        PlanTask("t/2", "Which user sent most, over the whole period?", (), "entity", "c")
    )
    assert NO_TIMES not in timed and NO_TIMES in untimed[1]["content"]
    # a duration alone is not a time: the window is still left out
    durations = first_messages(PlanTask("t/3", "Replies within 10 minutes, ever?", (), "count", "c"))
    assert NO_TIMES in durations[1]["content"] and "D1 = 600000000" in durations[1]["content"]
    # without named times the prompt says nothing of it (the no_time_names ablation is the old prompt)
    plain = first_messages(
        PlanTask("t/2", "Which user, ever?", (), "entity", "c"), PromptLayout("fixed", "full", False)
    )
    assert NO_TIMES not in plain[1]["content"]


def test_a_question_without_input_uids_is_told_to_leave_the_uid_filters_out() -> None:
    none = first_messages(PlanTask("t/1", "Which user sent most, ever?", (), "entity", "c"))[1]["content"]
    one = first_messages(PlanTask("t/2", "Whom did n5 reach, ever?", ("n5",), "entity_set", "c"))[1][
        "content"
    ]
    assert NO_UIDS in none and NO_UIDS not in one
    assert none.index(NO_UIDS) > none.index("QUESTION")  # outside every fence, after the task's data


def test_the_fixed_examples_show_named_times_in_the_prefix() -> None:
    assert '"t_a":"T1","t_b":"T2"' in static_prefix(FIXED_LAYOUT)
    assert '"t_a":1083369600000000' in static_prefix(PromptLayout("fixed", "full", time_names=False))
    assert all(ex.source.startswith("fixed:") for ex in FIXED_EXAMPLES)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many messages were sent in May 2004?", ["2004-05-01", "2004-06-01"]),
        ("received a message between 27 and 30 April 2004?", ["2004-04-27", "2004-05-01"]),
        ("during the week of 20 to 26 April 2004?", ["2004-04-20", "2004-04-27"]),
        ("Starting from user 9 on 8 October 2004, the longest chain?", ["2004-10-08", "2004-10-09"]),
        ("in December 2004 and in 31 April 2004", ["2004-12-01", "2005-01-01"]),  # no 31 April: not named
        (
            "users who sent in April 2004 also sent in June 2004",
            ["2004-04-01", "2004-05-01", "2004-06-01", "2004-07-01"],
        ),
        ("how many messages did user 9 send in April and May 2004?", ["2004-04-01", "2004-06-01"]),
        ("from December 2003 to February 2004", ["2003-12-01", "2004-03-01"]),
        ("the ratings account 35 gave in 2013", ["2013-01-01", "2014-01-01"]),
        ("ratings given since 2012", ["2012-01-01"]),  # an open end: the year's start only
        # a year inside an ISO date is not a bare year; its µs number is the time
        ("from 2004-05-19T00:00:00Z (1084924800000000 µs) on", ["2004-05-19"]),
    ],
)
def test_dates_written_in_words_are_named_half_open_in_utc(question: str, expected: list[str]) -> None:
    from tgms.engine.api import us_to_iso

    names = time_names(question)
    assert [n.name for n in names] == [f"T{i}" for i in range(1, len(expected) + 1)]
    assert [us_to_iso(n.value)[:10] for n in names] == expected


def test_durations_written_in_words_are_named() -> None:
    names = time_names(
        "a reply within one minute, or within 10 minutes, in any 24-hour period, 7 days later?"
    )
    assert [(n.name, n.value) for n in names] == [
        ("D1", 60_000_000),
        ("D2", 600_000_000),
        ("D3", 86_400_000_000),
        ("D4", 604_800_000_000),
    ]


def test_input_uids_are_named_in_the_order_the_question_mentions_them() -> None:
    from tgms.models.worked_plans import question_names, uid_names

    q = "How many nodes can both n6 and n561 reach in [1083369600000000 µs, 1083974400000000 µs)?"
    assert [(n.name, n.value) for n in uid_names(q, ("n561", "n6", "n9"))] == [
        ("U1", "n6"),
        ("U2", "n561"),
        ("U3", "n9"),  # not in the question: after the mentioned ones
    ]
    assert uid_names("from n61 and n6", ("n6", "n61"))[0].value == "n61"  # whole ids only
    names = question_names(q, ("n561", "n6"))
    plan = {
        "steps": [
            {
                "id": "s1",
                "op": "temporal_reachability",
                "args": {"src": "U1", "window": {"t_a": "T1", "t_b": "T2"}},
            },
            {
                "id": "s2",
                "op": "temporal_reachability",
                "args": {"src": "U2", "window": {"t_a": "T1", "t_b": "T2"}},
            },
        ]
    }
    resolved, _ = resolve_names(plan, names)
    assert [s["args"]["src"] for s in resolved["steps"]] == ["n6", "n561"]
    assert with_names(resolved, names) == plan
    ex = WorkedPlan(q, ("n561", "n6"), "count", resolved, "train/x").render(1, True)
    assert "Names: T1 = 1083369600000000; T2 = 1083974400000000; U1 = n6; U2 = n561" in ex
    assert '"src":"U1"' in ex and '"src":"U2"' in ex


BELIEF_Q = (
    "How many edge events started during the day [2004-05-14T00:00:00Z (1084492800000000 µs), "
    "2004-05-15T00:00:00Z (1084579200000000 µs)), as recorded at 2025-01-01T00:00:00.999999Z "
    "(1735689600999999 µs), before later corrections?"
)


def test_a_question_that_pins_its_belief_state_gets_its_worked_plans_pinned() -> None:
    # both Qwen2.5-Coder models left as_of_tt out on every "before" probe when shown unpinned plans only
    assert belief_time(BELIEF_Q) == 1735689600999999
    assert belief_time("How many events as of transaction time 1735689600000001 µs?") == 1735689600000001
    assert belief_time(Q) is None
    assert belief_time("How many events, according to the current records?") is None
    day = {"t_a": 1083369600000000, "t_b": 1083456000000000}
    ex = _example(
        {
            "steps": [{"id": "s1", "op": "graph_metric_timeseries", "args": {"metric": "edge_event_count",
                       "window": day, "stride": 86400000000}, "depends_on": []}],
            "answer_spec": {"kind": "count", "from": "s1.rows[0].value"},
        },
        "How many edge events started on the day [(1083369600000000 µs), (1083456000000000 µs))?",
    )  # fmt: skip
    task = PlanTask("t/1", BELIEF_Q, (), "count", "card", examples=(ex,))
    shown = first_messages(task, PromptLayout())[1]["content"]
    example = shown.split('<data name="worked_plan">\n', 1)[1].split("\n</data>", 1)[0]
    # the example's question gains the task's clause, and its step reads as believed then, by name
    assert (
        "as recorded at 2025-01-01T00:00:00.999999Z (1735689600999999 µs), before later corrections?"
        in example
    )
    assert "T3 = 1735689600999999" in example and '"as_of_tt":"T3"' in example
    (again,) = pin_to_question((ex,), BELIEF_Q)
    assert pin_to_question((again,), BELIEF_Q) == (again,)  # a pinned example is not pinned twice
    assert again.plan["steps"][0]["args"]["as_of_tt"] == 1735689600999999 and ex.plan == ex.plan
    assert "as_of_tt" not in ex.plan["steps"][0]["args"]  # the train example itself is unchanged
    # a question that pins nothing shows the example as it is
    plain = first_messages(PlanTask("t/2", Q, (), "count", "card", examples=(ex,)), PromptLayout())
    assert "as_of_tt" not in plain[1]["content"].split('<data name="worked_plan">', 1)[1].split("</data>")[0]
