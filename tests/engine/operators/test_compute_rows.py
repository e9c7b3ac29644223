"""compute's row fns (join, derive) and mul: fast path == oracle on random calls, plus hand cases and
refusals. The older fns are tested in test_compute_fast.py."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, counter_clock
from tgms.engine.errors import TGMSError
from tgms.engine.operators.compute import keeps_empty
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.operators.registry import get_operator
from tgms.engine.store import Store

KEYS: list[Any] = ["u1", "u2", "u3", 1, 1.0, 2, None, 0.1 + 0.2, 0.3]
#: field values besides random numbers (uid-like strings for derive's number)
VALUES: list[Any] = [0, None, "s", True, "n10", "n9", "s007", "7x"]


def _row(rng: random.Random, fields: tuple[str, ...]) -> dict[str, Any]:
    row: dict[str, Any] = {"k": rng.choice(KEYS), "k2": rng.choice(["x", "y"]), "kb": rng.choice(KEYS)}
    for f in fields:
        if rng.random() < 0.85:
            row[f] = rng.choice([*VALUES, rng.randint(-3, 9), round(rng.uniform(-2, 5), 2)])
    return row


def _valid(rng: random.Random) -> dict[str, Any]:
    fn = rng.choice(["join", "join", "derive", "derive", "mul", "compare", "add"])
    if fn in ("compare", "add"):
        pick = [3, -2, 0.1, 1 / 3, 0, 3.0, "n1", "n10", True, [1]] if fn == "compare" else [3, -2, 0.1, 1e-10]
        a, b = rng.choice(pick), rng.choice(pick)
        call_args: dict[str, Any] = (
            {"fn": fn, "a": a, "b": b} if rng.random() < 0.7 else {"fn": fn, "input": [a, b]}
        )
        if fn == "compare":
            call_args["cmp"] = rng.choice(["==", "!=", "<", "<=", ">", ">=", "lt", "ge"])
        return call_args
    if fn == "mul":
        a, b = rng.choice([3, -2, 0.1, 1 / 3, 0]), rng.choice([3, 0.2, -7, 1e-10])
        return {"fn": "mul", "a": a, "b": b} if rng.random() < 0.7 else {"fn": "mul", "input": [a, b]}
    if fn == "join":
        a = [_row(rng, ("n", "m")) for _ in range(rng.randint(0, 6))]
        b = [_row(rng, ("n", "p")) for _ in range(rng.randint(0, 6))]
        on = rng.choice([
            "k", ["k"], ["k", "k2"], ["k2", "k", "k"],
            # differently named keys: kb dropped from b's fields (and b's k kept, as b_k)
            {"a": "k", "b": "kb"}, [{"a": "kb", "b": "k"}, "k2"], [{"a": "k", "b": "k"}, "k"],
            [{"a": "k", "b": "kb"}, {"a": "kb", "b": "k"}], [{"a": "k2", "b": "k2"}, {"a": "k", "b": "kb"}],
        ])  # fmt: skip
        args: dict[str, Any] = {"fn": "join", "on": on}
        args.update({"a": a, "b": b} if rng.random() < 0.7 else {"input": [a, b]})
        if rng.random() < 0.8:
            args["how"] = rng.choice(["inner", "left", "anti"])
        if rng.random() < 0.3:
            args["prefix"] = rng.choice(["c_", "b_", "x"])
        return args

    def expr(depth: int) -> dict[str, Any]:
        op = rng.choice([*BINARY_OPS, *UNARY_OPS])
        if op in UNARY_OPS:
            return {"op": op, "arg": operand(depth + 1)}
        return {"op": op, "left": operand(depth + 1), "right": operand(depth + 1)}

    def operand(depth: int) -> Any:
        r = rng.random()
        if r < 0.45 or depth >= 3:  # dotted names: paths into the rows' `o` objects (or a key of that name)
            return rng.choice(["n", "m", "p", "k", "k2", "kb", "zz", "o.v", "o.w.v", "o.zz", "n.v", "o.v.w"])
        if r < 0.6:
            return rng.choice([0, 2, -1, 0.1, 2.5, -2.5])
        return expr(depth)

    def nested(row: dict[str, Any]) -> dict[str, Any]:
        """A row with, now and then, an object `o` (a `v`, an object `w` holding a `v`) or a key `o.v`."""
        pick = rng.random()
        if pick < 0.4:
            row["o"] = {"v": rng.choice([3, -1.5, "s", None, True]), "w": rng.choice([{"v": 2}, 4, None])}
        elif pick < 0.5:
            row["o"] = rng.choice([None, 7, [1]])
        if rng.random() < 0.15:
            row["o.v"] = rng.choice([9, "k"])  # a key of the dotted name itself wins over the path
        return row

    return {
        "fn": "derive",
        "input": [nested(_row(rng, ("n", "m"))) for _ in range(rng.randint(0, 6))],
        # a bare field name (a copy) or a number (a constant) as the whole expression now and then
        "expr": expr(0) if rng.random() < 0.8 else operand(3),
        "as": rng.choice(["r", "n", "ratio"]),
    }


BINARY_OPS = ("add", "sub", "mul", "div", "mod", "min", "max", "coalesce", "when", "lt", "le", "gt", "ge",
              "eq", "ne", "and", "or")  # fmt: skip
UNARY_OPS = ("abs", "floor", "ceil", "not", "number")


def _fault(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    a = dict(args)
    fn = a["fn"]
    faults = {
        "mul": ["not_taken_on", "operand"],
        "add": ["not_taken_on", "operand"],
        "compare": ["not_taken_on", "cmp_missing", "cmp_unknown"],
        "join": ["on_missing", "on_type", "on_empty", "how_type", "how_unknown", "row_no_key", "row_type",
                 "not_list", "not_taken_expr", "prefix_type", "prefix_empty"],
        "derive": ["expr_missing", "as_missing", "as_type", "as_empty", "expr_type", "op_unknown", "op_type",
                   "expr_extra", "expr_key_missing", "leaf_type", "row_type", "input_type", "not_taken_on",
                   "too_deep"],
    }[fn]  # fmt: skip
    f = rng.choice(faults)
    if fn == "derive" and not isinstance(a["expr"], dict):  # a bare field or number: faults edit an object
        a["expr"] = {"op": "add", "left": a["expr"], "right": 1}
    rows_key = "input" if fn == "derive" else ("a" if "a" in a else None)
    if f == "not_taken_on":
        a["on"] = "k"
    elif f == "prefix_type":
        a["prefix"] = rng.choice([1, ["c_"]])
    elif f == "prefix_empty":
        a["prefix"] = ""
    elif f == "cmp_missing":
        del a["cmp"]
    elif f == "cmp_unknown":
        a["cmp"] = rng.choice(["=", "<>", 3])
    elif f == "not_taken_expr":
        a["expr"] = {"op": "add", "left": 1, "right": 2}
    elif f == "operand":
        a.pop("input", None)
        a.update(a=rng.choice(["3", True, [1]]), b=2)
    elif f == "on_missing":
        del a["on"]
    elif f == "on_type":
        a["on"] = rng.choice([3, [1], {"k": 1}, [{"a": "k"}], {"a": "k", "b": 1},
                              [{"a": "k", "b": "kb", "c": "k"}], ["k", {"a": ["k"], "b": "k"}]])  # fmt: skip
    elif f == "on_empty":
        a["on"] = []
    elif f == "how_type":
        a["how"] = 1
    elif f == "how_unknown":
        a["how"] = rng.choice(["outer", "INNER", "right"])
    elif f in ("row_no_key", "row_type"):
        bad = {"zz": 1} if f == "row_no_key" else rng.choice(["x", 3, None, [1]])
        if rows_key is None:
            a["input"] = [[*a["input"][0], bad], a["input"][1]]
        else:
            a[rows_key] = [*a[rows_key], bad]
    elif f == "not_list":
        a.pop("input", None)
        a.update(a="rows", b=[])
    elif f == "expr_missing":
        del a["expr"]
    elif f == "as_missing":
        del a["as"]
    elif f == "as_type":
        a["as"] = rng.choice([1, ["r"]])
    elif f == "as_empty":
        a["as"] = ""
    elif f == "expr_type":
        a["expr"] = rng.choice([[1, 2], True, {"n": 1}])
    elif f == "op_unknown":
        a["expr"] = {**a["expr"], "op": rng.choice(["pow", "ADD", "+"])}
    elif f == "op_type":
        a["expr"] = {**a["expr"], "op": 3}
    elif f == "expr_extra":
        a["expr"] = {**a["expr"], "zz": 1}
    elif f == "expr_key_missing":
        a["expr"] = {k: v for k, v in a["expr"].items() if k != rng.choice(sorted(a["expr"]))}
    elif f == "leaf_type":
        a["expr"] = {**a["expr"], "right": rng.choice([True, [1], {"op": "add", "left": 1, "right": False}])}
    elif f == "input_type":
        a["input"] = rng.choice(["rows", 3])
    else:  # too_deep
        e: Any = "n"
        for _ in range(9):
            e = {"op": "add", "left": e, "right": 1}
        a["expr"] = e
    return a


def test_row_fns_match_oracle(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "s", "duckdb", now=counter_clock())
    try:
        ctx = OpContext(store)
        rng = random.Random(17)
        outcomes: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        for _ in range(max(N_CASES, 20) * 6):
            args = _valid(rng)
            kinds[f"{args['fn']}-{args.get('how', '')}"] += 1
            if rng.random() < 0.3:
                args = _fault(rng, args)
            outcomes[compare(ctx, OracleStore([], []), "compute", args)] += 1
    finally:
        store.close()
    assert len(kinds) == 8, kinds  # mul, add, compare, derive, join with every how (and the default)
    assert outcomes["ok"] >= N_CASES and outcomes["E_SCHEMA"] and outcomes["E_INVALID_ARG"], outcomes


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory):
    store = Store.create(tmp_path_factory.mktemp("rows") / "s", "duckdb", now=counter_clock())
    yield OpContext(store)
    store.close()


def both(ctx: OpContext, **args: Any) -> dict[str, Any]:
    assert compare(ctx, OracleStore([], []), "compute", args) == "ok"
    return call(ctx, "compute", args)["payload"]


SENT = [{"uid": "a", "n": 4}, {"uid": "b", "n": 1}, {"uid": "c", "n": 2}]
RECV = [{"uid": "c", "n": 3, "first": 7}, {"uid": "a", "n": 0, "first": 5}, {"uid": "a", "n": 2, "first": 9}]


def test_join_kinds_and_order(ctx: OpContext) -> None:
    inner = both(ctx, fn="join", a=SENT, b=RECV, on="uid")
    # a's order, then b's order within a key; b's n renamed b_n because a has n
    assert inner["rows"] == [
        {"uid": "a", "n": 4, "b_n": 0, "first": 5},
        {"uid": "a", "n": 4, "b_n": 2, "first": 9},
        {"uid": "c", "n": 2, "b_n": 3, "first": 7},
    ]
    assert inner["value"] == inner["rows_total"] == 3
    left = both(ctx, fn="join", a=SENT, b=RECV, on=["uid"], how="left")
    assert left["rows"][2] == {"uid": "b", "n": 1, "b_n": None, "first": None}
    assert both(ctx, fn="join", input=[SENT, RECV], on="uid", how="anti")["rows"] == [SENT[1]]
    assert both(ctx, fn="join", a=SENT, b=[], on="uid")["rows"] == []
    assert both(ctx, fn="join", a=SENT, b=[], on="uid", how="left")["value"] == 3


def test_join_keys_compare_exactly_and_null_never_matches(ctx: OpContext) -> None:
    a = [{"k": 1}, {"k": 0.1 + 0.2}, {"k": None}, {"k": "1"}]
    b = [{"k": 1.0, "v": "one"}, {"k": 0.3, "v": "tenths"}, {"k": None, "v": "null"}]
    out = both(ctx, fn="join", a=a, b=b, on="k", how="left")
    assert [r["v"] for r in out["rows"]] == ["one", "tenths", None, None]


def test_reciprocal_pairs_by_a_two_field_join(ctx: OpContext) -> None:
    """The issue's reciprocal-pairs question: pairs (s, d) whose reverse (d, s) also occurs."""
    pairs = [
        {"src": "a", "dst": "b", "t": 1},
        {"src": "b", "dst": "a", "t": 5},
        {"src": "a", "dst": "c", "t": 2},
    ]
    reverse = [{"src": p["dst"], "dst": p["src"], "t_back": p["t"]} for p in pairs]
    out = both(ctx, fn="join", a=pairs, b=reverse, on=["src", "dst"])
    assert [(r["src"], r["dst"], r["t_back"]) for r in out["rows"]] == [("a", "b", 5), ("b", "a", 1)]


