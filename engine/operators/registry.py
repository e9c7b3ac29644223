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
        traits=Traits(...),          # optional: what the checks need to know (engine.operators.traits)
    )
    def entity_history(ctx: OpContext, args: EntityHistoryArgs) -> dict: ...

The implementation returns the full, unpaginated payload; the envelope layer pages, canonicalizes and
digests it.

What the plan verifier, the executor, the reporter and the claim verifier need to know about an operator is
declared, never switched on by name: argument markers in the args model (``UidArg``, ``TimePoint``,
``EventWindow``, ``NonEmpty``, ``Operand``) and a :class:`~engine.operators.traits.Traits` on the spec
(``period``, ``reduces``, ``vacuous``, ``keeps_empty``, ``pattern_counts``, ``allen``); the vocabulary is
documented in :mod:`engine.operators.traits`. A new operator is one module: register it, and every
generated artifact and every check picks it up. :func:`registered` scopes a registration (tests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tgms.engine.errors import NotFoundError
from tgms.engine.operators.traits import NO_TRAITS, Traits

if TYPE_CHECKING:
    from tgms.engine.operators.cost import CostEstimate, StoreProfile

#: ``impl(ctx, args)``, or ``impl(ctx, args, budget_s=...)`` for a ``budgeted`` operator
Impl = Callable[..., dict[str, Any]]
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
    traits: Traits = NO_TRAITS
    #: whether the implementation re-checks its cost mid-call, once it knows its exact work: it is then
    #: called as ``impl(ctx, args, budget_s=...)`` with the call's budget (None: an unguarded call)
    budgeted: bool = False

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
    traits: Traits = NO_TRAITS,
    budgeted: bool = False,
) -> Callable[[Impl], Impl]:
    def register(fn: Impl) -> Impl:
        if name in REGISTRY:
            raise RuntimeError(f"operator {name!r} registered twice")
        REGISTRY[name] = OperatorSpec(
            name, family, args, output, cost, manual, example, fn, edge_arrays, traits, budgeted
        )
        return fn

    return register


@contextmanager
def registered() -> Iterator[None]:
    """Operators registered inside the block are unregistered when it exits (a test's toy operator);
    the operators registered before it are left as they were."""
    load_all()
    before = dict(REGISTRY)
    try:
        yield
    finally:
        REGISTRY.clear()
        REGISTRY.update(before)


def get_operator(name: str) -> OperatorSpec:
    load_all()
    spec = REGISTRY.get(name)
    if spec is None:
        raise NotFoundError(f"unknown operator {name!r}", field="op", legal=sorted(REGISTRY))
    return spec


def all_operators() -> list[OperatorSpec]:
    """The thirteen in Table 1 order, then any other registered operator in registration order."""
    load_all()
    extra = [n for n in REGISTRY if n not in OPERATOR_ORDER]
    return [REGISTRY[n] for n in (*OPERATOR_ORDER, *extra) if n in REGISTRY]


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
    # issue 17's analyst operators, after the thirteen
    "list_events",
    "aggregate_events",
    "belief_changes",
    "longest_temporal_path",
    # issue 27: the static graph of a window
    "connected_components",
    "hop_distance",
    # issue 27: per-entity event sequences
    "next_event",
)
FAMILY_MODULES = (
    "history",
    "traversal",
    "temporal_paths",
    "motifs",
    "metrics",
    "burst",
    "evolution",
    "resolve",
    "compute",
    "events",
    "belief",
    "longest_path",
    "static_graph",
    "sequences",
)


def load_all() -> None:
    """Import every family module (each registers its operators on import). A family module that is
    missing or fails to import raises: an operator silently left out would only show as E_NOT_FOUND."""
    import importlib

    for mod in FAMILY_MODULES:
        importlib.import_module(f"tgms.engine.operators.{mod}")
