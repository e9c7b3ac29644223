"""Units in plans (issue 24): what each operator output measures, how compute combines units, which answer
kinds fit which units, and the same units in the claim verifier and the mechanical reporter.

The units check needs no store (units come from the registry), so most plans here are verified without
one; the claim and reporter tests run on the verifier tests' small store.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.engine.plan._plans import W, plan, reach, ref, step
from tgms.engine.claims.reporter import mechanical_answer
from tgms.engine.claims.verifier import verify_claims
from tgms.engine.execute.executor import execute
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.registry import all_operators
from tgms.engine.operators.units import FIELD_UNITS, Unit, UnitClash, arith, model_tree, reduce_unit
from tgms.engine.plan.model import Violation, build_plan
from tgms.engine.plan.refs import Ref
from tgms.engine.plan.units import plan_units, ref_units
from tgms.engine.plan.verifier import VerifierConfig, verify

UNITS = VerifierConfig(checks=frozenset({"units"}))
EVENTS = step("s1", "list_events", window=dict(W))


def unit_violations(raw: dict[str, Any]) -> list[Violation]:
    return verify(raw, None, UNITS).violations


def one_unit(raw: dict[str, Any], code: str = "unit") -> Violation:
    found = unit_violations(raw)
    assert [v.code for v in found] == [code], [v.to_dict() for v in found]
    return found[0]


def ok(raw: dict[str, Any]) -> None:
    assert unit_violations(raw) == [], [v.to_dict() for v in unit_violations(raw)]


def compute(sid: str, deps: tuple[str, ...], **args: Any) -> dict[str, Any]:
    return step(sid, "compute", deps, **args)


# -- the issue's plan ----------------------------------------------------------------------------------------


def test_the_issue_plan_summing_valid_time_ends_for_a_count_is_refused() -> None:
    raw = plan(
        step("s1", "snapshot_subgraph", hops=3, seeds=["a"], t_valid=1500),
        compute("s2", ("s1",), fn="sum", field="vt_e", input=ref("s1.rows")),
        answer={"kind": "count", "from": "s2.value"},
    )
    v = one_unit(raw)
    assert (v.step, v.field) == ("s2", "args.field")
    assert "sum of time points" in v.message
    assert v.legal["found"] == "time" and "count" in v.legal["wanted"] and "time" not in v.legal["wanted"]
    assert any(u.startswith("count") for u in v.legal["use"])  # what would give a count instead


def test_an_interval_taken_from_a_max_is_refused_with_the_rows_that_hold_intervals() -> None:
    raw = plan(EVENTS, compute("s2", ("s1",), fn="max", field="vt_s", input=ref("s1.rows")),
               answer={"kind": "interval", "from": "s2.value"})  # fmt: skip
    v = one_unit(raw, "answer_unit")
    assert v.legal["found"] == "time" and v.field == "answer_spec.kind"
    assert "a time point" in v.message


def test_a_count_answered_from_a_timestamp_field_names_the_count_fields() -> None:
    v = one_unit(plan(EVENTS, answer={"kind": "count", "from": "s1.rows[0].vt_s"}), "answer_unit")
    assert v.legal["found"] == "time"
    assert "s1.rows_total" in v.legal["use"] and "compute count over a list" in v.legal["use"]


def test_violations_of_the_units_group_can_be_switched_off() -> None:
    raw = plan(EVENTS, answer={"kind": "count", "from": "s1.rows[0].vt_s"})
    assert verify(raw, None, VerifierConfig.without("units")).violations == []


# -- compute's combination rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "x", "y", "out"),
    [
        ("sub", Unit.TIME, Unit.TIME, Unit.DURATION),
        ("sub", Unit.TIME, Unit.DURATION, Unit.TIME),
        ("add", Unit.TIME, Unit.DURATION, Unit.TIME),
        ("add", Unit.COUNT, Unit.COUNT, Unit.COUNT),
        ("div", Unit.DURATION, Unit.COUNT, Unit.DURATION),
        ("div", Unit.COUNT, Unit.COUNT, Unit.RATIO),
        ("div", Unit.DURATION, Unit.DURATION, Unit.RATIO),
        ("mul", Unit.DURATION, Unit.COUNT, Unit.DURATION),
        ("add", Unit.TIME, None, Unit.TIME),  # t + a literal number of µs
        ("add", Unit.VALUE, Unit.COUNT, Unit.VALUE),
    ],
)
def test_arith(op: str, x: Unit | None, y: Unit | None, out: Unit) -> None:
    assert arith(op, x, y) is out


@pytest.mark.parametrize(
    ("op", "x", "y"),
    [
        ("add", Unit.TIME, Unit.TIME),
        ("sub", Unit.DURATION, Unit.TIME),
        ("sub", Unit.TIME, Unit.COUNT),
        ("mul", Unit.TIME, Unit.COUNT),
        ("div", Unit.COUNT, Unit.TIME),
        ("add", Unit.ID, Unit.ID),
        ("add", Unit.DURATION, Unit.COUNT),
    ],
)
def test_arith_refuses(op: str, x: Unit, y: Unit) -> None:
    with pytest.raises(UnitClash) as exc:
        arith(op, x, y)
    assert exc.value.use  # names the combinations that do exist


@pytest.mark.parametrize(
    ("fn", "elem", "out"),
    [
        ("count", Unit.TIME, Unit.COUNT),
        ("sum", Unit.COUNT, Unit.COUNT),
        ("sum", Unit.DURATION, Unit.DURATION),
        ("mean", Unit.TIME, Unit.TIME),
        ("mean", Unit.COUNT, Unit.RATIO),
        ("min", Unit.TIME, Unit.TIME),
        ("median", Unit.DURATION, Unit.DURATION),
        ("max", Unit.ID, Unit.ID),
    ],
)
def test_reduce_unit(fn: str, elem: Unit, out: Unit) -> None:
    assert reduce_unit(fn, elem) is out


@pytest.mark.parametrize(("fn", "elem"), [("sum", Unit.TIME), ("sum", Unit.ID), ("mean", Unit.ID)])
def test_reduce_unit_refuses(fn: str, elem: Unit) -> None:
    with pytest.raises(UnitClash):
        reduce_unit(fn, elem)


def _units_of(raw: dict[str, Any], text: str) -> Unit | None:
    return ref_units(plan_units(raw), Ref.parse(text)).unit


def test_diff_of_two_times_is_a_duration_and_answers_a_value() -> None:
    raw = plan(
        EVENTS,
        compute("s2", ("s1",), fn="min", field="vt_s", input=ref("s1.rows")),
        compute("s3", ("s1",), fn="max", field="vt_s", input=ref("s1.rows")),
        compute("s4", ("s2", "s3"), fn="diff", a=ref("s3.value"), b=ref("s2.value")),
        compute("s5", ("s4", "s1"), fn="ratio", a=ref("s4.value"), b=ref("s1.rows_total")),
        answer={"kind": "value", "from": "s5.value"},
    )
    ok(raw)
    assert _units_of(raw, "s4.value") is Unit.DURATION
    assert _units_of(raw, "s5.value") is Unit.DURATION  # duration ÷ count: the mean gap


def test_a_duration_answered_as_a_count_is_refused() -> None:
    raw = plan(
        EVENTS,
        compute("s2", ("s1",), fn="min", input=ref("s1.rows[*].vt_s")),
        compute("s3", ("s1",), fn="max", input=ref("s1.rows[*].vt_s")),
        compute("s4", ("s2", "s3"), fn="diff", input=[ref("s3.value"), ref("s2.value")]),
        answer={"kind": "count", "from": "s4.value"},
    )
    v = one_unit(raw, "answer_unit")
    assert v.legal["found"] == "duration" and "s4.rows_total" in v.legal["use"]


def test_a_time_added_to_a_time_in_derive_is_refused() -> None:
    raw = plan(EVENTS, compute("s2", ("s1",), fn="derive", input=ref("s1.rows"), as_="x",
                               expr={"op": "add", "left": "vt_s", "right": "vt_e"}))  # fmt: skip
    raw["steps"][1]["args"]["as"] = raw["steps"][1]["args"].pop("as_")
    v = one_unit(raw)
    assert v.field == "args.expr" and "time point added to a time point" in v.message


def test_derive_gives_its_new_field_a_unit() -> None:
    raw = plan(EVENTS, compute("s2", ("s1",), fn="derive", input=ref("s1.rows"),
                               expr={"op": "sub", "left": "vt_e", "right": "vt_s"}),
               answer={"kind": "count", "from": "s2.rows[0].span"})  # fmt: skip
    raw["steps"][1]["args"]["as"] = "span"
    v = one_unit(raw, "answer_unit")
    assert v.legal["found"] == "duration"


def test_a_derived_comparison_is_a_boolean_and_abs_keeps_the_unit() -> None:
    for expr, unit in (
        ({"op": "lt", "left": "vt_s", "right": "vt_e"}, "boolean"),
        ({"op": "and", "left": {"op": "ge", "left": "vt_s", "right": 5}, "right": {"op": "not", "arg": "x"}},
         "boolean"),
        ({"op": "abs", "arg": {"op": "sub", "left": "vt_e", "right": "vt_s"}}, "duration"),
        ({"op": "max", "left": "vt_s", "right": "vt_e"}, "time"),
        # a time point's remainder by a day is the time of day: a duration
        ({"op": "mod", "left": "vt_s", "right": 86_400_000_000}, "duration"),
        ({"op": "coalesce", "left": "vt_e", "right": "vt_s"}, "time"),
        ({"op": "when", "left": {"op": "lt", "left": "vt_s", "right": 5}, "right": "vt_s"}, "time"),
    ):  # fmt: skip
        raw = plan(EVENTS, compute("s2", ("s1",), fn="derive", input=ref("s1.rows"), expr=expr),
                   answer={"kind": "count", "from": "s2.rows[0].y"})  # fmt: skip
        raw["steps"][1]["args"]["as"] = "y"
        v = one_unit(raw, "answer_unit")
        assert v.legal["found"] == unit, expr


def test_a_coalesce_of_a_time_with_a_duration_is_refused() -> None:
    span = {"op": "sub", "left": "vt_e", "right": "vt_s"}
    raw = plan(EVENTS, compute("s2", ("s1",), fn="derive", input=ref("s1.rows"), as_="x",
                               expr={"op": "coalesce", "left": "vt_s", "right": span}))  # fmt: skip
    raw["steps"][1]["args"]["as"] = raw["steps"][1]["args"].pop("as_")
    assert one_unit(raw).field == "args.expr"


def test_a_derived_comparison_of_a_time_with_a_duration_is_refused() -> None:
    span = {"op": "sub", "left": "vt_e", "right": "vt_s"}
    raw = plan(EVENTS, compute("s2", ("s1",), fn="derive", input=ref("s1.rows"), as_="x",
                               expr={"op": "gt", "left": "vt_s", "right": span}))  # fmt: skip
    raw["steps"][1]["args"]["as"] = raw["steps"][1]["args"].pop("as_")
    v = one_unit(raw)
    assert v.field == "args.expr" and "time point (µs) compared with a duration" in v.message, v.message


def test_compare_and_add_units() -> None:
    # a time point compared with a count is refused; time + duration is a time
    raw = plan(reach(), compute("s2", ("s1",), fn="compare", a=ref("s1.rows[0].earliest_arrival"),
                                b=ref("s1.rows_total"), cmp=">"))  # fmt: skip
    v = one_unit(raw)
    assert v.field == "args.b" and "compared with" in v.message, v.message
    raw = plan(reach(), compute("s2", ("s1",), fn="add", a=ref("s1.rows[0].earliest_arrival"), b=86_400),
               answer={"kind": "count", "from": "s2.value"})  # fmt: skip
    assert one_unit(raw, "answer_unit").legal["found"] == "time"


def test_a_filter_comparing_a_time_with_a_count_is_refused() -> None:
    raw = plan(reach(), compute("s2", ("s1",), fn="filter", input=ref("s1.rows"), field="earliest_arrival",
                                cmp="<=", value=ref("s1.rows_total")))  # fmt: skip
    v = one_unit(raw)
    assert v.field == "args.value" and v.legal == {"found": "count", "wanted": ["time"], "use": []}


def test_a_join_on_keys_of_different_units_is_refused() -> None:
    raw = plan(EVENTS, reach("s2"),
               compute("s3", ("s1", "s2"), fn="join", a=ref("s1.rows"), b=ref("s2.rows"),
                       on={"a": "vt_s", "b": "uid"}))  # fmt: skip
    assert one_unit(raw).field == "args.on"


def test_a_join_keeps_both_sides_units() -> None:
    raw = plan(EVENTS, reach("s2"),
               compute("s3", ("s1", "s2"), fn="join", a=ref("s1.rows"), b=ref("s2.rows"),
                       on={"a": "dst", "b": "uid"}),
               answer={"kind": "value", "from": "s3.rows[0].earliest_arrival"})  # fmt: skip
    ok(raw)
    assert _units_of(raw, "s3.rows[0].earliest_arrival") is Unit.TIME
    assert _units_of(raw, "s3.rows[0].src") is Unit.ID


def test_a_sum_or_mean_of_booleans_is_refused_with_number_as_the_way() -> None:
    """A sum skips what is not a number, so a sum of a derived comparison answered 0 (the fifth set's
    vc01 draft): refused at the aggregate's field, pointing at number(...), which makes 1 and 0."""
    flag = {"op": "ge", "left": "vt_s", "right": 5}
    derived = compute("s2", ("s1",), fn="derive", input=ref("s1.rows"), expr=flag)
    derived["args"]["as"] = "late"
    for fn in ("sum", "mean"):
        raw = plan(EVENTS, derived, compute("s3", ("s2",), fn="group", input=ref("s2.rows"), by="src",
                                            aggregates=[{"fn": fn, "field": "late"}]))  # fmt: skip
        v = one_unit(raw)
        assert v.field == "args.aggregates.0.field" and v.legal["found"] == "boolean", v.to_dict()
        assert any("number" in u for u in v.legal["use"]), v.legal
    counted = copy.deepcopy(derived)
    counted["args"]["expr"] = {"op": "number", "arg": flag}
    ok(plan(EVENTS, counted, compute("s3", ("s2",), fn="group", input=ref("s2.rows"), by="src",
                                     aggregates=[{"fn": "sum", "field": "late"}])))  # fmt: skip


