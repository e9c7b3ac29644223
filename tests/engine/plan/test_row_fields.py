"""Row fields through a plan (engine/plan/fields.py): a field a step names that its operand's rows are known
to lack is refused before anything runs (``output_field``, the fields there are as ``legal``), and a plan
naming only fields that exist is not refused.

The rule rests on each operator's declared row model being the truth about its rows: checked here against
the real rows of every operator that lists rows, on random bi-temporal stores, on both backends."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.sampling import random_store, sample_args
from tgms.engine.errors import TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.registry import REGISTRY, load_all
from tgms.engine.plan.fields import model_row_fields
from tgms.engine.plan.verifier import VerifierConfig, verify

UIDS = [f"u{i}" for i in range(8)]


def test_every_row_of_every_operator_holds_only_its_models_fields(tmp_path: Path, backend: str) -> None:
    load_all()
    declared = {op: model_row_fields(spec.output) for op, spec in REGISTRY.items()}
    checked: dict[str, int] = {}
    store, tts = random_store(tmp_path / "s", backend, seed=4242)
    try:
        ctx = OpContext(store)
        rng = random.Random(7)
        for op, fields in sorted(declared.items()):
            if fields is None:
                continue
            for _ in range(12):
                args = sample_args(op, rng, UIDS, tts)
                try:
                    rows = call(ctx, op, args)["payload"]["rows"]
                except TGMSError:
                    continue
                for row in rows:
                    assert set(row) <= set(fields), (op, sorted(set(row) - set(fields)))
                    checked[op] = checked.get(op, 0) + 1
    finally:
        store.close()
    # every operator with a declared row model showed real rows
    assert set(checked) == {op for op, f in declared.items() if f is not None}, sorted(checked)


def _violations(steps: list[dict[str, Any]], answer: str) -> list[dict[str, Any]]:
    plan = {"plan_id": "p", "question": "q", "steps": steps, "answer_spec": {"kind": "rows", "from": answer}}
    report = verify(plan, None, VerifierConfig.without("cost", "temporal", "vacuous", "grounding"))
    return [v.to_dict() for v in report.violations]


def _step(sid: str, op: str, after: str | None = None, **args: Any) -> dict[str, Any]:
    """A plan step; ``input``, ``a`` and ``b`` given as a step id read that step's whole rows."""
    for k in ("input", "a", "b"):
        if isinstance(args.get(k), str):
            args[k] = {"$ref": f"{args[k]}.rows"}
    return {"id": sid, "op": op, "args": args, "depends_on": [after] if after else []}


YEARLY = _step("s1", "aggregate_events", group_by=["year"], aggregates=[{"fn": "count", "as": "n"}])
TOTALS = _step(
    "s2",
    "compute",
    "s1",
    fn="group",
    input="s1",
    by="year",
    aggregates=[{"fn": "sum", "field": "n", "as": "total"}],
)


def _derive(operand: str) -> dict[str, Any]:
    expr = {"op": "mul", "left": operand, "right": 2}
    return _step("s3", "compute", "s2", fn="derive", input="s2", expr=expr, **{"as": "twice"})


def test_a_misspelt_field_in_a_derive_over_a_group_is_refused_with_the_fields_there_are() -> None:
    found = _violations([YEARLY, TOTALS, _derive("totl")], "s3.rows")
    assert [(v["code"], v["step"], v["field"]) for v in found] == [("output_field", "s3", "args.expr.left")]
    assert found[0]["legal"] == ["year", "total"]
    assert "'totl'" in found[0]["message"] and "s2.rows" in found[0]["message"]
    assert _violations([YEARLY, TOTALS, _derive("total")], "s3.rows") == []


def test_fields_flow_through_derive_and_filter_and_reach_the_answer() -> None:
    keep = _step("s4", "compute", "s3", fn="filter", input="s3", field="twice", cmp=">", value=10)
    assert _violations([YEARLY, TOTALS, _derive("total"), keep], "s4.rows") == []
    bad = {**keep, "args": {**keep["args"], "field": "twise"}}
    found = _violations([YEARLY, TOTALS, _derive("total"), bad], "s4.rows")
    assert [(v["step"], v["field"], v["legal"]) for v in found] == [
        ("s4", "args.field", ["year", "total", "twice"])
    ]
    # a ref into the filter's rows is checked against the same fields
    found = _violations([YEARLY, TOTALS, _derive("total"), keep], "s4.rows[*].twise")
    assert [v["code"] for v in found] == ["answer_field"]


