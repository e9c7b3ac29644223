"""The latest state of a store, as the baselines see it (DESIGN §4, the paper's Table 3).

The three baselines get no transaction-time history: they see the edge versions the store *currently
believes* (``tt_e`` open), each with its endpoints, relation type, valid interval and properties — one row
per believed version, so a corrected event appears once, with its corrected values, and a superseded
belief does not appear at all. They are read through the public :meth:`engine.api.Store.scan_edges` with
the default :class:`engine.api.ScanFilter` (current belief), so no engine code is needed for it.

Rows come in one deterministic order — valid-from time, then source, target, relation type, discriminator,
version id — so chunk ids, edge lists and the Kùzu load are the same on every run and every backend.

Derived artefacts (embeddings, the Kùzu database) are cached on disk keyed by :func:`store_key`, the
store's content digest: a store rebuilt from the same log reuses them, a changed store never does.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tgms.engine.api import ScanFilter, Store, us_to_iso
from tgms.models.prompting import clean
from tgms.pipeline.scoring.suite import Task

#: columns of :func:`latest_edges` (``props`` is canonical JSON text, ``"{}"`` when the version has none)
LATEST_COLUMNS = ("src", "dst", "rel_type", "t", "t_end", "props")
#: a relation type's characters in the description at most
NAME_LIMIT = 64
_UID_IN_TEXT = re.compile(r"\bn\d+\b")


@dataclass(frozen=True)
class LatestState:
    """Every currently believed edge version, in time order, with uids for endpoints."""

    edges: pa.Table  # LATEST_COLUMNS
    digest: str  # the store's content digest (cache key of everything derived from it)

    @property
    def rel_types(self) -> list[str]:
        return sorted(set(self.edges["rel_type"].to_pylist()))

    def describe(self, with_times: bool = True) -> str:
        """One line saying what the data is (the baselines' dataset card); ``with_times=False`` leaves out
        the time range (``static_graph_rag`` shows no time at all). Relation types are stored strings:
        cleaned and cut here, and the callers fence the line (docs/security.md)."""
        n = self.edges.num_rows
        if n == 0:
            return "A temporal interaction graph with no edge events."
        t = self.edges["t"]
        nodes = len(set(self.edges["src"].to_pylist()) | set(self.edges["dst"].to_pylist()))
        counts = Counter(self.edges["rel_type"].to_pylist())
        kinds = ", ".join(f"{clean(k, NAME_LIMIT)} ({v})" for k, v in sorted(counts.items()))
        lo, hi = pc.min(t).as_py(), pc.max(t).as_py()
        head = (
            f"A temporal interaction graph: {n} directed edge events between {nodes} nodes (uids like n1), "
        )
        if not with_times:
            return head + f"relation types {kinds}."
        return (
            head + f"relation types {kinds}, from {us_to_iso(lo)} ({lo} µs) to {us_to_iso(hi)} ({hi} µs). "
            "Times are UTC; µs are epoch microseconds."
        )


def latest_edges(store: Store) -> pa.Table:
    """The currently believed edge versions of ``store`` as a table of :data:`LATEST_COLUMNS`."""
    raw = store.scan_edges(ScanFilter())
    uids = store.uids()
    table = pa.table(
        {
            "src": uids.take(raw["src"]),
            "dst": uids.take(raw["dst"]),
            "rel_type": raw["rel_type"],
            "t": raw["vt_s"],
            "t_end": raw["vt_e"],
            "props": pc.fill_null(raw["props"], "{}"),
            "disc": raw["disc"],
            "vid": raw["vid"],
        }
    )
    keys = [("t", "ascending"), ("src", "ascending"), ("dst", "ascending"), ("rel_type", "ascending")]
    order = pc.sort_indices(table, [*keys, ("disc", "ascending"), ("vid", "ascending")])
    return table.take(order).select(list(LATEST_COLUMNS))


def read_latest(store: Store) -> LatestState:
    return LatestState(latest_edges(store), store.digest())


def props_of(text: str | None) -> dict[str, Any]:
    return json.loads(text) if text else {}


def task_entities(task: Task) -> list[str]:
    """The task's entities: ``input_uids``, else the uids (``n123``) named in the question, in order."""
    uids = list(task.input_uids)
    if not uids:
        uids = list(dict.fromkeys(_UID_IN_TEXT.findall(task.question)))
    return uids