def test_join_on_differently_named_fields(ctx: OpContext) -> None:
    """First sent (per src) against first received (per dst): the key is src in a and dst in b; b's key
    field is dropped, its other fields kept (b_ prefixed on a clash)."""
    sent = [{"src": "a", "first_t": 3}, {"src": "b", "first_t": 9}, {"src": "c", "first_t": 1}]
    recv = [{"dst": "b", "first_t": 4}, {"dst": "a", "first_t": 7}, {"dst": "d", "first_t": 2}]
    out = both(ctx, fn="join", a=sent, b=recv, on={"a": "src", "b": "dst"})
    assert out["rows"] == [
        {"src": "a", "first_t": 3, "b_first_t": 7},
        {"src": "b", "first_t": 9, "b_first_t": 4},
    ]
    assert both(ctx, fn="join", a=sent, b=recv, on=[{"a": "src", "b": "dst"}], how="anti")["rows"] == [
        sent[2]
    ]
    left = both(ctx, fn="join", a=sent, b=recv, on=[{"a": "src", "b": "dst"}], how="left")
    assert left["rows"][2] == {"src": "c", "first_t": 1, "b_first_t": None}
    # the same field name on both sides, spelled either way, is the same key
    same = both(ctx, fn="join", a=SENT, b=RECV, on={"a": "uid", "b": "uid"})
    assert same == both(ctx, fn="join", a=SENT, b=RECV, on="uid")


