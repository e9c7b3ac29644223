"""The dataset card: built from the store's statistics, deterministic, and short."""

from __future__ import annotations

from tests.pipeline.systems.conftest import SmallSuite
from tgms.engine.api import OpContext, Store
from tgms.pipeline.systems.card import card_facts, dataset_card


def test_the_card_states_the_stores_facts_and_is_deterministic(cm_small: SmallSuite) -> None:
    with Store.open(cm_small.store_dir, read_only=True) as store:
        card = dataset_card(store, "collegemsg")
        again = dataset_card(store, "collegemsg")
        stats = store.stats()
        uids = OpContext(store).uids()[:3]
        facts = card_facts(store, "collegemsg")
    assert card == again
    assert card.startswith("Dataset: collegemsg,")
    assert f"Node uids look like: {', '.join(uids)}." in card
    assert f"{stats['nodes_current']} nodes, {stats['edge_versions_current']} edges" in card
    assert f"({stats['extent']['vt_min']} µs)" in card and f"({stats['extent']['vt_max']} µs)" in card
    assert "Relation types: msg." in card
    assert str(stats["last_tt"]) not in card and facts["last_tt"] == stats["last_tt"]
    assert len(card) < 400
