"""The one operator registry. Everything else (JSON Schemas, tool definitions, the planner's manual, the
declared output fields the plan verifier checks) is generated from it.

An operator family module declares each operator with :func:`operator`::

    @operator(
        name="entity_history",
        family="history",
        args=EntityHistoryArgs,      # pydantic model (extends OpArgs or PagedArgs)
        output=EntityHistoryOut,     # pydantic model; its field names are the declared outputs
        cost=entity_history_cost,    # (StoreProfile, args) -> CostEstimate
        manual="One paragraph ...",
        example={"args": {...}, "note": "..."},
    )
    def entity_history(ctx: OpContext, args: EntityHistoryArgs) -> dict: ...

The implementation returns the full, unpaginated payload; the envelope layer pages, canonicalizes and
digests it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from engine.errors import NotFoundError

if TYPE_CHECKING:
    from engine.operators.context import OpContext
    from engine.operators.cost import CostEstimate, StoreProfile

Impl = Callable[["OpContext", Any], dict[str, Any]]
CostFn = Callable[["StoreProfile", Any], "CostEstimate"]


@dataclass(frozen=True)
class OperatorSpec:
    name: str
    family: str
    args: type[BaseModel]
    output: type[BaseModel]
    cost: CostFn
    manual: str
    example: dict[str, Any]
    impl: Impl
    #: whether the implementation reads the believed-edge arrays (most do): the envelope then loads them
    #: before pricing, so the profile comes from what the call loads anyway instead of extra aggregates
    edge_arrays: bool = True

    @property
    def declared_outputs(self) -> tuple[str, ...]:
        """The output field names a ``$ref`` may name (DESIGN §3.4)."""
        return tuple(self.output.model_fields)

    @property
    def lists(self) -> tuple[str, ...]:
        """Pageable lists: outputs ``L`` with an ``L_total`` companion, ``rows`` first."""
        names = [f for f in self.output.model_fields if f"{f}_total" in self.output.model_fields]
        return tuple(sorted(names, key=lambda k: (k != "rows", k)))

    @property
    def summary(self) -> str:
        return self.manual.strip().split(". ")[0].rstrip(".") + "."


REGISTRY: dict[str, OperatorSpec] = {}


def operator(
    *,
    name: str,
    family: str,
    args: type[BaseModel],
    output: type[BaseModel],
    cost: CostFn,
    manual: str,
    example: dict[str, Any],
    edge_arrays: bool = True,
) -> Callable[[Impl], Impl]:
    def register(fn: Impl) -> Impl:
        if name in REGISTRY:
            raise RuntimeError(f"operator {name!r} registered twice")
        REGISTRY[name] = OperatorSpec(name, family, args, output, cost, manual, example, fn, edge_arrays)
        return fn

    return register


def get_operator(name: str) -> OperatorSpec:
    load_all()
    spec = REGISTRY.get(name)
    if spec is None:
        raise NotFoundError(f"unknown operator {name!r}", field="op", legal=sorted(REGISTRY))
    return spec


def all_operators() -> list[OperatorSpec]:
    load_all()
    return [REGISTRY[n] for n in OPERATOR_ORDER if n in REGISTRY]


# The thirteen, in the paper's Table 1 order; one family module each group.
OPERATOR_ORDER = (
    "entity_history",
    "snapshot_subgraph",
    "diff_snapshots",
    "temporal_reachability",
    "temporal_paths",
    "count_temporal_motifs",
    "find_temporal_motif_instances",
    "graph_metric_timeseries",
    "burst_detection",
    "neighborhood_evolution",
    "co_active",
    "resolve_entities",
    "compute",
)
FAMILY_MODULES = ("history", "traversal", "motifs", "metrics", "burst", "evolution", "resolve", "compute")


def load_all() -> None:
    """Import every family module (each registers its operators on import)."""
    import importlib

    for mod in FAMILY_MODULES:
        try:
            importlib.import_module(f"engine.operators.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"engine.operators.{mod}":
                raise