def test_pair_joined_against_the_reversed_pair(ctx: OpContext) -> None:
    """Reply delay: the first message a->b against the first b->a, one list joined with itself on swapped
    keys; both of b's key fields are dropped, so only its time comes over (as b_ft)."""
    first = [
        {"src": "a", "dst": "b", "ft": 1},
        {"src": "b", "dst": "a", "ft": 5},
        {"src": "a", "dst": "c", "ft": 2},
        {"src": "c", "dst": "c", "ft": 4},
    ]
    on = [{"a": "src", "b": "dst"}, {"a": "dst", "b": "src"}]
    out = both(ctx, fn="join", a=first, b=first, on=on)
    assert [(r["src"], r["dst"], r["ft"], r["b_ft"]) for r in out["rows"]] == [
        ("a", "b", 1, 5), ("b", "a", 5, 1), ("c", "c", 4, 4),
    ]  # fmt: skip
    assert set(out["rows"][0]) == {"src", "dst", "ft", "b_ft"}
    delay = both(ctx, fn="derive", input=out["rows"], expr={"op": "sub", "left": "b_ft", "right": "ft"},
                 **{"as": "delay"})  # fmt: skip
    assert (
        both(ctx, fn="filter", input=delay["rows"], field="delay", cmp=">", value=0)["rows"][0]["delay"] == 4
    )


