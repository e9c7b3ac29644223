"""count and value claims against the trace of :func:`base_plan`: supported, unsupported and unverifiable,
with and without ``from``; unit confusion; interval values compared by their endpoints."""

from __future__ import annotations

from typing import Any

import pytest

from tgms.engine.claims.answer import parse_answer
from tgms.engine.errors import SchemaError
from tgms.engine.execute.executor import Trace
from tgms.engine.operators.context import OpContext

from ._support import FOLLOWS, N_REACHED, S, claim, kinds, verdict_of, verdicts

DIFF_US = 5 * S  # s3: the arrival at n6 (6S) minus the arrival at n2 (1S), in microseconds


def test_base_trace_outcomes(base: Trace) -> None:
    """Pins what the claims below cite, so that no test passes against an empty or failed trace."""
    assert {r.id: r.status for r in base.steps} == {
        "s1": "ok", "s2": "ok", "s3": "ok", "s4": "ok", "s5": "error", "s6": "skipped",
        "s7": "ok", "s8": "ok", "s9": "ok",
    }  # fmt: skip
    assert not any(r.tainted for r in base.steps)
    assert base.payload("s1")["rows_total"] == N_REACHED
    assert base.payload("s2")["value"] == N_REACHED
    assert base.payload("s3")["value"] == DIFF_US
    assert base.payload("s7")["count"] == 1
    assert base.payload("s8")["value"] == "during"


# -- count ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "value"),
    [
        ("s1.rows_total", N_REACHED),
        ("s1.rows", N_REACHED),  # a count of a named list is its length
        ("s2.value", N_REACHED),  # a compute count
        ("s7.count", 1),  # an operator's count field
        ("s4.edges_total", 3),
    ],
)
def test_count_from_a_field_is_supported(base: Trace, ctx: OpContext, src: str, value: int) -> None:
    v = verdict_of(claim("count", src.split(".")[0], src=src, value=value), base, ctx)
    assert (v.verdict, v.tainted) == ("supported", False), v.reason
    assert src in v.reason


@pytest.mark.parametrize("delta", [-1, 1])
@pytest.mark.parametrize("src", ["s1.rows_total", "s1.rows", "s2.value", "s7.count"])
def test_count_off_by_one_is_unsupported(base: Trace, ctx: OpContext, src: str, delta: int) -> None:
    actual = 1 if src == "s7.count" else N_REACHED
    v = verdict_of(claim("count", src.split(".")[0], src=src, value=actual + delta), base, ctx)
    assert v.verdict == "unsupported", v.reason
    assert str(actual + delta) in v.reason


def test_from_accepts_a_ref_object(base: Trace, ctx: OpContext) -> None:
    c = claim("count", "s1", value=N_REACHED) | {"from": {"$ref": "s1.rows_total"}}
    assert verdict_of(c, base, ctx).verdict == "supported"


def test_count_without_from_is_checked_against_the_cited_numbers(base: Trace, ctx: OpContext) -> None:
    assert verdict_of(claim("count", "s1", value=N_REACHED), base, ctx).verdict == "supported"
    assert verdict_of(claim("count", "s2", value=N_REACHED), base, ctx).verdict == "supported"
    assert verdict_of(claim("count", "s1", "s7", value=1), base, ctx).verdict == "supported"  # s7.count
    v = verdict_of(claim("count", "s1", value=N_REACHED + 1), base, ctx)
    assert v.verdict == "unsupported"
    assert "none of the cited results" in v.reason


def test_count_found_only_in_an_uncited_step_is_unsupported(base: Trace, ctx: OpContext) -> None:
    """1 is s7's count, and no number of s1; 6 is s1's total, and no number of s9."""
    assert verdict_of(claim("count", "s7", value=1), base, ctx).verdict == "supported"
    assert verdict_of(claim("count", "s1", value=1), base, ctx).verdict == "unsupported"
    assert verdict_of(claim("count", "s9", value=N_REACHED), base, ctx).verdict == "unsupported"


@pytest.mark.parametrize(
    ("c", "why"),
    [
        (claim("count", value=N_REACHED), "cites no evidence"),
        (claim("count", "s99", value=N_REACHED), "not a step of the trace"),
        (claim("count", "s1", src="s2.value", value=N_REACHED), "does not cite"),
        (claim("count", "s5", value=0), "did not succeed (error)"),
        (claim("count", "s6", src="s6.value", value=0), "did not succeed (skipped)"),
        (claim("count", "s1", "s5", src="s1.rows_total", value=N_REACHED), "did not succeed"),
        (claim("count", "s1", src="s1", value=N_REACHED), "not a ref"),
    ],
)
def test_count_unverifiable(base: Trace, ctx: OpContext, c: dict[str, Any], why: str) -> None:
    v = verdict_of(c, base, ctx)
    assert v.verdict == "unverifiable", v.reason
    assert why in v.reason


def test_from_naming_a_missing_field_is_unsupported(base: Trace, ctx: OpContext) -> None:
    """A ref that does not resolve in the cited result contradicts the claim (the field is not there)."""
    v = verdict_of(claim("count", "s1", src="s1.count", value=N_REACHED), base, ctx)
    assert v.verdict == "unsupported"
    assert "does not resolve" in v.reason


