"""The systems the paper compares (DESIGN §4): ``tgms``, ``vector_rag``, ``static_graph_rag``,
``text_to_cypher``. Importing this package registers them in :data:`pipeline.systems.base.SYSTEMS`."""

from tgms.pipeline.systems import static_graph_rag, text_to_cypher, tgms, vector_rag  # noqa: F401
