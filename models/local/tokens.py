"""Token counts with SmolLM2's own tokenizer, offline, in this process.

The planner's prompt must fit the served context (8k on both local servers; 4k if vLLM is served with
``--max-model-len 4096``); only the model's own tokenizer measures that honestly. llama.cpp loads the
GGUF's vocabulary alone (``vocab_only``: no weights, a few MB, ~0.1 s) and the object is kept for the
process. vLLM serves a conversion of the same GGUF, so the same vocabulary counts for both servers.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from tgms.models.local.llamacpp import missing_package, smollm2_gguf

_lock = threading.RLock()  # a llama.cpp context is not documented as thread-safe
_loaded: dict[Path, Any] = {}  # model path -> its vocabulary-only Llama, kept for the process


def _vocab(model_path: Path) -> Any:
    with _lock:
        if model_path not in _loaded:
            if importlib.util.find_spec("llama_cpp") is None:
                raise missing_package("llama-cpp-python", "counting tokens with the local model's tokenizer")
            import llama_cpp

            if not _loaded:
                atexit.register(_close_all)
            with _quiet_stderr():  # llama.cpp's C code warns about the (absent) context even when quiet
                _loaded[model_path] = llama_cpp.Llama(
                    model_path=str(model_path), vocab_only=True, verbose=False
                )
        return _loaded[model_path]


def _close_all() -> None:
    """Free the vocabularies while llama_cpp is intact (its ``__del__`` fails at interpreter teardown)."""
    with _lock:
        for vocab in _loaded.values():
            vocab.close()
        _loaded.clear()


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (C code writes there directly, past ``sys.stderr``)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def count_tokens(text: str, *, model_path: Path | None = None) -> int:
    """Tokens of ``text`` alone (no BOS, special tokens such as ``<|im_start|>`` parsed as such)."""
    vocab = _vocab(Path(model_path) if model_path is not None else smollm2_gguf())
    with _lock:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))


def render_chat(messages: list[dict[str, Any]], *, model_path: Path | None = None) -> str:
    """The prompt text the server builds from ``messages``: the GGUF's own chat template, rendered."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    vocab = _vocab(Path(model_path) if model_path is not None else smollm2_gguf())
    template = vocab.metadata.get("tokenizer.chat_template")
    if not template:
        raise ValueError("the GGUF carries no chat template")
    eos = vocab._model.token_get_text(vocab.token_eos())
    bos = vocab._model.token_get_text(vocab.token_bos())
    formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
    # llama-cpp-python types the messages as its own TypedDicts: the same role/content dicts as ours
    return str(formatter(messages=cast(Any, messages)).prompt)


def count_chat_tokens(messages: list[dict[str, Any]], *, model_path: Path | None = None) -> int:
    """Tokens of a whole chat prompt as the server sees it (template, roles, generation prompt)."""
    return count_tokens(render_chat(messages, model_path=model_path), model_path=model_path)