def test_an_anti_join_keeps_a_s_units_and_takes_none_of_b_s() -> None:
    """An anti join's rows are a's rows without a match: a's fields keep their units, b's are not there
    (before, b's fields were added as if joined)."""
    raw = plan(EVENTS, reach("s2"),
               compute("s3", ("s1", "s2"), fn="join", a=ref("s1.rows"), b=ref("s2.rows"),
                       on={"a": "dst", "b": "uid"}, how="anti"),
               answer={"kind": "value", "from": "s3.rows[0].vt_s"})  # fmt: skip
    ok(raw)
    assert _units_of(raw, "s3.rows[0].vt_s") is Unit.TIME
    assert _units_of(raw, "s3.rows[0].src") is Unit.ID
    assert _units_of(raw, "s3.rows[0].earliest_arrival") is not Unit.TIME


def test_a_literal_list_of_counts_sums_to_a_count_and_mixed_time_units_are_refused() -> None:
    good = plan(reach(), reach("s2"),
                compute("s3", ("s1", "s2"), fn="sum", input=[ref("s1.rows_total"), ref("s2.rows_total")]),
                answer={"kind": "count", "from": "s3.value"})  # fmt: skip
    ok(good)
    mixed = [ref("s1.rows_total"), ref("s1.rows[0].earliest_arrival")]
    bad = plan(reach(), compute("s2", ("s1",), fn="max", input=mixed))
    assert one_unit(bad).field == "args.input"


