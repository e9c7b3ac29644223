"""Bad input: every malformed or impossible write gives a structured error and changes nothing.

Parse errors (shape: ``E_SCHEMA``; values: ``E_INVALID_ARG``) are refused before anything is logged: the
digest and the log bytes are unchanged. Semantic errors (an unknown identity, ...) are logged as a failed
batch with their error code: the log gains the batch and its outcome, the digest is unchanged.
"""

from __future__ import annotations

import json
from contextlib import contextmanager

import numpy as np
import pytest

from tgms.engine.errors import TGMSError
from tgms.engine.timeutil import OPEN_END

from ._support import edge_ref, log_lines, log_records

NODE = {"op": "assert_node", "uid": "a", "vt_s": 0}
EDGE = {"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "R", "vt_s": 0, "vt_e": 10}


@pytest.fixture
def store(make_store):
    s = make_store()
    s.write([dict(NODE), {**NODE, "uid": "b"}])
    s.write([dict(EDGE)])
    return s


def _check_shape(err: TGMSError, codes: tuple[str, ...]) -> None:
    d = err.to_dict()
    assert set(d) == {"error", "message", "details"}
    assert d["error"] == err.code and err.code in codes, d
    assert isinstance(d["message"], str) and d["message"]
    assert isinstance(d["details"], dict)
    json.dumps(d)  # serializable as it is


@contextmanager
def refused_before_logging(store):
    digest, log = store.digest(), log_lines(store.log_path)
    yield
    assert store.digest() == digest
    assert log_lines(store.log_path) == log, "a refused batch must not be logged"


def _refused(store, ops, codes=("E_SCHEMA", "E_INVALID_ARG")) -> TGMSError:
    with refused_before_logging(store):
        for write in (store.write, store.try_write):
            with pytest.raises(TGMSError) as info:
                write(ops)
            _check_shape(info.value, codes)
    store.assert_node("still-writable", 0)  # and the store still works
    return info.value


# -- intervals and timestamps --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "op",
    [
        {**NODE, "vt_s": 5, "vt_e": 5},
        {**NODE, "vt_s": 5, "vt_e": 3},
        {**EDGE, "vt_s": 10, "vt_e": 10},
        {"op": "correct", "ref": {"uid": "a"}, "props": {}, "vt_s": 7, "vt_e": 2},
    ],
    ids=["node-empty", "node-reversed", "edge-empty", "correct-reversed"],
)
def test_empty_or_reversed_interval_is_invalid_arg(store, op):
    err = _refused(store, [op], ("E_INVALID_ARG",))
    assert err.details["at"] == "batch[0]"


@pytest.mark.parametrize(
    "field,value",
    [
        ("vt_s", -1),
        ("vt_s", OPEN_END),
        ("vt_s", 2**63),
        ("vt_e", OPEN_END + 1),
        ("vt_e", -5),
        ("vt_s", 1.5),
        ("vt_s", float("nan")),
        ("vt_s", float("inf")),
        ("vt_s", "5"),
        ("vt_s", True),
        ("vt_s", None),
        ("vt_s", [1]),
    ],
)
def test_timestamp_outside_range_or_not_an_integer_is_refused(store, field, value):
    _refused(store, [{**NODE, field: value}], ("E_INVALID_ARG",))


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_structured_error_for_a_non_finite_timestamp_is_strict_json(store, value):
    """The error's details echo the bad value; they must still be JSON (no bare NaN / Infinity)."""
    with pytest.raises(TGMSError) as info:
        store.write([{**NODE, "vt_s": value}])
    json.loads(json.dumps(info.value.to_dict(), allow_nan=False))
    json.loads(info.value.to_json(), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


@pytest.mark.parametrize("t", [-1, OPEN_END, 2**64, 0.5, "1", None])
def test_retract_time_outside_range_is_refused(store, t):
    _refused(store, [{"op": "retract", "ref": {"uid": "a"}, "t": t}], ("E_INVALID_ARG",))


def test_bounds_themselves_are_accepted(store):
    r = store.write([{**NODE, "uid": "edge-of-time", "vt_s": OPEN_END - 1, "vt_e": OPEN_END}])
    assert r.status == "committed"
    assert store.write([{**NODE, "uid": "zero", "vt_s": 0, "vt_e": 1}]).status == "committed"


# -- props ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "props",
    [
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": float("-inf")},
        {"x": [1, {"y": float("nan")}]},
        {"x": {1, 2}},
        {"x": b"bytes"},
        {"x": object()},
        {1: "non-string key"},
        {"x": np.float64("nan")},
        {"x": np.array([1, 2])},
    ],
    ids=["nan", "inf", "-inf", "nested-nan", "set", "bytes", "object", "int-key", "np-nan", "np-array"],
)
def test_non_json_props_are_refused(store, props):
    _refused(store, [{**NODE, "props": props}])
    _refused(store, [{**EDGE, "props": props}])
    _refused(store, [{"op": "correct", "ref": {"uid": "a"}, "props": props, "vt_s": 0, "vt_e": 5}])