def _derived(ctx: OpContext, rows: list[dict[str, Any]], expr: Any) -> list[Any]:
    return [r["x"] for r in both(ctx, fn="derive", input=rows, expr=expr, **{"as": "x"})["rows"]]


def test_derive_functions(ctx: OpContext) -> None:
    rows = [{"a": -2.5, "b": 1}, {"a": 3, "b": 7}, {"a": 0.1, "b": None}, {"a": "s", "b": 2}]
    assert _derived(ctx, rows, {"op": "abs", "arg": "a"}) == [2.5, 3, 0.1, None]
    assert _derived(ctx, rows, {"op": "floor", "arg": "a"}) == [-3, 3, 0, None]
    assert _derived(ctx, rows, {"op": "ceil", "arg": "a"}) == [-2, 3, 1, None]
    assert _derived(ctx, rows, {"op": "min", "left": "a", "right": "b"}) == [-2.5, 3, None, None]
    assert _derived(ctx, rows, {"op": "max", "left": "a", "right": "b"}) == [1, 7, None, None]
    # |first_ab - first_ba| in one expression, where it took first_ab + first_ba - 2 pair_first before
    gap = {"op": "abs", "arg": {"op": "sub", "left": "a", "right": "b"}}
    assert _derived(ctx, rows[:2], gap) == [3.5, 4]
    # sqrt: exact for squares, else 9 decimals; of a negative or a non-number: null
    roots = [{"v": 4}, {"v": 2.25}, {"v": 2}, {"v": -1}, {"v": 10**40}, {"v": 0.0001}, {"v": "x"}]
    roots_got = _derived(ctx, roots, {"op": "sqrt", "arg": "v"})
    assert roots_got == [2, 1.5, 1.414213562, None, 10**20, 0.01, None]
    # a standard deviation in one expression: sqrt(mean of squares − square of mean)
    sd = {"op": "sqrt", "arg": {"op": "sub", "left": "m2", "right": {"op": "mul", "left": "m", "right": "m"}}}
    assert _derived(ctx, [{"m2": 14.5, "m": 3}], sd) == [2.345207880]


def test_derive_ints_and_exact_quotients_mix(ctx: OpContext) -> None:
    """Ints stay ints through int arithmetic (the fast path keeps them unconverted) and meet exact
    quotients and floats by value: 6/3 is the int 2, 7/2 equals 3.5, 1/3 + 2/3 is 1, a mod keeps the
    divisor's sign, and a comparison of an int with a quotient or a float is by value."""
    rows = [{"a": 6, "b": 3, "f": 2.0}, {"a": 7, "b": 2, "f": 3.5}, {"a": -7, "b": 3, "f": 0.5}]
    div = {"op": "div", "left": "a", "right": "b"}
    assert _derived(ctx, rows, div) == [2, 3.5, -2.333333333]
    assert _derived(ctx, rows, {"op": "eq", "left": div, "right": "f"}) == [True, True, False]
    assert _derived(ctx, rows, {"op": "mod", "left": "a", "right": "b"}) == [0, 1, 2]
    assert _derived(ctx, rows, {"op": "floor", "arg": div}) == [2, 3, -3]
    thirds = {
        "op": "add",
        "left": {"op": "div", "left": 1, "right": 3},
        "right": {"op": "div", "left": 2, "right": 3},
    }
    assert _derived(ctx, rows[:1], {"op": "eq", "left": thirds, "right": 1}) == [True]
    assert _derived(ctx, rows, {"op": "lt", "left": "b", "right": "f"}) == [False, True, False]