def test_interval_relation_refuses_a_count_operand() -> None:
    raw = plan(EVENTS, compute("s2", ("s1",), fn="interval_relation", a=ref("s1.rows[0]"),
                               b=ref("s1.rows_total")))  # fmt: skip
    assert one_unit(raw).field == "args.b"


# -- arguments passed through refs -----------------------------------------------------------------------


def test_a_count_passed_as_a_time_argument_is_refused() -> None:
    raw = plan(reach(), step("s2", "snapshot_subgraph", ("s1",), seeds=["a"], t_valid=ref("s1.rows_total")))
    v = one_unit(raw)
    assert v.field == "args.t_valid" and v.legal["wanted"] == ["time"]
    assert "s1.rows[*].earliest_arrival" in v.legal["use"]  # the times s1 does produce


def test_a_where_value_must_measure_what_its_field_does() -> None:
    raw = plan(reach(), step("s2", "list_events", ("s1",), where=[
        {"field": "t", "op": "ge", "value": ref("s1.rows_total")}]))  # fmt: skip
    assert one_unit(raw).field == "args.where.0.value"
    fine = plan(reach(), step("s2", "list_events", ("s1",), where=[
        {"field": "t", "op": "ge", "value": ref("s1.rows[0].earliest_arrival")}]))  # fmt: skip
    ok(fine)