@pytest.mark.parametrize("props", [[1, 2], "text", 5])
def test_props_that_are_not_an_object_are_schema_errors(store, props):
    _refused(store, [{**NODE, "props": props}], ("E_SCHEMA",))
    _refused(
        store, [{"op": "correct", "ref": {"uid": "a"}, "props": props, "vt_s": 0, "vt_e": 5}], ("E_SCHEMA",)
    )


@pytest.mark.parametrize(
    "op",
    [
        {**NODE, "uid": "\ud800"},
        {**NODE, "props": {"name": "bad \udfff surrogate"}},
        {**NODE, "props": {"\ud83d": 1}},
        {**EDGE, "rel_type": "R\ud800"},
    ],
    ids=["uid", "prop-value", "prop-key", "rel_type"],
)
def test_strings_that_are_not_unicode_are_refused(store, op):
    """A lone surrogate (legal in a JSON string escape, not in UTF-8) cannot be logged: refuse it."""
    _refused(store, [op], ("E_INVALID_ARG", "E_SCHEMA"))


def test_floats_are_canonical_in_the_log(store):
    store.write([{**NODE, "uid": "f", "props": {"w": 0.1 + 0.2, "n": 4.0, "z": -0.0}}])
    op = log_records(store.log_path)[-2]["ops"][0]
    assert op["props"] == {"w": 0.3, "n": 4, "z": 0}


# -- shape: ops, fields, refs ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "assert_nodes", "uid": "a", "vt_s": 0}],
        [{"op": "delete", "ref": {"uid": "a"}}],
        [{"op": 5}],
        [{"uid": "a", "vt_s": 0}],
        ["assert_node"],
        [None],
        [],
        {"op": "assert_node", "uid": "a", "vt_s": 0},
        "assert_node",
        None,
    ],
    ids=[
        "unknown-op",
        "delete",
        "op-not-string",
        "no-op",
        "op-is-string",
        "op-null",
        "empty",
        "not-a-list",
        "batch-string",
        "batch-null",
    ],
)
def test_unknown_op_or_malformed_batch_is_schema_error(store, ops):
    _refused(store, ops, ("E_SCHEMA",))


@pytest.mark.parametrize(
    "op,field",
    [
        ({**NODE, "colour": "red"}, "colour"),
        ({**EDGE, "weight": 1}, "weight"),
        ({"op": "retract", "ref": {"uid": "a"}, "t": 5, "why": "x"}, "why"),
        ({"op": "correct", "ref": {"uid": "a"}, "props": {}, "vt_s": 0, "vt_e": 1, "tt": 5}, "tt"),
        ({**NODE, "tt_s": 0}, "tt_s"),
        ({**NODE, "vid": 1}, "vid"),
    ],
)
def test_unknown_field_is_schema_error(store, op, field):
    err = _refused(store, [op], ("E_SCHEMA",))
    assert err.details["unknown"] == [field]
    assert field not in err.details["legal"]