def test_count_claims_must_be_integers() -> None:
    for bad in (6.0, True, "6"):
        with pytest.raises(SchemaError) as exc:
            parse_answer({"text": "", "claims": [claim("count", "s1", value=bad)]})
        assert any("integer" in p for p in exc.value.details["problems"])


# -- value ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "value"),
    [
        ("s3.value", DIFF_US),
        ("s3.value", float(DIFF_US)),  # 5000000.0 is the same number
        ("s1.rows[0].uid", "n2"),
        ("s1.rows[5].earliest_arrival", 6 * S),
        ("s4.rows[0].props.score", 20),
        ("s8.value", "during"),
        ("s4.truncated", False),
        ("s1.rows[0]", {"earliest_arrival": S, "uid": "n2"}),  # objects by canonical JSON
    ],
)
def test_value_from_a_field_is_supported(base: Trace, ctx: OpContext, src: str, value: Any) -> None:
    v = verdict_of(claim("value", src.split(".")[0], src=src, value=value), base, ctx)
    assert v.verdict == "supported", v.reason


@pytest.mark.parametrize(
    ("src", "value"),
    [
        ("s3.value", DIFF_US + 1),
        ("s1.rows[0].uid", "n7"),
        ("s4.rows[0].props.score", 2),  # the corrected-away belief
        ("s8.value", "contains"),  # the inverse relation
        ("s4.truncated", True),
        ("s4.truncated", 0),  # a boolean is not a number
        ("s1.rows[0]", {"earliest_arrival": S, "uid": "n7"}),
    ],
)
def test_value_mismatch_is_unsupported(base: Trace, ctx: OpContext, src: str, value: Any) -> None:
    v = verdict_of(claim("value", src.split(".")[0], src=src, value=value), base, ctx)
    assert v.verdict == "unsupported", v.reason


@pytest.mark.parametrize("claimed", [DIFF_US // 1000, DIFF_US / 1000, DIFF_US // S, DIFF_US * 1000])
def test_unit_confusion_is_unsupported(base: Trace, ctx: OpContext, claimed: float) -> None:
    """The duration is 5,000,000 µs: claiming it in ms (5000), s (5) or ns is a wrong number."""
    assert verdict_of(claim("value", "s3", src="s3.value", value=claimed), base, ctx).verdict == (
        "unsupported"
    )
    assert verdict_of(claim("value", "s3", value=claimed), base, ctx).verdict == "unsupported"
    assert verdict_of(claim("value", "s3", value=DIFF_US), base, ctx).verdict == "supported"


def test_value_without_from_is_searched_in_the_cited_results(base: Trace, ctx: OpContext) -> None:
    assert kinds(
        verdicts(
            {
                "text": "",
                "claims": [
                    claim("value", "s1", cid="c1", value="n5"),
                    claim("value", "s1", cid="c2", value=4 * S),
                    claim("value", "s8", cid="c3", value="during"),
                    claim("value", "s1", cid="c4", value="n1"),  # only in s1's args_echo
                    claim("value", "s1", cid="c5", value=3 * S),
                ],
            },
            base,
            ctx,
        )
    ) == ["supported", "supported", "supported", "unsupported", "unsupported"]


# -- intervals --------------------------------------------------------------------------------------------

EDGE0 = list(FOLLOWS)  # s4.edges[0]: n2 -follows-> n7


@pytest.mark.parametrize(
    "claimed",
    [EDGE0, {"vt_s": FOLLOWS[0], "vt_e": FOLLOWS[1]}, {"t_a": FOLLOWS[0], "t_b": FOLLOWS[1]}],
)
def test_interval_values_compare_by_endpoints(base: Trace, ctx: OpContext, claimed: Any) -> None:
    """``[s, e]`` against a row ``{vt_s, vt_e, ...}``: the same interval whatever its spelling."""
    assert verdict_of(claim("value", "s4", src="s4.edges[0]", value=claimed), base, ctx).verdict == (
        "supported"
    )
    assert verdict_of(claim("value", "s4", value=claimed), base, ctx).verdict == "supported"


@pytest.mark.parametrize(
    "claimed",
    [
        [FOLLOWS[0], FOLLOWS[1] + 1],
        [FOLLOWS[0] - 1, FOLLOWS[1]],
        [FOLLOWS[1], FOLLOWS[0]],  # reversed: not an interval
        {"vt_s": S, "vt_e": S + 1},  # another edge of s4
    ],
)
def test_interval_with_other_endpoints_is_unsupported(base: Trace, ctx: OpContext, claimed: Any) -> None:
    assert verdict_of(claim("value", "s4", src="s4.edges[0]", value=claimed), base, ctx).verdict == (
        "unsupported"
    )


def test_interval_without_from_needs_a_cited_interval(base: Trace, ctx: OpContext) -> None:
    assert verdict_of(claim("value", "s4", value=[S, S + 1]), base, ctx).verdict == "supported"  # edges[1]
    assert verdict_of(claim("value", "s1", value=[S, S + 1]), base, ctx).verdict == "unsupported"
    assert verdict_of(claim("value", "s4", value=[S, S + 2]), base, ctx).verdict == "unsupported"


def test_a_row_with_a_falsified_field_is_not_the_same_value(base: Trace, ctx: OpContext) -> None:
    row = dict(base.payload("s4")["edges"][0])
    row["dst"] = "n5"  # the edge goes to n7
    assert verdict_of(claim("value", "s4", src="s4.edges[0]", value=row), base, ctx).verdict == (
        "unsupported"
    )
