"""The registry's own contracts: every family module loads or the import error says which did not, and
the one choice validator (``OneOf``) behaves the same in every args model that uses it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tgms.engine.errors import TGMSError
from tgms.engine.operators import registry
from tgms.engine.operators.base import OneOf, parse_args
from tgms.engine.operators.registry import REGISTRY, get_operator, load_all
from tgms.engine.operators.schemas import args_schema

load_all()

#: (operator, the choice argument, a valid value, the args around it)
CHOICES: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "burst_detection",
        "method",
        "ratio",
        {"target": "global", "window": {"t_a": 0, "t_b": 10}, "stride": 1},
    ),
    ("count_temporal_motifs", "motif", "M_path_3", {"delta": 1, "window": {"t_a": 0, "t_b": 10}}),
    ("graph_metric_timeseries", "metric", "node_count", {"window": {"t_a": 0, "t_b": 10}, "stride": 1}),
    ("temporal_reachability", "direction", "in", {"src": "a", "window": {"t_a": 0, "t_b": 10}}),
    ("co_active", "allen_relation", "during", {"a_spec": {}, "b_spec": {}}),
]


def _one_of(model: type[BaseModel], name: str) -> OneOf:
    (mark,) = [m for m in model.model_fields[name].metadata if isinstance(m, OneOf)]
    return mark


@pytest.mark.parametrize(("op", "name", "good", "rest"), CHOICES)
def test_one_of_checks_value_and_type_and_lists_the_choices(
    op: str, name: str, good: str, rest: dict[str, Any]
) -> None:
    spec = get_operator(op)
    choices = list(_one_of(spec.args, name).choices)
    assert args_schema(spec)["properties"][name]["enum"] == choices and good in choices
    assert getattr(parse_args(spec.args, {**rest, name: good}, op), name) == good
    with pytest.raises(TGMSError) as bad:
        parse_args(spec.args, {**rest, name: "bogus"}, op)
    assert bad.value.code == "E_INVALID_ARG" and bad.value.details["field"] == name
    assert bad.value.message == f"{op}: {name}: {name} must be one of {choices} (got 'bogus')"
    with pytest.raises(TGMSError) as typed:
        parse_args(spec.args, {**rest, name: 7}, op)
    assert typed.value.code == "E_SCHEMA"


def test_every_operator_module_is_loaded() -> None:
    assert {s.family for s in REGISTRY.values()} <= set(registry.FAMILY_MODULES) | {"metrics"}
    assert len(REGISTRY) >= len(registry.OPERATOR_ORDER)


def test_a_missing_family_module_is_an_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "FAMILY_MODULES", (*registry.FAMILY_MODULES, "no_such_family"))
    with pytest.raises(ModuleNotFoundError, match=r"engine\.operators\.no_such_family"):
        load_all()


def test_registered_restores_the_registry() -> None:
    before = dict(REGISTRY)
    with registry.registered():
        REGISTRY.pop("compute")
    assert before == REGISTRY