def test_aggregate_events_fields_and_a_group_key_that_is_not_there() -> None:
    by_sender = _step("s2", "compute", "s1", fn="group", input="s1", by="src")
    found = _violations([YEARLY, by_sender], "s2.rows")
    assert [(v["step"], v["field"], v["legal"]) for v in found] == [("s2", "args.by", ["year", "n"])]
    # an aggregate_events call whose keys are not literal: nothing is known, nothing is refused
    loose = {**YEARLY, "args": {"group_by": {"$ref": "s0.value"}}}
    assert not [v for v in _violations([loose, by_sender], "s2.rows") if v["code"] == "output_field"]


def test_next_event_rows_from_the_model_and_a_join_renames() -> None:
    replies = _step("s1", "next_event", a={}, match=[{"a": "dst", "b": "src"}, {"a": "src", "b": "dst"}])
    median = [{"fn": "median", "field": "delay"}]
    per_answerer = _step("s2", "compute", "s1", fn="group", input="s1", by="b_source", aggregates=median)
    found = [v for v in _violations([replies, per_answerer], "s2.rows") if v["code"] == "output_field"]
    assert [(v["field"], "b_src" in v["legal"]) for v in found] == [("args.by", True)]
    # a self-join: b's non-key fields renamed b_<name> where a has them; a key named on the wrong side
    pair = _step("s1", "aggregate_events", group_by=["pair"], aggregates=[{"fn": "first_t"}])
    on = [{"a": "src", "b": "dst"}, {"a": "dst", "b": "source"}]
    join = _step("s2", "compute", "s1", fn="join", a="s1", b="s1", on=on)
    found = _violations([pair, join], "s2.rows")
    assert [(v["field"], v["legal"]) for v in found] == [("args.on.1", ["src", "dst", "first_t"])]
    on[1]["b"] = "src"
    expr = {"op": "sub", "left": "b_first_t", "right": "first_t"}
    delay = _step("s3", "compute", "s2", fn="derive", input="s2", expr=expr, **{"as": "delay"})
    assert _violations([pair, join, delay], "s3.rows") == []
    expr["left"] = "b_src"  # b's key fields are not in the joined rows
    found = _violations([pair, join, delay], "s3.rows")
    assert [(v["field"], v["legal"]) for v in found] == [
        ("args.expr.left", ["src", "dst", "first_t", "b_first_t"])
    ]


def test_a_third_join_whose_renamed_field_is_taken_is_refused_before_it_runs() -> None:
    """The second join of a list with itself renames b's ``first_t`` to ``b_first_t``, which the first
    join's rows already hold: the run would stop there, so the verifier refuses it at ``prefix``; a prefix
    of its own passes (the run's refusal: tests/engine/operators/test_compute_rows.py)."""
    pair = _step("s1", "aggregate_events", group_by=["pair"], aggregates=[{"fn": "first_t"}])
    back = [{"a": "src", "b": "dst"}, {"a": "dst", "b": "src"}]
    first = _step("s2", "compute", "s1", fn="join", a="s1", b="s1", on=back)
    again = _step("s3", "compute", "s2", fn="join", a="s2", b="s1", on=["src", "dst"])
    again["depends_on"].append("s1")
    found = _violations([pair, first, again], "s3.rows")
    assert [(v["code"], v["step"], v["field"]) for v in found] == [("output_field", "s3", "args.prefix")]
    assert "'b_first_t'" in found[0]["message"] and "prefix" in found[0]["message"]
    prefixed = {**again, "args": {**again["args"], "prefix": "c_"}}
    assert _violations([pair, first, prefixed], "s3.rows") == []
    # an anti join keeps a's rows alone: nothing to collide
    anti = {**again, "args": {**again["args"], "how": "anti"}}
    assert _violations([pair, first, anti], "s3.rows") == []


