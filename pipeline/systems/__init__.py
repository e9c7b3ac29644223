"""The systems the paper compares (DESIGN §4): ``tgms``, ``vector_rag``, ``static_graph_rag``,
``text_to_cypher``. Importing this package registers them in :data:`pipeline.systems.base.SYSTEMS`."""

import pipeline.systems.static_graph_rag
import pipeline.systems.text_to_cypher
import pipeline.systems.vector_rag  # noqa: F401