def test_derive_number_reads_the_number_a_uid_ends_with(ctx: OpContext) -> None:
    """ids compared as numbers: n9 < n10 by number (as text "n10" < "n9"); a number is itself; a boolean is
    1 or 0; a string without trailing digits and null are null (both paths: fast and oracle, by ``both``)."""
    rows = [
        {"s": "n9", "t": "n10"},
        {"s": "s007", "t": 7},
        {"s": "7x", "t": "x7"},
        {"s": True, "t": None},
        {"s": "n0", "t": -2.5},
    ]
    assert _derived(ctx, rows, {"op": "number", "arg": "s"}) == [9, 7, None, 1, 0]
    assert _derived(ctx, rows, {"op": "number", "arg": "t"}) == [10, 7, 7, None, -2.5]
    smaller = {"op": "lt", "left": {"op": "number", "arg": "s"}, "right": {"op": "number", "arg": "t"}}
    assert _derived(ctx, rows, smaller) == [True, False, None, None, False]
    as_text = {"op": "lt", "left": "s", "right": "t"}
    assert _derived(ctx, rows[:1], as_text) == [False]  # the order number fixes


def test_derive_a_bare_field_copies_it_and_a_boolean_counts_as_one(ctx: OpContext) -> None:
    """The fifth question set's planners renamed fields with a group's first and built indicators as
    min(1, max(0, d - x)): a field name alone as expr copies the field's value unchanged (a rename: a
    string, a number, an object; null where the row lacks it), a number alone is a constant, and
    number(comparison) is 1 or 0 (null stays null)."""
    rows = [{"src": "n9", "w": 0.25, "p": {"x": 1}}, {"src": "n10", "w": 3}, {"w": -2}]
    assert _derived(ctx, rows, "src") == ["n9", "n10", None]
    assert _derived(ctx, rows, "w") == [0.25, 3, -2]
    assert _derived(ctx, rows, "p") == [{"x": 1}, None, None]
    assert _derived(ctx, rows, 7) == [7, 7, 7]
    positive = {"op": "number", "arg": {"op": "gt", "left": "w", "right": 0}}
    assert _derived(ctx, rows, positive) == [1, 1, 0]
    band = {
        "op": "add",
        "left": positive,
        "right": {"op": "number", "arg": {"op": "ge", "left": "w", "right": 3}},
    }
    assert _derived(ctx, rows, band) == [1, 2, 0]
    assert _derived(ctx, [{"w": None}], positive) == [None]


def test_derive_reads_a_dotted_path_into_an_object_field(ctx: OpContext) -> None:
    """list_events' rows hold their properties as an object (``props``): a derive operand ``props.rating``
    reads into it (alone: a copy out, as a field of its own that group, filter and topk then read); a
    missing step or a step into a non-object is null; a row's own key of the dotted name wins."""
    rows = [
        {"eid": "e1", "props": {"rating": -5, "meta": {"by": "n1"}}},
        {"eid": "e2", "props": {"rating": 3}},
        {"eid": "e3", "props": None},
        {"eid": "e4"},
        {"eid": "e5", "props": {"rating": 1}, "props.rating": 8},
    ]
    assert _derived(ctx, rows, "props.rating") == [-5, 3, None, None, 8]
    assert _derived(ctx, rows, "props.meta.by") == ["n1", None, None, None, None]
    assert _derived(ctx, rows, "props.rating.x") == [None] * 5
    low = {"op": "le", "left": "props.rating", "right": -5}
    assert _derived(ctx, rows, low) == [True, False, None, None, False]
    assert _derived(ctx, rows, {"op": "mul", "left": "props.rating", "right": 2}) == [-10, 6, None, None, 16]


def test_derive_mod_coalesce_and_when_make_a_case(ctx: OpContext) -> None:
    """The sixth set's planners wrote d mod 7 as d − 7·floor(d/7) and a CASE as a division by zero: ``mod``
    is a − b·⌊a/b⌋ (the divisor's sign; by zero: null), ``coalesce`` the left side unless it is null,
    ``when`` the right side where the left is true (else null): ``coalesce(when(c, a), b)`` is a CASE."""
    rows = [{"a": 7, "b": 3}, {"a": -7, "b": 3}, {"a": 7, "b": -3}, {"a": 7.5, "b": 2}, {"a": 1, "b": 0},
            {"a": None, "b": 5}, {"b": "x"}]  # fmt: skip
    assert _derived(ctx, rows, {"op": "mod", "left": "a", "right": "b"}) == [1, 2, -2, 1.5, None, None, None]
    assert _derived(ctx, rows, {"op": "coalesce", "left": "a", "right": "b"}) == [7, -7, 7, 7.5, 1, 5, "x"]
    bigger = {"op": "gt", "left": "a", "right": "b"}
    assert _derived(ctx, rows, {"op": "when", "left": bigger, "right": "a"}) == [
        7,
        None,
        7,
        7.5,
        1,
        None,
        None,
    ]
    case = {"op": "coalesce", "left": {"op": "when", "left": bigger, "right": "a"}, "right": 0}
    assert _derived(ctx, rows, case) == [7, 0, 7, 7.5, 1, 0, 0]
    # when's left must be a boolean: a number is not true
    assert _derived(ctx, rows[:1], {"op": "when", "left": "a", "right": "b"}) == [None]
    # the weekday of day d when day 0 is a Thursday (1970-01-01): (d + 3) mod 7, 0 = Monday
    days = [{"d": d} for d in (0, 4, 20_000)]
    monday0 = {"op": "mod", "left": {"op": "add", "left": "d", "right": 3}, "right": 7}
    assert _derived(ctx, days, monday0) == [3, 0, 4]  # Thursday, Monday, Friday 2024-10-04