@pytest.mark.parametrize(
    "op,missing",
    [
        ({"op": "assert_node", "vt_s": 0}, ["uid"]),
        ({"op": "assert_node", "uid": "a"}, ["vt_s"]),
        ({"op": "assert_edge", "src": "a", "vt_s": 0}, ["dst", "rel_type"]),
        ({"op": "retract", "ref": {"uid": "a"}}, ["t"]),
        ({"op": "retract", "t": 1}, ["ref"]),
        ({"op": "correct", "ref": {"uid": "a"}, "vt_s": 0, "vt_e": 1}, ["props"]),
    ],
)
def test_missing_field_is_schema_error(store, op, missing):
    err = _refused(store, [op], ("E_SCHEMA",))
    assert err.details["missing"] == missing


@pytest.mark.parametrize(
    "op",
    [
        {"op": "correct", "ref": {"uid": "a"}, "props": {}},  # no interval, not a vid ref
        {"op": "correct", "ref": {"uid": "a"}, "props": {}, "vt_s": 0},  # half an interval
        {"op": "correct", "ref": {"uid": "a"}, "props": None, "vt_s": 0, "vt_e": 1},
        {"op": "retract", "ref": "a", "t": 1},
        {"op": "retract", "ref": {"uid": "a", "src": "b"}, "t": 1},
        {"op": "retract", "ref": {"src": "a", "dst": "b"}, "t": 1},
        {"op": "retract", "ref": {"uid": 7}, "t": 1},
        {"op": "retract", "ref": {"vid": "7"}, "t": 1},
        {"op": "retract", "ref": {"vid": 2**64}, "t": 1},
        {"op": "retract", "ref": {"eid": True}, "t": 1},
        {**NODE, "uid": 5},
        {**EDGE, "src": None},
        {**NODE, "label": ["x"]},
    ],
)
def test_malformed_refs_and_values_are_schema_errors(store, op):
    _refused(store, [op], ("E_SCHEMA",))


@pytest.mark.parametrize("op", [{**NODE, "uid": ""}, {**EDGE, "rel_type": ""}, {**NODE, "uid": "x" * 1025}])
def test_empty_or_oversized_strings_are_invalid_arg(store, op):
    _refused(store, [op], ("E_INVALID_ARG",))


def test_one_bad_op_refuses_the_whole_batch_before_logging(store):
    err = _refused(store, [{**NODE, "uid": "ok"}, {**NODE, "uid": "ok2"}, {**NODE, "vt_e": 0}])
    assert err.details["at"] == "batch[2]"
    assert "ok" not in store.entity_ids()


@pytest.mark.parametrize(
    "op",
    [
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b", "c"], "t": [1]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b"], "t": [-1]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b"], "t": [OPEN_END]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b"], "t": [1.5]},
        {"op": "ingest_events", "rel_type": "M", "src": [""], "dst": ["b"], "t": [1]},
        {"op": "ingest_events", "rel_type": "M", "src": [3], "dst": ["b"], "t": [1]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b"], "t": [5], "t_end": [5]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b"], "t": [5], "t_end": [1, 2]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b"], "t": [5], "props": ["{nope"]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b"], "t": [5], "props": [[1]]},
        {
            "op": "ingest_events",
            "rel_type": "M",
            "src": ["a"],
            "dst": ["b"],
            "t": [5],
            "props": [{"x": float("nan")}],
        },
        {"op": "ingest_events", "rel_type": "M", "src": "a", "dst": ["b"], "t": [5]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a"], "dst": ["b"], "t": [5], "extra": 1},
        {"op": "ingest_events", "src": ["a"], "dst": ["b"], "t": [5]},
        {"op": "ingest_events", "rel_type": "M", "src": ["a\ud800"], "dst": ["b"], "t": [5]},
    ],
)
def test_malformed_bulk_ops_are_refused(store, op):
    _refused(store, [op])


