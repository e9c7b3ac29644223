"""The ``$ref`` language (engine/plan/refs.py): parsing, printing, and reading a ref out of a payload.

A ref is ``STEP.FIELD`` then ``.name`` / ``[i]`` / at most one ``[*]``. ``resolve`` reads it from a
producer's paged payload: a path that is not there is ``E_UPSTREAM`` (with the legal fields), an index
past a cut page is ``E_LIMIT``, and the read is *truncated* when it takes a cut list whole or through
``[*]`` — but not when it picks ``[i]`` inside the page, nor a scalar such as ``rows_total``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tgms.engine.errors import InvalidArgError, LimitError, UpstreamError
from tgms.engine.plan.refs import (
    Field,
    Index,
    Ref,
    RefSyntaxError,
    Resolved,
    Star,
    check_step_id,
    find_refs,
    is_ref,
    list_cut,
    loc_str,
    resolve,
)


def read(text: str, payload: dict[str, Any]) -> Resolved:
    return resolve(Ref.parse(text), payload)


def paged(rows: list[Any], total: int | None = None, **extra: Any) -> dict[str, Any]:
    """A producer payload with ``rows`` (a page of ``total`` rows; the whole list when total is None)."""
    n = len(rows) if total is None else total
    return {"rows": rows, "rows_total": n, "truncated": len(rows) < n, "cursor": None, **extra}


ROWS = [{"uid": "a", "earliest_arrival": 1}, {"uid": "b", "earliest_arrival": 2}]


# -- parsing -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s1.rows", Ref("s1", "rows")),
        ("s1.rows_total", Ref("s1", "rows_total")),
        ("s1.rows[0].uid", Ref("s1", "rows", (Index(0), Field("uid")))),
        ("s1.rows[*].uid", Ref("s1", "rows", (Star(), Field("uid")))),
        ("s2.rows[*].edges[0].src", Ref("s2", "rows", (Star(), Field("edges"), Index(0), Field("src")))),
        ("s2.rows[12][3]", Ref("s2", "rows", (Index(12), Index(3)))),
        ("step_A.f2.g_3", Ref("step_A", "f2", (Field("g_3"),))),
        ("_s.rows[*]", Ref("_s", "rows", (Star(),))),
    ],
)
def test_valid_refs_parse(text: str, expected: Ref) -> None:
    ref = Ref.parse(text)
    assert ref == expected
    assert str(ref) == text  # round trip
    assert Ref.parse(str(ref)) == ref


def test_projects_flag() -> None:
    assert Ref.parse("s1.rows[*].uid").projects
    assert not Ref.parse("s1.rows[0].uid").projects
    assert not Ref.parse("s1.rows").projects


@pytest.mark.parametrize(
    "text",
    [
        "s1",  # no field
        "s1.",
        ".rows",
        "s1.rows.",
        "s1.rows[*][*]",  # two projections
        "s1.rows[*].edges[*].src",
        "s1.rows[-1]",
        "s1.rows[]",
        "s1.rows[x]",
        "s1.rows[ 0]",
        "s1.rows[0",
        "1s.rows",  # a step id cannot start with a digit
        "s1.2rows",
        "s1..rows",
        "s-1.rows",
        "s1.rows-total",
        "s1.rows uid",
        " s1.rows",
        "s1.rows\n",
        "s1.rows+1",
        "s1.rows[0].uid + 1",  # no expressions
        "s1.rowsé",
        "",
    ],
)
def test_invalid_refs_are_refused(text: str) -> None:
    with pytest.raises(RefSyntaxError):
        Ref.parse(text)


@pytest.mark.parametrize("value", [None, 3, 1.5, True, ["s1.rows"], {"$ref": "s1.rows"}, b"s1.rows"])
def test_non_string_refs_are_refused(value: Any) -> None:
    with pytest.raises(RefSyntaxError, match="must be a string"):
        Ref.parse(value)


def test_two_projections_message_names_the_rule() -> None:
    with pytest.raises(RefSyntaxError, match=r"at most one \[\*\]"):
        Ref.parse("s1.rows[*].edges[*]")


def test_ref_syntax_error_is_a_value_error() -> None:
    assert issubclass(RefSyntaxError, ValueError)


def test_index_accepts_only_ascii_digits() -> None:
    with pytest.raises(RefSyntaxError):
        Ref.parse("s1.rows[\u0663]")


# -- ref objects in argument trees -----------------------------------------------------------------------


def test_is_ref() -> None:
    assert is_ref({"$ref": "s1.rows"})
    assert not is_ref("s1.rows")
    assert not is_ref({"ref": "s1.rows"})
    assert not is_ref([{"$ref": "s1.rows"}])


def test_find_refs_reports_every_location() -> None:
    args = {
        "src": {"$ref": "s1.rows[0].uid"},
        "window": {"t_a": {"$ref": "s2.value"}, "t_b": 5},
        "seeds": ["a", {"$ref": "s3.rows[*].uid"}],
        "plain": {"x": [1, 2]},
    }
    found = find_refs(args)
    assert [(loc, obj["$ref"]) for loc, obj in found] == [
        (("src",), "s1.rows[0].uid"),
        (("window", "t_a"), "s2.value"),
        (("seeds", 1), "s3.rows[*].uid"),
    ]
    assert [loc_str(loc) for loc, _ in found] == ["src", "window.t_a", "seeds[1]"]


def test_find_refs_keeps_malformed_ref_objects_for_the_parser() -> None:
    # an object with "$ref" and other keys is still found (the plan parser reports it as ref_syntax)
    assert find_refs({"a": {"$ref": "s1.value", "x": 1}}) == [(("a",), {"$ref": "s1.value", "x": 1})]
    assert find_refs({"$ref": "s1.rows"}) == [((), {"$ref": "s1.rows"})]


def test_loc_str() -> None:
    assert loc_str(()) == ""
    assert loc_str(("a_spec", "uid")) == "a_spec.uid"
    assert loc_str(("input", 0, "x")) == "input[0].x"


def test_check_step_id() -> None:
    check_step_id("s1")
    with pytest.raises(InvalidArgError):
        check_step_id("1s")
    with pytest.raises(InvalidArgError):
        check_step_id("s 1")


# -- resolve: values -------------------------------------------------------------------------------------


def test_whole_field() -> None:
    r = read("s1.rows", paged(ROWS))
    assert r == Resolved(ROWS, False)


def test_index_picks_one_element() -> None:
    assert read("s1.rows[1].uid", paged(ROWS)).value == "b"
    assert read("s1.rows[0]", paged(ROWS)).value == ROWS[0]


def test_star_projects_every_element() -> None:
    assert read("s1.rows[*].uid", paged(ROWS)).value == ["a", "b"]
    assert read("s1.rows[*]", paged(ROWS)).value == ROWS
    assert read("s1.rows[*].uid", paged([])).value == []


def test_nested_projection_then_index() -> None:
    rows = [
        {"edges": [{"src": "a", "dst": "b"}, {"src": "b", "dst": "c"}]},
        {"edges": [{"src": "x", "dst": "y"}]},
    ]
    assert read("s2.rows[*].edges[0].src", paged(rows)).value == ["a", "x"]
    assert read("s2.rows[0].edges[*].dst", paged(rows)).value == ["b", "c"]
    assert read("s2.rows[1].edges[0]", paged(rows)).value == {"src": "x", "dst": "y"}


def test_scalar_fields() -> None:
    assert read("s1.rows_total", paged(ROWS)).value == 2
    assert read("s1.count", {"count": 7, "n_events_in_window": 9}).value == 7
    assert read("s1.value", {"value": None}).value is None


# -- resolve: failures -----------------------------------------------------------------------------------


def test_missing_top_field_is_upstream_with_legal_fields() -> None:
    payload = paged(ROWS)
    with pytest.raises(UpstreamError) as info:
        read("s2.count", payload)
    err = info.value
    assert err.code == "E_UPSTREAM"
    assert err.details["ref"] == "s2.count"
    assert err.details["legal"] == sorted(payload)
    assert "rows_total" in err.details["legal"]


def test_missing_nested_field_lists_the_element_fields() -> None:
    with pytest.raises(UpstreamError) as info:
        read("s1.rows[0].name", paged(ROWS))
    assert info.value.details["legal"] == ["earliest_arrival", "uid"]
    with pytest.raises(UpstreamError) as info:
        read("s1.rows[*].name", paged(ROWS))
    assert info.value.details["legal"] == ["earliest_arrival", "uid"]


def test_field_of_a_non_object_is_upstream() -> None:
    with pytest.raises(UpstreamError) as info:
        read("s1.rows_total.x", paged(ROWS))
    assert info.value.details["legal"] == "int"
    with pytest.raises(UpstreamError):
        read("s1.rows.uid", paged(ROWS))  # .uid on the list itself, not on its elements


@pytest.mark.parametrize("text", ["s1.rows_total[0]", "s1.rows_total[*]", "s1.rows[0].uid[0]"])
def test_index_or_projection_of_a_non_list_is_upstream(text: str) -> None:
    with pytest.raises(UpstreamError):
        read(text, paged(ROWS))


def test_index_past_the_end_of_a_complete_list_is_upstream() -> None:
    with pytest.raises(UpstreamError, match="out of range"):
        read("s1.rows[2]", paged(ROWS))
    with pytest.raises(UpstreamError):
        read("s1.rows[0]", paged([]))


def test_index_beyond_a_cut_page_is_limit() -> None:
    payload = paged(ROWS, total=5)
    with pytest.raises(LimitError) as info:
        read("s1.rows[3].uid", payload)
    err = info.value
    assert err.code == "E_LIMIT"
    assert err.details["page"] == 2 and err.details["total"] == 5
    assert err.details["ref"] == "s1.rows[3].uid"
    assert err.details["suggestions"] == ["use limit >= 4 on step s1"]


def test_index_beyond_a_cut_secondary_list_is_limit() -> None:
    payload = {"rows": [], "rows_total": 0, "edges": [{"eid": 1}], "edges_total": 3}
    with pytest.raises(LimitError):
        read("s1.edges[1]", payload)


def test_nested_index_past_the_end_is_upstream_even_on_a_cut_page() -> None:
    payload = paged([{"edges": [1]}], total=4)
    with pytest.raises(UpstreamError):
        read("s1.rows[0].edges[5]", payload)


def test_index_beyond_the_total_of_a_cut_list_is_upstream() -> None:
    with pytest.raises(UpstreamError):
        read("s1.rows[7]", paged(ROWS, total=5))


# -- resolve: truncation ---------------------------------------------------------------------------------


def test_list_cut() -> None:
    assert list_cut(paged(ROWS, total=3), "rows")
    assert not list_cut(paged(ROWS), "rows")
    assert not list_cut(paged(ROWS, total=3), "rows_total")  # a scalar has no _total
    assert not list_cut({"count": 3}, "count")


@pytest.mark.parametrize(
    ("text", "truncated"),
    [
        ("s1.rows", True),  # the whole cut list
        ("s1.rows[*].uid", True),  # a projection over it
        ("s1.rows[*]", True),
        ("s1.rows[0].uid", False),  # an element inside the page is exact
        ("s1.rows[1]", False),
        ("s1.rows_total", False),  # totals are computed over the whole result
        ("s1.truncated", False),
    ],
)
def test_truncated_flag_on_a_cut_page(text: str, truncated: bool) -> None:
    assert read(text, paged(ROWS, total=10)).truncated is truncated


@pytest.mark.parametrize("text", ["s1.rows", "s1.rows[*].uid", "s1.rows[0].uid", "s1.rows_total"])
def test_nothing_is_truncated_on_a_complete_page(text: str) -> None:
    assert read(text, paged(ROWS)).truncated is False


def test_truncation_is_per_list() -> None:
    payload = {"rows": ROWS, "rows_total": 2, "edges": [{"eid": 1}], "edges_total": 3}
    assert read("s1.rows", payload).truncated is False
    assert read("s1.edges", payload).truncated is True
    assert read("s1.edges[*].eid", payload).truncated is True
    assert read("s1.edges[0].eid", payload) == Resolved(1, False)
    assert read("s1.edges_total", payload).truncated is False
