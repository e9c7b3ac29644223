"""The model options shared by ``tgms ask`` and ``tgms systems run``, and the endpoint they open.

``--model local`` (the default) starts the project's local CPU server (llama.cpp unless ``--local-engine
vllm``) on 127.0.0.1 and stops it when the command ends, on an error or on Ctrl-C. Any other ``--model
NAME`` is a model served at ``--api-base URL`` (repeat it, or give a comma list, for replicas): a user's
vLLM cluster or any OpenAI-compatible server is a flag, not a code change. Responses are cached under
``$TGMS_CACHE/responses`` unless ``--no-cache``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from tgms.engine.api import InvalidArgError
from tgms.models.config import (
    EndpointConfig,
    GenerationConfig,
    ServingConfig,
    endpoint_config,
    with_generation,
)
from tgms.models.local.paths import cache_root
from tgms.pipeline.console import progress
from tgms.pipeline.inputs import add_seconds, add_whole, fspath

LOCAL_WINDOWS = {"llamacpp": 8192, "vllm": 8192}  # the context each local server is started with


def add_endpoint_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument(
        "--model", default="local", help="'local' (default: a local CPU server) or a served model name"
    )
    g.add_argument(
        "--local-engine",
        choices=sorted(LOCAL_WINDOWS),
        default="llamacpp",
        help="the local server (default llamacpp)",
    )
    g.add_argument(
        "--api-base", action="append", default=[], metavar="URL", help="replica root URL (repeatable)"
    )
    g.add_argument(
        "--flavour", choices=["vllm", "llamacpp", "openai"], default="vllm", help="structured-output form"
    )
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    add_whole(g, "--max-tokens", 1, 1 << 20, default=512, help="per completion (default 512)")
    add_whole(g, "--context-window", 256, 1 << 24, default=None, help="the served window in tokens")
    add_seconds(g, "--timeout", default=300.0, help="per request, seconds (default 300)")
    g.add_argument(
        "--cache-dir", type=fspath, default=None, help="response cache (default $TGMS_CACHE/responses)"
    )
    g.add_argument("--no-cache", action="store_true", help="send every request (no response cache)")


@dataclass(frozen=True)
class Endpoint:
    config: EndpointConfig
    #: what the client asks with (``config`` carries the same settings); a command's seed or token limit
    #: is ``generation.model_copy(update=...)``
    generation: GenerationConfig


def _urls(values: list[str]) -> tuple[str, ...]:
    return tuple(u.strip() for v in values for u in v.split(",") if u.strip())


@contextmanager
def open_endpoint(args: argparse.Namespace) -> Iterator[Endpoint]:
    """The endpoint the options name; a local server started here is stopped on leaving (errors, Ctrl-C)."""
    cache = None if args.no_cache else Path(args.cache_dir or cache_root() / "responses")
    if args.model == "local":
        if args.api_base:
            raise InvalidArgError("--api-base names a remote server: give --model NAME with it, not local")
        from tgms.models.local import start_local

        progress(f"starting the local {args.local_engine} server (stopped when this command ends) ...")
        with start_local(args.local_engine) as server:
            base = server.endpoint()  # the server's model id, flavour and concurrency
            window = args.context_window or LOCAL_WINDOWS[args.local_engine]
            gen = GenerationConfig(model=base.model, max_tokens=args.max_tokens, flavour=base.flavour,
                                   max_model_len=window)  # fmt: skip
            cfg = with_generation(replace(base, timeout_s=args.timeout, cache_dir=cache), gen)
            progress(f"local model {cfg.model} ready at {cfg.base_urls[0]}")
            yield Endpoint(cfg, gen)
        return
    urls = _urls(args.api_base)
    if not urls:
        raise InvalidArgError(f"--model {args.model} needs --api-base URL (the server that serves it)")
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    if args.api_key_env and key is None:
        raise InvalidArgError(f"the environment variable {args.api_key_env} is not set")
    gen = GenerationConfig(model=args.model, max_tokens=args.max_tokens, flavour=args.flavour,
                           max_model_len=args.context_window or 8192)  # fmt: skip
    cfg = endpoint_config(gen, ServingConfig(timeout_s=args.timeout), urls, api_key=key, cache_dir=cache)
    yield Endpoint(cfg, gen)
