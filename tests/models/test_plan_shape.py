"""models/plan_shape.py: a bare step is wrapped and arguments beside op move into args; nothing else."""

from __future__ import annotations

from tgms.models.plan_shape import reshape

WINDOW = {"t_a": 1, "t_b": 9}


def test_a_bare_step_is_wrapped_with_the_plan_keys_kept_at_the_top() -> None:
    raw = {"id": "s1", "op": "list_events", "args": {"window": WINDOW}, "answer_spec": {"kind": "count"},
           "question": "q"}  # fmt: skip
    plan, notes = reshape(raw)
    assert plan == {"steps": [{"id": "s1", "op": "list_events", "args": {"window": WINDOW}}],
                    "answer_spec": {"kind": "count"}, "question": "q"}  # fmt: skip
    assert notes == ["the reply was one step: wrapped in steps"]


def test_arguments_beside_op_move_into_args_and_nothing_else_does() -> None:
    step = {"id": "s1", "op": "aggregate_events", "aggregates": [{"fn": "count", "as": "n"}],
            "window": {"t_a": 5, "t_b": 6}, "args": {"window": WINDOW}, "colour": "red",
            "depends_on": []}  # fmt: skip
    plan, notes = reshape({"steps": [step], "answer_spec": {}})
    (got,) = plan["steps"]
    # args' own window wins; colour is no argument of the operator: left for the verifier to refuse
    assert got["args"] == {"window": WINDOW, "aggregates": [{"fn": "count", "as": "n"}]}
    assert got["window"] == {"t_a": 5, "t_b": 6} and got["colour"] == "red"
    assert notes == ["steps[0]: moved aggregates into args"]


def test_a_plan_in_shape_an_unknown_operator_and_odd_values_are_left_alone() -> None:
    good = {"steps": [{"id": "s1", "op": "list_events", "args": {"window": WINDOW}}], "answer_spec": {}}
    assert reshape(good) == (good, [])
    odd = {"steps": [{"id": "s1", "op": "no_such_op", "window": WINDOW}, "s2", 3]}
    assert reshape(odd) == (odd, [])
    not_args = {"steps": [{"id": "s1", "op": "list_events", "args": [1], "window": WINDOW}]}
    assert reshape(not_args) == (not_args, [])
    # compute's `as` is spelled as the call spells it
    plan, _ = reshape({"steps": [{"id": "s1", "op": "compute", "fn": "derive", "as": "x", "args": {}}]})
    assert plan["steps"][0]["args"] == {"fn": "derive", "as": "x"}
