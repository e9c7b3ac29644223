"""The engine's MCP tool layer, free of any SDK: the tool list generated from the operator registry (plus
the plan, claim and write tools) and a thread-safe ``call(name, arguments)`` that returns JSON or the
structured error. The SDK binding and the ``tgms serve`` command live above the engine
(``pipeline/serve/``, ``pipeline/cli/serve.py``), since the engine imports no MCP code.

- :mod:`engine.mcp.definitions`: the tools and their argument models;
- :mod:`engine.mcp.pool`: one store session per call in flight (concurrency), exclusive writes;
- :mod:`engine.mcp.toolserver`: :class:`ToolServer` and :class:`ToolResult` (dispatch, error mapping).
"""

from tgms.engine.mcp.definitions import EXTRA_TOOL_NAMES, tool_list
from tgms.engine.mcp.toolserver import ToolResult, ToolServer

__all__ = ["EXTRA_TOOL_NAMES", "ToolResult", "ToolServer", "tool_list"]