# -- semantic errors: logged as failed, nothing changes ------------------------------------------------
@contextmanager
def logged_as_failed(store, code):
    digest, n_lines = store.digest(), len(log_lines(store.log_path))
    yield
    assert store.digest() == digest, "a failed batch must change nothing"
    records = log_records(store.log_path)
    assert len(records) == n_lines + 2, "a failed batch is logged: its batch record and its outcome"
    batch, outcome = records[-2:]
    assert (batch["kind"], outcome["kind"], outcome["status"]) == ("batch", "outcome", "failed")
    assert outcome["error"]["error"] == code
    assert set(outcome["error"]) == {"error", "message", "details"}


SEMANTIC = [
    ([{"op": "retract", "ref": {"uid": "nobody"}, "t": 1}], "E_NOT_FOUND"),
    ([{"op": "retract", "ref": edge_ref("b", "a"), "t": 1}], "E_NOT_FOUND"),
    ([{"op": "retract", "ref": {"eid": 42}, "t": 1}], "E_NOT_FOUND"),
    ([{"op": "retract", "ref": {"vid": 42}, "t": 1}], "E_NOT_FOUND"),
    ([{"op": "correct", "ref": {"uid": "nobody"}, "props": {}, "vt_s": 0, "vt_e": 1}], "E_NOT_FOUND"),
    ([{"op": "correct", "ref": edge_ref("a", "b", "S"), "props": {}, "vt_s": 0, "vt_e": 1}], "E_NOT_FOUND"),
    ([{"op": "correct", "ref": {"vid": 42}, "props": {"p": 1}}], "E_NOT_FOUND"),
    ([{"op": "correct", "ref": edge_ref("a", "b"), "props": {}, "vt_s": 50, "vt_e": 60}], "E_NOT_FOUND"),
    ([{"op": "retract", "ref": edge_ref("a", "b"), "t": 10}], "E_NOT_FOUND"),  # nothing valid at/after 10
    ([{**EDGE, "dst": "nobody"}], "E_NOT_FOUND"),
    ([{**NODE, "uid": "c"}, {**EDGE, "src": "c", "dst": "nobody"}], "E_NOT_FOUND"),
    ([{**NODE, "uid": "c"}, {"op": "retract", "ref": {"uid": "nobody"}, "t": 1}], "E_NOT_FOUND"),
]


@pytest.mark.parametrize("ops,code", SEMANTIC)
def test_semantic_errors_are_logged_as_failed_and_change_nothing(store, ops, code):
    with logged_as_failed(store, code):
        result = store.try_write(ops)
    assert (result.status, result.error["error"]) == ("failed", code)
    with logged_as_failed(store, code), pytest.raises(TGMSError) as info:
        store.write(ops)
    _check_shape(info.value, (code,))
    assert info.value.details["at"].startswith("ops[")
    assert "c" not in store.entity_ids()


def test_retract_by_vid_outside_its_interval_is_invalid_arg(store):
    vid = store.scan_edges()["vid"][0].as_py()  # [0, 10)
    for t in (0, 10, 50):
        with logged_as_failed(store, "E_INVALID_ARG"):
            assert store.try_write([{"op": "retract", "ref": {"vid": vid}, "t": t}]).status == "failed"


def test_vid_closed_earlier_in_the_same_batch_is_not_found(store):
    """The second op refers to a version the first one closed: not found (and the store survives)."""
    vid = store.scan_edges()["vid"][0].as_py()
    ops = [
        {"op": "correct", "ref": {"vid": vid}, "props": {"p": 2}},
        {"op": "correct", "ref": {"vid": vid}, "props": {"p": 3}},
    ]
    with logged_as_failed(store, "E_NOT_FOUND"):
        result = store.try_write(ops)
    assert result.error["details"]["at"] == "ops[1]"
    root = store.root
    store.close()
    from tgms.engine.store import Store

    with Store.open(root) as again:  # no pending batch left behind
        assert again.stats()["batches_applied"] == 2
