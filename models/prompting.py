"""Prompt hygiene shared by every LLM role: fencing untrusted data, and reading JSON out of a reply.

Stored graph content, questions and traces are *data*, never instructions (DESIGN §3.5). Every such
string enters a prompt through :func:`fence`: ``&``, ``<`` and ``>`` are escaped (so no ``</data>`` inside
can close the fence, and no tag inside can look like one of ours), it is cut to a length limit with a
visible marker, and it is wrapped in ``<data name="...">...</data>``.

Small models wrap JSON in think blocks, code fences or chatter; :func:`extract_json` finds the first
complete JSON object (or array) in a reply and raises :class:`~models.errors.ModelOutputError` (a model
failure, scored) when there is none.
"""

from __future__ import annotations

import json
import re
from typing import Any

from models.errors import ModelOutputError

#: default cap on one fenced block, in characters
DATA_LIMIT = 4000
_TRUNCATED = " …[truncated {n} chars]"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,40}$")
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def escape(text: str) -> str:
    """``&``, ``<``, ``>`` as entities: fenced data can neither close its fence nor open a tag."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fence(text: str, name: str = "data", limit: int = DATA_LIMIT) -> str:
    """``text`` escaped, cut to ``limit`` characters (with a marker saying how much was cut), fenced."""
    if not _NAME.match(name):
        raise ValueError(f"fence name {name!r} must be a short identifier")
    if len(text) > limit:
        text = text[:limit] + _TRUNCATED.format(n=len(text) - limit)
    return f'<data name="{name}">\n{escape(text)}\n</data>'


def fence_json(value: Any, name: str = "data", limit: int = DATA_LIMIT) -> str:
    """A JSON value (compact, keys sorted) fenced as data."""
    return fence(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")), name, limit)


def strip_wrappers(reply: str) -> str:
    """The reply without think blocks (closed or left open at the end)."""
    return _THINK.sub("", reply).strip()


def extract_json(reply: str) -> Any:
    """The first JSON object or array in ``reply`` (inside a code fence first, then anywhere).

    Raises :class:`ModelOutputError` with the reply's head when there is none.
    """
    body = strip_wrappers(reply)
    candidates = [m.group(1) for m in _FENCE.finditer(body)] + [body]
    decoder = json.JSONDecoder()
    for text in candidates:
        for start, ch in enumerate(text):
            if ch not in "{[":
                continue
            try:
                value, _ = decoder.raw_decode(text, start)
            except ValueError:
                continue
            if isinstance(value, (dict, list)):
                return value
    raise ModelOutputError("the reply holds no JSON object", reply_head=reply[:300])
