"""The systems the paper compares (DESIGN §4): ``tgms``, ``vector_rag``, ``static_graph_rag``,
``text_to_cypher``. Importing this package registers them in :data:`pipeline.systems.base.SYSTEMS`."""

from pipeline.systems import static_graph_rag  # noqa: F401  (registers the system)
from pipeline.systems import text_to_cypher  # noqa: F401
from pipeline.systems import vector_rag  # noqa: F401
