"""A compute fn or aggregate named as elsewhere (``sort``, ``avg``) is refused with the way to write it here;
every way named is one that exists, and no name it answers for is itself a real fn (it would never show)."""

from __future__ import annotations

import re

import pytest

from tgms.engine.errors import TGMSError
from tgms.engine.operators import compute_instead
from tgms.engine.operators.compute_fns import FNS
from tgms.engine.operators.compute_group import GROUP_AGGS
from tgms.engine.operators.compute_rows import EXPR_OPS
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.registry import load_all
from tgms.engine.store import Store

_WORD = re.compile(r"[a-z_]+")


def _first_words(way: str) -> list[str]:
    """The fn, aggregate and op names a way mentions."""
    return [w for w in _WORD.findall(way) if w in FNS or w in GROUP_AGGS or w in EXPR_OPS]


@pytest.mark.parametrize(
    ("table", "real"),
    [(compute_instead._FN, FNS), (compute_instead._AGG, GROUP_AGGS), (compute_instead._OP, EXPR_OPS)],
)
def test_every_way_names_real_fns_and_answers_only_for_names_that_do_not_exist(
    table: dict[str, str], real: tuple[str, ...]
) -> None:
    for name, way in table.items():
        assert name not in real, name
        first = _WORD.findall(way)[0]
        assert first in real or (first == "op" and _WORD.findall(way)[1] in real), (name, way)
        assert _first_words(way), (name, way)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory):
    load_all()
    store = Store.create(tmp_path_factory.mktemp("instead") / "s", "duckdb")
    yield OpContext(store)
    store.close()


def test_the_refusal_names_the_way(ctx: OpContext) -> None:
    with pytest.raises(TGMSError) as err:
        call(ctx, "compute", {"fn": "sort", "input": [{"a": 1}], "field": "a"})
    assert err.value.code == "E_INVALID_ARG" and "topk with fraction: 1" in err.value.message
    aggs = [{"fn": "AVG", "field": "a"}]
    with pytest.raises(TGMSError) as err:
        call(ctx, "compute", {"fn": "group", "input": [{"a": 1}], "by": "a", "aggregates": aggs})
    assert "(for AVG: mean)" in err.value.message
    with pytest.raises(TGMSError) as err:  # a name with no way: the list alone
        call(ctx, "compute", {"fn": "frobnicate", "input": [1]})
    assert err.value.message.endswith("'record']")
    with pytest.raises(TGMSError) as err:
        percent = {"op": "%", "left": "a", "right": 2}
        call(ctx, "compute", {"fn": "derive", "input": [{"a": 1}], "expr": percent, "as": "r"})
    assert "(for %: mod)" in err.value.message
