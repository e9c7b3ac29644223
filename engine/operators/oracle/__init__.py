"""Independent brute-force oracles of the thirteen temporal operators (the reference semantics).

Plain Python over the full list of versions; no code is shared with the fast operator path. Each oracle is
``oracle_<op>(store: OracleStore, args: dict) -> dict`` and returns the full, unpaginated payload (see
``docs/operators.md``); :func:`engine.operators.oracle.paging.page` cuts pages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tgms.engine.operators.oracle.belief import oracle_belief_changes
from tgms.engine.operators.oracle.compute import oracle_compute
from tgms.engine.operators.oracle.events import oracle_aggregate_events, oracle_list_events
from tgms.engine.operators.oracle.evolution import oracle_co_active, oracle_neighborhood_evolution
from tgms.engine.operators.oracle.history import (
    oracle_diff_snapshots,
    oracle_entity_history,
    oracle_snapshot_subgraph,
)
from tgms.engine.operators.oracle.longest_path import oracle_longest_temporal_path
from tgms.engine.operators.oracle.metrics import oracle_burst_detection, oracle_graph_metric_timeseries
from tgms.engine.operators.oracle.motifs import (
    oracle_count_temporal_motifs,
    oracle_find_temporal_motif_instances,
)
from tgms.engine.operators.oracle.paging import page, paginate
from tgms.engine.operators.oracle.resolve import oracle_resolve_entities
from tgms.engine.operators.oracle.sequences import oracle_next_event
from tgms.engine.operators.oracle.static_graph import oracle_connected_components, oracle_hop_distance
from tgms.engine.operators.oracle.store import OracleStore
from tgms.engine.operators.oracle.traversal import oracle_temporal_paths, oracle_temporal_reachability

Oracle = Callable[[OracleStore, dict[str, Any]], dict[str, Any]]

ORACLES: dict[str, Oracle] = {
    "entity_history": oracle_entity_history,
    "snapshot_subgraph": oracle_snapshot_subgraph,
    "diff_snapshots": oracle_diff_snapshots,
    "temporal_reachability": oracle_temporal_reachability,
    "temporal_paths": oracle_temporal_paths,
    "count_temporal_motifs": oracle_count_temporal_motifs,
    "find_temporal_motif_instances": oracle_find_temporal_motif_instances,
    "graph_metric_timeseries": oracle_graph_metric_timeseries,
    "burst_detection": oracle_burst_detection,
    "neighborhood_evolution": oracle_neighborhood_evolution,
    "co_active": oracle_co_active,
    "resolve_entities": oracle_resolve_entities,
    "compute": oracle_compute,
    "belief_changes": oracle_belief_changes,
    "longest_temporal_path": oracle_longest_temporal_path,
    "list_events": oracle_list_events,
    "aggregate_events": oracle_aggregate_events,
    "connected_components": oracle_connected_components,
    "hop_distance": oracle_hop_distance,
    "next_event": oracle_next_event,
}

__all__ = ["ORACLES", "Oracle", "OracleStore", "page", "paginate"]
