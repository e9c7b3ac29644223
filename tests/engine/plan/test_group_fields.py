"""A compute group step's rows hold its key fields and aggregate names only (Traits.row_fields): a plan
reading one of them verifies, with the units the group gives it; a plan reading any other field is refused
before anything runs (issue 27)."""

from __future__ import annotations

from typing import Any

from tests.engine.plan._plans import W, plan, ref, step
from tgms.engine.operators.units import Unit
from tgms.engine.plan.refs import Ref
from tgms.engine.plan.units import plan_units, ref_units
from tgms.engine.plan.verifier import verify

EVENTS = step("s1", "list_events", window=dict(W))
DELAY = {"op": "sub", "left": "vt_e", "right": "vt_s"}
AGGS = [{"fn": "median", "field": "delay"}, {"fn": "count_distinct", "field": "dst", "as": "peers"},
        {"fn": "quantile", "field": "vt_s", "q": 0.9}]  # fmt: skip


def _plan(answer: str, later: dict[str, Any] | None = None) -> dict[str, Any]:
    derive = step("s2", "compute", ("s1",), fn="derive", input=ref("s1.rows"), expr=DELAY)
    derive["args"]["as"] = "delay"
    group = step("s3", "compute", ("s2",), fn="group", input=ref("s2.rows"), by="src", aggregates=AGGS)
    steps = [EVENTS, derive, group, *([later] if later else [])]
    return plan(*steps, answer={"kind": "value", "from": answer})


def _codes(raw: dict[str, Any]) -> list[str]:
    return [v.code for v in verify(raw).violations]


def test_a_plan_reading_a_group_output_field_verifies_with_its_unit() -> None:
    raw = _plan("s3.rows[0].median_delay")
    assert _codes(raw) == []
    later = step("s4", "compute", ("s3",), fn="max", input=ref("s3.rows[*].median_delay"))
    assert _codes(_plan("s4.value", later)) == []
    trees = plan_units(raw)
    unit = {f: ref_units(trees, Ref.parse(f"s3.rows[0].{f}")).unit for f in ("src", "median_delay", "peers",
                                                                           "quantile_vt_s")}  # fmt: skip
    assert unit == {
        "src": Unit.ID,
        "median_delay": Unit.DURATION,
        "peers": Unit.COUNT,
        "quantile_vt_s": Unit.TIME,
    }


def test_a_plan_reading_a_field_the_group_rows_lack_is_refused() -> None:
    report = verify(_plan("s3.rows[0].delay"))  # the rows' field before grouping: gone
    (v,) = report.violations
    assert v.code == "answer_field" and "has no field 'delay'" in v.message
    assert v.legal == ["src", "median_delay", "peers", "quantile_vt_s"]
    later = step("s4", "compute", ("s3",), fn="max", input=ref("s3.rows[*].median"))
    (v,) = verify(_plan("s4.value", later)).violations
    assert (v.code, v.step, v.field) == ("output_field", "s4", "args.input")
    assert "median_delay" in v.legal


def test_a_sum_of_time_points_in_a_group_is_refused_at_the_aggregate() -> None:
    raw = _plan("s3.rows[0].src")
    raw["steps"][2]["args"]["aggregates"] = [{"fn": "sum", "field": "vt_s"}]
    (v,) = verify(raw).violations
    assert (v.code, v.field) == ("unit", "args.aggregates.0.field") and "sum of time points" in v.message
