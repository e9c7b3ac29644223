"""The dataset card: a few lines about a store that every system may put in its prompt.

What a model needs to write a sensible query and cannot guess: the dataset's name, what node uids look
like, how big the graph is, its relation types, and the valid-time extent in both UTC and epoch
microseconds (the engine's unit). It is short on purpose: every digit is a token of a small model's window
(the transaction-time facts stay in :func:`card_facts`; questions name the times they ask about). Built
from the store's own statistics; deterministic for a given store state (no wall clock, no ordering from a
hash), so a prompt that contains it is cacheable.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.api import OpContext, Store, us_to_iso
from tgms.models.prompting import clean

UID_EXAMPLES = 3
#: a stored name (uid, relation type, dataset) in the card, and how many relation types it lists
NAME_LIMIT = 64
MAX_REL_TYPES = 20


def card_facts(store: Store, dataset: str | None = None) -> dict[str, Any]:
    """The card's content as data (tests and reports read it)."""
    stats = store.stats()
    extent = stats.get("extent") or {}
    uids = OpContext(store).uids()[:UID_EXAMPLES]
    return {
        "dataset": dataset or "unnamed",
        "uid_examples": uids,
        "nodes": stats.get("nodes_current"),
        "edge_versions": stats.get("edge_versions_current"),
        "edge_versions_believed": stats.get("edge_versions"),
        "rel_types": sorted((stats.get("rel_types") or {}).items()),
        "vt_min": extent.get("vt_min"),
        "vt_max": extent.get("vt_max"),
        "last_tt": stats.get("last_tt"),
    }


def _when(us: int | None) -> str:
    return "unknown" if us is None else f"{us_to_iso(us)} ({us} µs)"


def card_text(facts: dict[str, Any]) -> str:
    """The card's lines. Uids, relation types and the dataset name are stored strings: each is cleaned and
    cut (:func:`models.prompting.clean`) and the relation types are capped, so the facts after them
    always fit the fence the planner puts the card in (docs/security.md)."""
    names = [name for name, _ in facts["rel_types"]]
    rels = ", ".join(clean(n, NAME_LIMIT) for n in names[:MAX_REL_TYPES]) or "none"
    if len(names) > MAX_REL_TYPES:
        rels += f" and {len(names) - MAX_REL_TYPES} more"
    uids = ", ".join(clean(u, NAME_LIMIT) for u in facts["uid_examples"]) or "none"
    return "\n".join(
        [
            f"Dataset: {clean(facts['dataset'], NAME_LIMIT)}, a temporal graph of timestamped directed "
            "edges (events).",
            f"Node uids look like: {uids}.",
            f"Size: {facts['nodes']} nodes, {facts['edge_versions']} edges. Relation types: {rels}.",
            f"Valid time: from {_when(facts['vt_min'])} to {_when(facts['vt_max'])}.",
        ]
    )


def dataset_card(store: Store, dataset: str | None = None) -> str:
    """The card text of ``store`` (see the module docstring)."""
    return card_text(card_facts(store, dataset))