def test_uids_passed_through_refs_are_identifiers() -> None:
    ok(plan(reach(), step("s2", "snapshot_subgraph", ("s1",), seeds=ref("s1.rows[*].uid"), t_valid=1500)))
    bad = plan(reach(), step("s2", "snapshot_subgraph", ("s1",), seeds=ref("s1.rows[*].earliest_arrival"),
                             t_valid=1500))  # fmt: skip
    assert one_unit(bad).field == "args.seeds"


# -- aggregate_events and graph_metric_timeseries: units from their arguments ------------------------------


def test_aggregate_events_units_follow_their_aggregates() -> None:
    agg = step("s1", "aggregate_events", group_by=["src"], aggregates=[
        {"fn": "count"}, {"fn": "first_t"}, {"fn": "max_gap"}])  # fmt: skip
    trees = plan_units(plan(agg))
    row = trees["s1"].member("rows").item
    assert row is not None
    assert [row.member(n).unit for n in ("src", "count", "first_t", "max_gap")] == [
        Unit.ID, Unit.COUNT, Unit.TIME, Unit.DURATION
    ]  # fmt: skip
    v = one_unit(plan(agg, answer={"kind": "count", "from": "s1.rows[0].first_t"}), "answer_unit")
    assert v.legal["found"] == "time" and "s1.rows[*].count" in v.legal["use"]


