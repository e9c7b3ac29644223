"""The systems' prompt builders, registered in :mod:`models.prompt_builders` (docs/security.md).

Each entry builds what a system sends to the model with the fixture string ``s`` in every stored-string
slot: a latest state (:func:`fixture_latest`) whose uids, relation types and edge properties hold ``s``,
the dataset card of a store whose uids and relation types hold ``s``, Cypher result rows holding ``s``,
and ``s`` as the question. The functions called are the ones the systems call, so a builder that stops
fencing something is caught by ``tests/redteam/``.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from tgms.models.answerer import answer_messages
from tgms.models.planner import PlanTask, first_messages
from tgms.models.prompt_builders import PromptBuilder, register, storable
from tgms.pipeline.systems import static_graph_rag, text_to_cypher, vector_rag
from tgms.pipeline.systems.card import card_text
from tgms.pipeline.systems.kuzu_graph import rel_tables, schema_text
from tgms.pipeline.systems.latest import LATEST_COLUMNS, LatestState

T0 = 1082040961000000  # a CollegeMsg time (µs)


def fixture_latest(s: str) -> LatestState:
    """A latest state of four events whose uids, relation types, property keys and values hold ``s``."""
    s = storable(s)
    rows = [
        (s, "n1", s, T0, T0 + 1, json.dumps({s: s, "note": s})),
        ("n1", s, "msg", T0 + 10, T0 + 11, "{}"),
        ("n1", "n2", "msg", T0 + 20, T0 + 21, json.dumps({"text": s})),
        (s, s, s, T0 + 30, T0 + 90, json.dumps({"w": 1})),
    ]
    cols = {name: [r[i] for r in rows] for i, name in enumerate(LATEST_COLUMNS)}
    return LatestState(pa.table(cols), "fixture")


def fixture_card(s: str) -> str:
    """The dataset card of a store whose dataset name, first uids and relation types hold ``s``."""
    s = storable(s)
    facts = {
        "dataset": s,
        "uid_examples": [s, "n1", s],
        "nodes": 3,
        "edge_versions": 4,
        "rel_types": [(s, 2), ("msg", 2)],
        "vt_min": T0,
        "vt_max": T0 + 90,
        "last_tt": T0,
    }
    return card_text(facts)


def _vector_rag(s: str) -> list[dict[str, Any]]:
    latest = fixture_latest(s)
    texts = vector_rag.chunk_texts(latest, 2)
    user = vector_rag.answer_user(texts, list(range(len(texts))), s, vector_rag.chunk_limit(texts))
    return answer_messages(
        system=vector_rag.system_prompt(latest), user=user, kind="count", with_claims=False
    )


def _static_graph_rag(s: str) -> list[dict[str, Any]]:
    latest = fixture_latest(s)
    graph = static_graph_rag.PairGraph(latest)
    seeds = [storable(s), "n1", "n404"]
    pairs, total = graph.select(seeds, 2)
    lines = static_graph_rag.edge_lines(graph, pairs)
    missing = [u for u in seeds if u not in graph.incident]
    user = static_graph_rag.answer_user(seeds, missing, lines, len(pairs), total, s)
    return answer_messages(
        system=static_graph_rag.system_prompt(latest), user=user, kind="count", with_claims=False
    )


def _cypher_first(s: str) -> list[dict[str, Any]]:
    latest = fixture_latest(s)
    system = text_to_cypher.system_prompt(latest, schema_text(rel_tables(latest)))
    return text_to_cypher.query_messages(system, s)


def _cypher_answer(s: str) -> list[dict[str, Any]]:
    rows = {"columns": [storable(s), "n"], "rows": [[storable(s), 1], ["n1", 2]], "truncated": False}
    user = text_to_cypher.answer_user(s, rows, s)
    return answer_messages(system=text_to_cypher.ANSWER_SYSTEM, user=user, kind="count", with_claims=False)


register(
    PromptBuilder(
        "tgms.planner_with_card",
        lambda s: first_messages(PlanTask("t/fixture", s, (storable(s),), "count", fixture_card(s))),
        slots="the dataset card (dataset name, uid examples, relation types), input uids, question",
    )
)
register(
    PromptBuilder(
        "vector_rag.answer",
        _vector_rag,
        slots="event chunks (uids, relation types, property keys and values), store description, question",
    )
)
register(
    PromptBuilder(
        "static_graph_rag.answer",
        _static_graph_rag,
        slots="nodes of interest, missing nodes, edge list, store description, question",
    )
)
register(
    PromptBuilder(
        "text_to_cypher.query",
        _cypher_first,
        slots="store description and Kùzu schema (relation types, property names), question",
    )
)
register(
    PromptBuilder(
        "text_to_cypher.repair",
        lambda s: text_to_cypher.repair_messages(_cypher_first("How many?"), "{}", s),
        slots="a query's problem (a Kùzu error quoting the query)",
    )
)
register(
    PromptBuilder(
        "text_to_cypher.answer",
        _cypher_answer,
        slots="the query echoed, its result columns and rows, question",
    )
)