def test_a_conditional_aggregate_is_a_when_then_the_aggregate(ctx: OpContext) -> None:
    """SQL's ``median(x) FILTER (WHERE c)`` per group: a derive of ``when(c, x)`` (null where c is not
    true), then group's numeric aggregates and count_distinct skip the nulls."""
    rows = [{"s": "a", "x": 5, "c": True}, {"s": "a", "x": 7, "c": False}, {"s": "a", "x": 9, "c": True},
            {"s": "a", "x": 9, "c": None}, {"s": "b", "x": 1, "c": False}]  # fmt: skip
    kept = both(ctx, fn="derive", input=rows, expr={"op": "when", "left": "c", "right": "x"}, **{"as": "xc"})
    aggs = [
        {"fn": "median", "field": "xc"},
        {"fn": "count_distinct", "field": "xc"},
        {"fn": "sum", "field": "xc"},
    ]
    out = both(ctx, fn="group", input=kept["rows"], by="s", aggregates=aggs)["rows"]
    assert out == [
        {"s": "a", "median_xc": 7, "count_distinct_xc": 2, "sum_xc": 14},
        {"s": "b", "median_xc": None, "count_distinct_xc": 0, "sum_xc": 0},
    ]


def test_derive_comparisons_and_three_valued_logic(ctx: OpContext) -> None:
    rows = [
        {"a": 1, "b": 1.0, "s": "n1", "t": "n2"},
        {"a": 5, "b": 2, "s": "n2", "t": "n2"},
        {"a": None, "b": 2, "s": "n9", "t": "n10"},
        {"a": "3", "b": 3, "s": True, "t": True},
    ]
    assert _derived(ctx, rows, {"op": "eq", "left": "a", "right": "b"}) == [True, False, None, False]
    assert _derived(ctx, rows, {"op": "gt", "left": "a", "right": "b"}) == [False, True, None, None]
    # two strings: code-point order ("n10" < "n9"); eq compares booleans too
    assert _derived(ctx, rows, {"op": "lt", "left": "s", "right": "t"}) == [True, False, False, None]
    assert _derived(ctx, rows, {"op": "eq", "left": "s", "right": "t"}) == [False, True, False, True]
    # "A > 2B or B > 2A"
    lop = {"op": "gt", "left": "a", "right": {"op": "mul", "left": 2, "right": "b"}}
    rop = {"op": "gt", "left": "b", "right": {"op": "mul", "left": 2, "right": "a"}}
    assert _derived(ctx, rows, {"op": "or", "left": lop, "right": rop}) == [False, True, None, None]
    assert _derived(ctx, rows, {"op": "and", "left": lop, "right": rop}) == [False, False, None, None]
    # SQL: false and null = false, true or null = true, not null = null
    known = {"op": "eq", "left": "s", "right": "t"}  # [F, T, F, T]
    unknown = {"op": "gt", "left": "a", "right": "b"}  # [F, T, null, null]
    assert _derived(ctx, rows, {"op": "and", "left": known, "right": unknown}) == [False, True, False, None]
    assert _derived(ctx, rows, {"op": "or", "left": known, "right": unknown}) == [False, True, None, True]
    assert _derived(ctx, rows, {"op": "not", "arg": unknown}) == [True, False, None, None]
    # a boolean is not a number: arithmetic on it is null
    assert _derived(ctx, rows[:1], {"op": "add", "left": known, "right": 1}) == [None]


def test_a_third_list_joined_on_takes_its_own_prefix(ctx: OpContext) -> None:
    # pairs joined with their reverse, then with a third list: its dst would be named b_dst again
    ab = [{"src": "a", "dst": "b", "t": 1}]
    first = both(ctx, fn="join", a=ab, b=[{"src": "b", "dst": "a", "t": 5}], on=[{"a": "src", "b": "dst"}])[
        "rows"
    ]
    assert first == [{"src": "a", "dst": "b", "t": 1, "b_src": "b", "b_t": 5}]
    third = [{"src": "a", "dst": "z", "t": 9}]
    with pytest.raises(TGMSError):  # the third list's t would be named b_t, which a already has
        call(ctx, "compute", {"fn": "join", "a": first, "b": third, "on": "src"})
    rows = both(ctx, fn="join", a=first, b=third, on="src", prefix="c_")["rows"]
    assert rows == [{"src": "a", "dst": "b", "t": 1, "b_src": "b", "b_t": 5, "c_dst": "z", "c_t": 9}]