def test_a_property_is_read_out_of_props_by_a_derive_and_elsewhere_refused_with_the_way() -> None:
    events = _step("s1", "list_events", window={"t_a": 0, "t_b": 10})
    take = _step("s2", "compute", "s1", fn="derive", input="s1", expr="props.rating", **{"as": "rating"})
    mean = [{"fn": "mean", "field": "rating"}]
    per_sender = _step("s3", "compute", "s2", fn="group", input="s2", by="src", aggregates=mean)
    assert _violations([events, take, per_sender], "s3.rows") == []
    # group reads top-level fields only: refused, with the derive that takes the value out
    direct = _step("s2", "compute", "s1", fn="group", input="s1", by="src",
                   aggregates=[{"fn": "mean", "field": "props.rating"}])  # fmt: skip
    found = _violations([events, direct], "s2.rows")
    assert [(v["step"], v["field"]) for v in found] == [("s2", "args.aggregates.0.field")]
    assert "derive (expr 'props.rating'" in found[0]["message"]
    # the event selection's prop.rating, written in a derive over rows: pointed at props.rating
    typo = {**take, "args": {**take["args"], "expr": "prop.rating"}}
    found = _violations([events, typo], "s2.rows")
    assert [(v["field"], "props.rating" in v["message"]) for v in found] == [("args.expr", True)]


def test_a_derive_expression_over_a_ref_is_checked_before_anything_runs() -> None:
    """The input is a ref (left out when the verifier checks literal arguments); the expression is not:
    an op that does not exist is refused at its own path, with the way to write it (the sixth set's
    planners met ``{op: mod}`` only at run time)."""
    events = _step("s1", "list_events", window={"t_a": 0, "t_b": 10})
    power = {"op": "add", "left": "vt_s", "right": {"op": "pow", "left": "vt_s", "right": 2}}
    bad = _step("s2", "compute", "s1", fn="derive", input="s1", expr=power, **{"as": "x"})
    found = _violations([events, bad], "s2.rows")
    assert [(v["code"], v["field"]) for v in found] == [("arg_value", "args.expr.right.op")]
    assert "(for pow: mul" in found[0]["message"]
    power["right"]["op"] = "mod"
    assert _violations([events, bad], "s2.rows") == []


def test_an_element_past_a_literal_page_is_refused_where_the_page_is_read() -> None:
    """The answer (and any reader but compute) reads a producer's page: ``rows[249]`` of a page of 100
    stopped the run (E_LIMIT); the verifier now says so, with the limit that reads it. compute reads the
    whole result, so the same ref there is fine."""
    events = _step("s1", "list_events", window={"t_a": 0, "t_b": 10})
    found = [v for v in _violations([events], "s1.rows[249]") if v["code"] != "answer_kind"]
    assert [(v["code"], v["field"]) for v in found] == [("answer_field", "answer_spec.from")]
    assert "limit >= 250 on step s1" in found[0]["message"]
    wide = {**events, "args": {**events["args"], "limit": 250}}
    assert not [v for v in _violations([wide], "s1.rows[249]") if v["code"] != "answer_kind"]
    history = _step("s2", "entity_history", "s1", uid={"$ref": "s1.rows[100].src"})
    found = [v for v in _violations([events, history], "s2.rows") if v["code"] == "output_field"]
    assert [(v["step"], v["field"]) for v in found] == [("s2", "args.uid")]
    whole = _step("s2", "compute", "s1", fn="max", input={"$ref": "s1.rows[100].vt_s"})
    assert not [v for v in _violations([events, whole], "s2.value") if v["code"] == "output_field"]


@pytest.mark.parametrize("field", ["rating", "props.rating"])
def test_rows_of_unknown_fields_are_never_refused(field: str) -> None:
    """Rows made from a literal list have no known fields: any name read from them passes the verifier."""
    top = _step("s1", "compute", fn="topk", input=[{"x": 1}], field="x", k=1)
    peak = _step("s2", "compute", "s1", fn="max", input="s1", field=field)
    assert not [v for v in _violations([top, peak], "s2.rows") if v["code"] == "output_field"]
