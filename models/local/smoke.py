"""One real round trip through a local server: start, one short completion via ChatClient, stop.

``tgms local setup`` runs it because some failures only show there: a llama.cpp built with native CPU
flags loads fine and dies on its first prompt (AMX instructions on VMs without AMX).
"""

from __future__ import annotations

import time
from typing import Any

from tgms.models.client import ChatClient
from tgms.models.local.server import LocalServer, ServerSpec

PROMPT = [{"role": "user", "content": "Say hello."}]


def smoke(spec: ServerSpec, *, max_tokens: int = 8) -> dict[str, Any]:
    """Start the server, send one completion, stop it; the timings and the reply (raises on failure)."""
    started = time.monotonic()
    with LocalServer(spec) as server:
        ready_s = time.monotonic() - started
        with ChatClient(server.endpoint(max_tokens=max_tokens, max_retries=0, timeout_s=300)) as client:
            completion = client.complete(PROMPT)
        log = str(server.log_path)
    return {
        "startup_s": round(ready_s, 2),
        "latency_s": round(completion.latency_s, 2),
        "reply": completion.text,
        "completion_tokens": completion.completion_tokens,
        "log": log,
    }