def test_filter_compares_two_fields_of_each_row(ctx: OpContext) -> None:
    rows = [{"sent": 4, "got": 1}, {"sent": 1, "got": 1}, {"sent": 0, "got": 3}, {"sent": "x", "got": "y"}]
    out = both(ctx, fn="filter", input=rows[:3], field="sent", cmp=">", other="got")
    assert out["rows"] == [rows[0]]
    assert both(ctx, fn="filter", input=rows, field="sent", cmp="==", other="got")["rows"] == [rows[1]]
    for bad, code in (
        (
            {"input": [*rows[:3], {"sent": 1, "got": "y"}], "field": "sent", "cmp": ">", "other": "got"},
            "E_INVALID_ARG",
        ),  # a number and a string have no order
        ({"input": rows[:3], "field": "sent", "cmp": ">", "other": "zz"}, "E_INVALID_ARG"),
        ({"input": rows[:3], "field": "sent", "cmp": ">", "other": "got", "value": 1}, "E_INVALID_ARG"),
        ({"input": rows[:3], "cmp": ">", "other": "got"}, "E_INVALID_ARG"),  # no field
        ({"input": rows[:3], "field": "sent", "other": "got"}, "E_SCHEMA"),  # no cmp
        ({"input": rows[:3], "field": "sent", "cmp": ">", "other": 3}, "E_SCHEMA"),
    ):
        assert compare(ctx, OracleStore([], []), "compute", {"fn": "filter", **bad}) == code, bad


def test_filter_null_tests_keep_the_rows_with_or_without_a_value(ctx: OpContext) -> None:
    # a lag's first row is null; a left join's unmatched row has null b fields (or none, when b was empty)
    rows = [{"t": 1, "prev": None}, {"t": 2, "prev": 1}, {"t": 3, "prev": 0}, {"t": 4}]
    assert both(ctx, fn="filter", input=rows, field="prev", cmp="exists")["rows"] == rows[1:3]
    assert both(ctx, fn="filter", input=rows, field="prev", cmp="missing")["rows"] == [rows[0], rows[3]]
    assert both(ctx, fn="filter", input=[1, None, 0, "x"], cmp="exists")["rows"] == [1, 0, "x"]
    assert both(ctx, fn="filter", input=[1, None, 0, "x"], cmp="missing")["value"] == 1
    for bad, code in (
        ({"input": rows, "field": "prev", "cmp": "exists", "value": 1}, "E_INVALID_ARG"),
        ({"input": rows, "field": "prev", "cmp": "missing", "other": "t"}, "E_INVALID_ARG"),
        ({"input": [1, 2], "field": "prev", "cmp": "exists"}, "E_INVALID_ARG"),  # not objects
    ):
        assert compare(ctx, OracleStore([], []), "compute", {"fn": "filter", **bad}) == code, bad
    # an ordering with a null side keeps no row (as SQL's WHERE and the event where); == and != compare null
    assert both(ctx, fn="filter", input=rows[:3], field="prev", cmp=">=", value=0)["rows"] == rows[1:3]
    assert both(ctx, fn="filter", input=rows[:3], field="t", cmp=">", other="prev")["rows"] == rows[1:3]
    assert both(ctx, fn="filter", input=rows[:3], field="prev", cmp="!=", value=1)["rows"] == [
        rows[0],
        rows[2],
    ]
    # compare is a yes/no of two values: no null test there
    assert compare(
        ctx, OracleStore([], []), "compute", {"fn": "compare", "a": 1, "b": 2, "cmp": "exists"}
    ) == ("E_INVALID_ARG")


def test_compare_answers_yes_or_no_and_add_adds(ctx: OpContext) -> None:
    assert both(ctx, fn="compare", a=3, b=3.0, cmp="==")["value"] is True
    assert both(ctx, fn="compare", input=[0.1 + 0.2, 0.3], cmp="eq")["value"] is True  # exact values
    assert both(ctx, fn="compare", a=5, b=7, cmp=">")["value"] is False
    assert both(ctx, fn="compare", a="n10", b="n9", cmp="<")["value"] is True  # code-point order
    assert both(ctx, fn="compare", a="3", b=3, cmp="!=")["value"] is True  # a string is not a number
    week = 7 * 86_400_000_000
    assert both(ctx, fn="add", a=1_083_369_600_000_000, b=week)["value"] == 1_083_974_400_000_000
    assert both(ctx, fn="add", input=[0.1, 0.2])["value"] == 0.3
    for bad, code in (
        ({"fn": "compare", "a": 1, "b": 2}, "E_SCHEMA"),  # no cmp
        ({"fn": "compare", "a": 1, "b": "x", "cmp": "<"}, "E_INVALID_ARG"),  # no order between them
        ({"fn": "compare", "a": 1, "b": 2, "cmp": "<", "value": 3}, "E_INVALID_ARG"),  # not taken
        ({"fn": "add", "a": 1, "b": "2"}, "E_INVALID_ARG"),
    ):
        assert compare(ctx, OracleStore([], []), "compute", bad) == code, bad