def test_aggregate_events_refuses_a_sum_of_times() -> None:
    v = one_unit(plan(step("s1", "aggregate_events", aggregates=[{"fn": "sum", "field": "t"}])))
    assert v.field == "args.aggregates.0.field"


def test_metric_values_are_counts_or_ratios() -> None:
    for metric, unit in (("node_count", Unit.COUNT), ("reciprocity", Unit.RATIO)):
        raw = plan(step("s1", "graph_metric_timeseries", metric=metric, window=dict(W), stride=100))
        assert _units_of(raw, "s1.rows[0].value") is unit


# -- answer kinds ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "source"),
    [
        ("count", "s1.rows_total"),
        ("count", "s1.rows"),  # a list is counted
        ("value", "s1.rows[0].vt_s"),  # a time is a number a question may ask for
        ("value", "s1.rows[0].src"),  # a value is any scalar the question asks for
        ("interval", "s1.rows[0]"),  # a row with vt_s, vt_e
        ("entity", "s1.rows[0].src"),
        ("entity_set", "s1.rows[*].dst"),
        ("rows", "s1.rows"),
    ],
)
def test_answer_kinds_that_fit(kind: str, source: str) -> None:
    ok(plan(EVENTS, answer={"kind": kind, "from": source}))


@pytest.mark.parametrize(
    ("kind", "source", "found"),
    [
        ("count", "s1.rows[0].vt_s", "time"),
        ("entity", "s1.rows_total", "count"),
        ("entity_set", "s1.rows[*].vt_s", "list of time"),
        ("interval", "s1.rows[*].src", "list of id"),
    ],
)
def test_answer_kinds_that_do_not_fit(kind: str, source: str, found: str) -> None:
    assert (
        one_unit(plan(EVENTS, answer={"kind": kind, "from": source}), "answer_unit").legal["found"] == found
    )


