"""Serving the engine's tools to agents: the MCP binding (:mod:`pipeline.serve.mcp_server`, needs the
``mcp`` extra) behind ``tgms serve``."""