def test_derive_exact_and_nulls(ctx: OpContext) -> None:
    rows = [{"s": 1, "r": 3}, {"s": 0.1, "r": 0.2}, {"s": 2, "r": 0}, {"s": "x", "r": 1}, {"r": 1}]
    out = both(ctx, fn="derive", input=rows, expr={"op": "div", "left": "s", "right": "r"}, **{"as": "q"})
    assert [r["q"] for r in out["rows"]] == [0.333333333, 0.5, None, None, None]
    nested = {"op": "mul", "left": 100, "right": {"op": "sub", "left": "s", "right": 0.1}}
    out = both(ctx, fn="derive", input=rows[:2], expr=nested, **{"as": "s"})  # replaces s
    assert [r["s"] for r in out["rows"]] == [90, 0]
    assert both(ctx, fn="mul", a=0.1, b=3)["value"] == 0.3
    assert both(ctx, fn="mul", input=[10**20, 10**20])["value"] == 10**40


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"fn": "join", "a": SENT, "b": RECV}, "E_SCHEMA"),
        ({"fn": "join", "a": SENT, "b": RECV, "on": "uid", "how": "outer"}, "E_INVALID_ARG"),
        ({"fn": "join", "a": SENT, "b": RECV, "on": "zz"}, "E_INVALID_ARG"),
        ({"fn": "join", "a": SENT, "b": RECV, "on": {"a": "uid", "b": "n2"}}, "E_INVALID_ARG"),
        ({"fn": "join", "a": SENT, "b": RECV, "on": {"a": "uid"}}, "E_SCHEMA"),
        ({"fn": "join", "a": SENT, "b": RECV, "on": [{"a": "uid", "b": 3}]}, "E_SCHEMA"),
        ({"fn": "join", "a": SENT, "b": RECV, "on": [{"a": "uid", "b": "uid", "how": "left"}]}, "E_SCHEMA"),
        ({"fn": "join", "a": [{"uid": "a", "b_n": 1, "n": 1}], "b": RECV, "on": "uid"}, "E_INVALID_ARG"),
        ({"fn": "join", "a": [{"k": 1}] * 400, "b": [{"k": 1}] * 400, "on": "k"}, "E_INVALID_ARG"),
        ({"fn": "derive", "input": SENT, "expr": {"op": "add", "left": "n"}, "as": "x"}, "E_SCHEMA"),
        ({"fn": "derive", "input": SENT, "expr": {"op": "pow", "left": "n", "right": 2}, "as": "x"},
         "E_INVALID_ARG"),
        ({"fn": "derive", "input": [1], "expr": {"op": "add", "left": "n", "right": 2}, "as": "x"},
         "E_INVALID_ARG"),
        ({"fn": "derive", "input": SENT, "expr": {"op": "add", "left": "n", "right": 2}}, "E_SCHEMA"),
        ({"fn": "derive", "input": SENT, "expr": {"op": "abs", "left": "n"}, "as": "x"}, "E_SCHEMA"),
        ({"fn": "derive", "input": SENT, "expr": {"op": "lt", "arg": "n"}, "as": "x"}, "E_SCHEMA"),
        ({"fn": "derive", "input": SENT, "expr": {"op": "not", "arg": "n", "right": 1}, "as": "x"},
         "E_SCHEMA"),
        ({"fn": "derive", "input": SENT, "expr": {"left": "n", "right": 1}, "as": "x"}, "E_SCHEMA"),
        ({"fn": "mul", "a": 2, "b": 3, "on": "k"}, "E_INVALID_ARG"),
    ],
)  # fmt: skip
def test_row_fn_refusals(ctx: OpContext, args: dict[str, Any], code: str) -> None:
    assert compare(ctx, OracleStore([], []), "compute", args) == code
    with pytest.raises(TGMSError) as err:
        call(ctx, "compute", args)
    assert err.value.code == code and err.value.to_dict()["details"]["field"]


def test_traits_of_row_fns() -> None:
    traits = get_operator("compute").traits
    assert traits.reduces_list({"fn": "join"}) and traits.reduces_list({"fn": "topk"})
    # per-row fns run over a cut page (the step stays tainted); a pairwise fn reads two scalars
    assert not traits.reduces_list({"fn": "derive"}) and not traits.reduces_list({"fn": "filter"})
    assert not traits.reduces_list({"fn": "mul"})
    assert keeps_empty({"fn": "join"}, ("a",)) and keeps_empty({"fn": "join", "how": "inner"}, ("b",))
    assert not keeps_empty({"fn": "join", "how": "left"}, ("b",))
    assert not keeps_empty({"fn": "join", "how": "anti"}, ("input", 1))
    assert keeps_empty({"fn": "join", "how": "anti"}, ("input", 0))
    assert keeps_empty({"fn": "derive"}, ("input",))
