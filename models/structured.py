"""The JSON-schema response format in the form each server accepts.

They differ: vLLM and OpenAI take ``{"type": "json_schema", "json_schema":
{"name", "schema", "strict"}}``; llama.cpp's server enforces ``{"type": "json_object", "schema": ...}`` and
answers HTTP 500 to the ``json_schema`` form; vLLM ignores a schema given in the ``json_object`` form.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.api import InvalidArgError

SCHEMA_NAME = "answer"


def response_format_for(flavour: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` field that makes a server of this flavour enforce ``schema``."""
    if flavour in ("vllm", "openai"):
        return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True}}
    if flavour == "llamacpp":
        return {"type": "json_object", "schema": schema}
    raise InvalidArgError(
        f"unknown structured-output flavour {flavour!r}", allowed=["vllm", "llamacpp", "openai"]
    )
