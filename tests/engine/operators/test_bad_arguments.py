"""Bad arguments to every operator give a structured TGMSError, never a raw exception, and change nothing.

Two layers: targeted cases with the expected code (unknown operator or field, wrong types, ``t_a >= t_b``,
unknown uid, bad cursor, NaN), and a mutation fuzz that corrupts valid arguments at random (drop a field,
replace a value with a value of another JSON type, nest it, negate it) and asserts that every outcome
is either an envelope or one of the design's error codes with the one JSON error shape.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BACKENDS, require_backend
from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, random_store, sample_args
from tgms.engine.errors import TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.operators.registry import REGISTRY, load_all

load_all()
OPS = sorted(REGISTRY)
UIDS = [f"u{i}" for i in range(8)]
DESIGN_CODES = {"E_SCHEMA", "E_INVALID_ARG", "E_NOT_FOUND", "E_COST", "E_LIMIT"}
WINDOW_OPS = [op for op in OPS if "window" in REGISTRY[op].args.model_fields]


@pytest.fixture(scope="module", params=BACKENDS)
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    root: Path = tmp_path_factory.mktemp(f"bad-{request.param}")
    store, tts = random_store(root / "s", require_backend(request.param), seed=5)
    yield OpContext(store), tts, store
    store.close()


def _error(ctx: OpContext, op: str, args: Any) -> dict[str, Any]:
    with pytest.raises(TGMSError) as info:
        call(ctx, op, args)
    err = info.value.to_dict()
    assert set(err) == {"error", "message", "details"}, err
    json.dumps(err)  # the error shape is JSON as it is
    return err


def _valid(op: str, seed: int, tts: list[int]) -> dict[str, Any]:
    return sample_args(op, random.Random(seed), UIDS, tts)


def test_unknown_operator_is_not_found(env) -> None:
    ctx, _, _ = env
    assert _error(ctx, "no_such_op", {})["error"] == "E_NOT_FOUND"


@pytest.mark.parametrize("op", OPS)
def test_unknown_field_is_a_schema_error(env, op: str) -> None:
    ctx, tts, _ = env
    args = _valid(op, 1, tts) | {"bogus_field": 1}
    err = _error(ctx, op, args)
    assert err["error"] == "E_SCHEMA"
    assert "bogus_field" in json.dumps(err)


@pytest.mark.parametrize("op", OPS)
def test_arguments_that_are_not_an_object(env, op: str) -> None:
    ctx, _, _ = env
    for bad in ([], "x", 3, None):
        assert _error(ctx, op, bad)["error"] == "E_SCHEMA"


@pytest.mark.parametrize("op", OPS)
def test_wrong_types_are_schema_errors(env, op: str) -> None:
    ctx, tts, _ = env
    args = _valid(op, 2, tts)
    for name in args:
        bad = dict(args)
        bad[name] = {"not": ["a", "scalar"]}
        assert _error(ctx, op, bad)["error"] in ("E_SCHEMA", "E_INVALID_ARG"), name


@pytest.mark.parametrize("op", WINDOW_OPS)
def test_empty_or_reversed_window_is_invalid(env, op: str) -> None:
    ctx, tts, _ = env
    args = _valid(op, 3, tts)
    for t_a, t_b in ((50, 50), (60, 10)):
        err = _error(ctx, op, args | {"window": {"t_a": t_a, "t_b": t_b}})
        assert err["error"] == "E_INVALID_ARG", err


@pytest.mark.parametrize("op", [op for op in OPS if {"uid", "src"} & set(REGISTRY[op].args.model_fields)])
def test_unknown_uid_is_not_found(env, op: str) -> None:
    ctx, tts, _ = env
    args = _valid(op, 4, tts)
    args.pop("as_of_tt", None)
    field = "uid" if "uid" in args else "src"
    assert _error(ctx, op, args | {field: "nobody-by-this-name"})["error"] == "E_NOT_FOUND"


@pytest.mark.parametrize("op", [op for op in OPS if REGISTRY[op].lists])
def test_bad_cursor_is_invalid(env, op: str) -> None:
    ctx, tts, _ = env
    args = _valid(op, 5, tts)
    for cursor in ("garbage", "-1.abc", "3.000000000000", ""):
        assert _error(ctx, op, args | {"cursor": cursor})["error"] == "E_INVALID_ARG", cursor


@pytest.mark.parametrize("op", OPS)
def test_nan_and_infinity_are_refused(env, op: str) -> None:
    ctx, tts, _ = env
    args = _valid(op, 6, tts)
    numeric = [k for k, v in args.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    for name in numeric:
        for x in (math.nan, math.inf, -math.inf):
            assert _error(ctx, op, args | {name: x})["error"] in ("E_SCHEMA", "E_INVALID_ARG"), name


def _mutate(value: Any, rng: random.Random) -> Any:
    choice = rng.randrange(8)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice(["", "x" * 300, "u1", "∞", "1e999"])
    if choice == 2:
        return rng.choice([-1, 0, 2**63, -(2**70), 10**30])
    if choice == 3:
        return rng.choice([0.5, -0.0, 1e308, math.nan])
    if choice == 4:
        return [value, value]
    if choice == 5:
        return {"k": value}
    if choice == 6:
        return rng.choice([True, False])
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        return value | {key: _mutate(value[key], rng)}
    return []


def _one_fault(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``args`` with one field dropped or replaced by a mutated value."""
    out = dict(args)
    key = rng.choice(sorted(out))
    if rng.random() < 0.2:
        out.pop(key)
    else:
        out[key] = _mutate(out[key], rng)
    return out


@pytest.mark.parametrize("op", OPS)
def test_a_single_fault_gets_the_oracles_code(env, op: str) -> None:
    """One bad field: the fast path and the oracle agree on the error code (or on the payload).

    With several bad fields the fast path reports the most basic problem (E_SCHEMA before E_INVALID_ARG
    before E_NOT_FOUND) while the oracle reports the first it meets, so only single faults are compared.
    """
    ctx, tts, store = env
    oracle = OracleStore(*store.public_rows())
    rng = random.Random(7)
    codes = [compare(ctx, oracle, op, _one_fault(_valid(op, 300 + i, tts), rng)) for i in range(N_CASES)]
    assert any(c != "ok" for c in codes)


@pytest.mark.parametrize("op", OPS)
def test_mutated_arguments_never_raise_raw_exceptions(env, op: str) -> None:
    ctx, tts, store = env
    digest_before = store.digest()
    rng = random.Random(hash(op) & 0xFFFF)
    outcomes: dict[str, int] = {}
    for i in range(N_CASES):
        args = _valid(op, 100 + i, tts)
        for _ in range(rng.randint(1, 3)):
            if args and rng.random() < 0.2:
                args.pop(rng.choice(sorted(args)))
            elif args:
                key = rng.choice(sorted(args))
                args[key] = _mutate(args[key], rng)
        try:
            env_out = call(ctx, op, args, budget_s=5.0)
            assert env_out["op"] == op
            outcomes["ok"] = outcomes.get("ok", 0) + 1
        except TGMSError as exc:
            err = exc.to_dict()
            assert err["error"] in DESIGN_CODES, (args, err)
            json.dumps(err)
            outcomes[err["error"]] = outcomes.get(err["error"], 0) + 1
    assert sum(v for k, v in outcomes.items() if k != "ok") > 0, outcomes
    assert store.digest() == digest_before  # a refused call changes nothing
