"""A call's ``args_echo`` (engine/operators/envelope.py: ``echo_args``) is pydantic's JSON dump of the
validated arguments, canonical, whichever way it is built: a long list of plain values is canonicalized
as it is (no second pass through the dump), anything ``canonicalize`` refuses goes through the dump."""

from __future__ import annotations

import operator
from typing import Any

import pytest
from pydantic import BaseModel, Field

from tgms.engine.canonical import canonicalize, dumps_canonical
from tgms.engine.operators.base import parse_args
from tgms.engine.operators.envelope import _KEEPS_ELEMENTS, BIG_LIST, echo_args
from tgms.engine.operators.registry import get_operator, load_all

N = BIG_LIST + 5


def _dump(op: str, raw: dict[str, Any], *, with_raw: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    load_all()
    args = parse_args(get_operator(op).args, raw, op)
    echo = echo_args(args, raw if with_raw else None)
    return echo, canonicalize(args.model_dump(mode="json", by_alias=True))


@pytest.mark.parametrize(
    "raw",
    [
        {"fn": "median", "input": list(range(N))},
        {"fn": "median", "input": [i / 3 for i in range(N)]},  # floats: canonical (9 decimals) either way
        {"fn": "sum", "input": [0.1 + 0.2] * N, "limit": 5},
        {"fn": "count", "input": [{"src": f"n{i}", "t": i, "w": None} for i in range(N)]},
        {"fn": "count", "input": [[i, "x"] for i in range(N)]},  # nested lists: walked, not copied
        {"fn": "count", "input": [True, None, "a", 1, 2.5] * (N // 5 + 1)},
        {"fn": "median", "input": list(range(BIG_LIST - 1))},  # short: the dump as before
    ],
    ids=["ints", "floats", "sums", "rows", "pairs", "mixed", "short"],
)
@pytest.mark.parametrize("with_raw", [False, True], ids=["validated", "raw-list"])
def test_the_echo_is_the_canonical_dump(raw: dict[str, Any], with_raw: bool) -> None:
    """With the raw arguments (as run_call passes them) the raw list is canonicalized instead of the
    validated copy: the same echo."""
    echo, dumped = _dump("compute", raw, with_raw=with_raw)
    assert echo == dumped
    assert list(echo) == list(dumped)  # the same key order too
    assert dumps_canonical(echo) == dumps_canonical(dumped)


def test_a_list_any_field_keeps_every_element_it_was_given() -> None:
    """echo_args trusts a ``list[Any]`` field (compute's ``input``) to hold the raw list's very elements
    without checking each (envelope._KEEPS_ELEMENTS): pydantic copies the list, never an element."""
    load_all()
    given = [True, None, "a", 1, 2.5, {"k": [1]}, [1, 2], 10**30, -0.0] * 200
    args = parse_args(get_operator("compute").args, {"fn": "count", "input": given}, "compute")
    assert get_operator("compute").args.model_fields["input"].annotation in _KEEPS_ELEMENTS
    assert args.input is not given and len(args.input) == len(given)
    assert all(map(operator.is_, args.input, given))


def test_a_long_list_canonicalize_refuses_goes_through_the_dump() -> None:
    """A NaN is refused by canonicalize; the echo then is what the dump gives (pydantic writes null)."""
    raw = {"fn": "count", "input": [1.0] * N + [float("nan")]}
    echo, dumped = _dump("compute", raw)
    assert echo == dumped
    assert echo["input"][-1] is None


class _Part(BaseModel):
    as_: str = Field(alias="as")


class _Args(BaseModel):
    parts: list[_Part]
    values: list[Any]
    named: list[int] = Field(alias="Named")


def test_a_long_list_of_models_is_dumped_by_alias() -> None:
    """A typed list (validated into models, spelled by alias) is not plain values: it goes through the
    dump; a plain list under an aliased field is echoed under the alias, in the fields' order."""
    args = _Args.model_validate(
        {"parts": [{"as": f"c{i}"} for i in range(N)], "values": list(range(N)), "Named": list(range(N))}
    )
    echo = echo_args(args)
    dumped = canonicalize(args.model_dump(mode="json", by_alias=True))
    assert echo == dumped
    assert list(echo) == ["parts", "values", "Named"]
    assert echo["parts"][7] == {"as": "c7"}
