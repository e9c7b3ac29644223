"""How big a prompt is in the serving model's tokens, and whether it fits the endpoint's window.

A baseline whose context does not fit refuses honestly (status ``refused``, no model call) instead of
letting the server cut it or fail. The count is *measured* when the config names the serving model's
tokenizer (a Hugging Face tokenizer directory, e.g. the one saved beside the converted SmolLM2 weights: the
chat template is applied, so the count is what the server sees). Otherwise it is an *upper bound*: the
UTF-8 byte count of every message plus a per-message allowance for the chat template's role markers. Byte-
level BPE (GPT-2, Llama 3, SmolLM2) and SentencePiece with byte fallback never emit more tokens than bytes,
so the bound never admits a prompt that does not fit, though it may refuse one that would have fitted (by
about 3-4x on this text): the record says which method produced the number.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

#: tokens a chat template adds per message at most (role markers, separators) in the upper bound
TEMPLATE_ALLOWANCE = 16


@dataclass(frozen=True)
class PromptSize:
    chars: int
    tokens: int
    method: str  # "measured:<tokenizer>" | "upper_bound:utf8_bytes"

    def as_dict(self) -> dict[str, Any]:
        return {"prompt_chars": self.chars, "prompt_tokens": self.tokens, "token_count_method": self.method}


@lru_cache(maxsize=4)
def _tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer  # the rag extra installs it (sentence-transformers needs it)

    return AutoTokenizer.from_pretrained(path)


def preload(tokenizer: str | None) -> None:
    """Load ``tokenizer`` now (at build time), so its load is not timed as the first task's latency."""
    if tokenizer:
        _tokenizer(tokenizer)


def prompt_size(messages: list[dict[str, Any]], tokenizer: str | None = None) -> PromptSize:
    """The size of ``messages`` as sent: measured with ``tokenizer`` (a path), else an upper bound."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    if tokenizer:
        tok = _tokenizer(tokenizer)
        if getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
            n = len(ids["input_ids"] if hasattr(ids, "keys") else ids)  # transformers 5: a BatchEncoding
        else:
            n = sum(len(tok.encode(str(m.get("content", "")))) + TEMPLATE_ALLOWANCE for m in messages)
        return PromptSize(chars, n, f"measured:{tokenizer}")
    n = sum(len(str(m.get("content", "")).encode("utf-8")) + TEMPLATE_ALLOWANCE for m in messages)
    return PromptSize(chars, n, "upper_bound:utf8_bytes")


def over_window(size: PromptSize, context_window: int, max_tokens: int) -> bool:
    """True when the prompt leaves less than ``max_tokens`` of the window for the reply."""
    return size.tokens > context_window - max_tokens


def refusal(size: PromptSize, context_window: int, max_tokens: int) -> dict[str, Any]:
    """The structured error a refused task records (one shape with every other error)."""
    return {
        "error": "E_LIMIT",
        "message": "the prompt does not fit the model's context window; refused without asking the model",
        "details": {
            "prompt_tokens": size.tokens,
            "token_count_method": size.method,
            "context_window": context_window,
            "max_tokens": max_tokens,
            "budget": context_window - max_tokens,
        },
    }