def test_no_double_finding_when_the_shape_is_already_wrong() -> None:
    raw = plan(reach(), answer={"kind": "boolean", "from": "s1.rows_total"})
    assert [v.code for v in verify(raw, None).violations] == ["answer_kind"]


# -- the declarations ------------------------------------------------------------------------------------


def test_every_declared_time_and_count_field_of_every_operator_has_the_right_json_type() -> None:
    """A field the table calls a time point or a count is an integer in its output model (a name that
    meant something else somewhere would show here)."""
    for spec in all_operators():
        props = spec.output.model_json_schema(mode="serialization")
        tree = model_tree(spec.output)
        for name, sub in tree.fields or ():
            if sub.unit in (Unit.TIME, Unit.COUNT):
                typ = props["properties"][name]
                assert "integer" in str(typ), (spec.name, name, typ)
    assert FIELD_UNITS["earliest_arrival"] is Unit.TIME


def test_the_manuals_show_the_units() -> None:
    from tgms.engine.operators.schemas import planner_manual
    from tgms.models.manual import operator_manual

    full = planner_manual()
    assert "- `rows_total`: int (count)" in full
    assert "earliest_arrival time" in full and "Units: count → count" in full
    compact = operator_manual()
    assert "UNITS." in compact and "time − time = duration" in compact


# -- the same units after execution: claims and the mechanical reporter --------------------------------------


def test_a_count_claim_against_a_time_point_is_unsupported_even_when_the_number_matches(
    plan_ctx: OpContext,
) -> None:
    raw = plan(reach(), answer={"kind": "value", "from": "s1.rows[0].earliest_arrival"})
    trace = execute(build_plan(raw), plan_ctx)
    t = trace.payload("s1")["rows"][0]["earliest_arrival"]  # type: ignore[index]
    claim = {
        "id": "c1",
        "type": "count",
        "value": t,
        "evidence": ["s1"],
        "from": "s1.rows[0].earliest_arrival",
    }
    [v] = verify_claims({"text": f"{t}", "claims": [claim]}, trace, plan_ctx)
    assert v.verdict == "unsupported" and "time point" in v.reason
    value_claim = dict(claim, type="value")
    [v] = verify_claims({"text": f"{t}", "claims": [value_claim]}, trace, plan_ctx)
    assert v.verdict == "supported"


def test_the_mechanical_reporter_gives_no_count_from_a_time(plan_ctx: OpContext) -> None:
    raw = plan(reach(), answer={"kind": "count", "from": "s1.rows[0].earliest_arrival"})
    ans = mechanical_answer(execute(build_plan(raw), plan_ctx))
    assert "answer" not in ans and ans["claims"] == [] and "a time point" in ans["text"]
    raw = plan(reach(), answer={"kind": "count", "from": "s1.rows_total"})
    assert mechanical_answer(execute(build_plan(raw), plan_ctx))["answer"]["kind"] == "count"
