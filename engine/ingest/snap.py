"""Loaders for the SNAP temporal edge lists (DESIGN §4 "Datasets").

=================  ==============================================  ===========  ==============  ========
name               file                                            columns      edge props      rel_type
=================  ==============================================  ===========  ==============  ========
``collegemsg``     ``CollegeMsg.txt[.gz]`` (space separated)       src dst ts   none            ``msg``
``bitcoin-otc``    ``soc-sign-bitcoinotc.csv[.gz]`` (comma)        src dst r ts ``{"rating"}``  ``rates``
``email-eu``       ``email-Eu-core-temporal[.prefix83k].txt[.gz]`` src dst ts   none            ``msg``
=================  ==============================================  ===========  ==============  ========

A SNAP node id ``9`` becomes uid ``n9``; seconds become microseconds; every node gets label ``user``. Rows
keep file order, exact duplicates included (the store gives them discriminators in order of appearance).
Blank lines and lines starting with ``#`` are skipped. Input may be plain text or gzip (detected by magic
bytes, not by name).

``load_dataset(name, source=None, cache_dir=None)`` reads ``source`` when given. Without one, CollegeMsg
comes from the copy packaged at ``engine/ingest/data/CollegeMsg.txt.gz`` (unless a ``cache_dir`` is named,
which then is used like for the other sets); the others come from the cache
directory (``cache_dir``, else ``$TGMS_CACHE/datasets``, else ``~/.cache/tgms/datasets``), downloaded from
SNAP first when absent (``$TGMS_SNAP_BASE_URL`` overrides the base URL). Downloads are atomic (temporary
file, integrity check, rename); failure to download is an ``E_NOT_FOUND`` error saying where to put the
file by hand.

A malformed file is refused with a structured error whose details name ``file``, ``line`` (1-based, in the
decompressed text) and ``problem``: ``E_SCHEMA`` for shape (column count, non-integer ids, non-numeric
times, empty file), ``E_INVALID_ARG`` for values out of range (negative ids or times, ratings outside
[-10, 10]). Parsing uses pyarrow's CSV reader; only a file it rejects is re-scanned line by line, to find
the first bad line (or to accept irregular but valid whitespace).
"""

from __future__ import annotations

import gzip
import http.client
import importlib.resources
import math
import os
import shutil
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from tgms.engine.errors import InvalidArgError, NotFoundError, SchemaError, TGMSError
from tgms.engine.fileio import write_atomic
from tgms.engine.ingest.events import EventFrame, make_table, props_text
from tgms.engine.timeutil import OPEN_END, US_PER_SECOND

SNAP_BASE_URL = "https://snap.stanford.edu/data/"
PACKAGED_COLLEGEMSG = "CollegeMsg.txt.gz"
_MAX_SECONDS = (OPEN_END - 1) // US_PER_SECOND
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class SnapSpec:
    """How one SNAP data set is laid out and what it becomes."""

    name: str
    filename: str  # SNAP's gzipped file name (download and cache name)
    delimiter: str
    has_rating: bool
    rel_type: str
    label: str = "user"

    @property
    def n_columns(self) -> int:
        return 4 if self.has_rating else 3

    @property
    def columns(self) -> list[str]:
        return ["src", "dst", "rating", "t"] if self.has_rating else ["src", "dst", "t"]


DATASETS: dict[str, SnapSpec] = {
    "collegemsg": SnapSpec("collegemsg", "CollegeMsg.txt.gz", " ", False, "msg"),
    "bitcoin-otc": SnapSpec("bitcoin-otc", "soc-sign-bitcoinotc.csv.gz", ",", True, "rates"),
    "email-eu": SnapSpec("email-eu", "email-Eu-core-temporal.txt.gz", " ", False, "msg"),
}

_ALIASES: dict[str, str] = {
    "college-msg": "collegemsg",
    "college_msg": "collegemsg",
    "bitcoinotc": "bitcoin-otc",
    "bitcoin_otc": "bitcoin-otc",
    "soc-sign-bitcoinotc": "bitcoin-otc",
    "email_eu": "email-eu",
    "email-eu-core-temporal": "email-eu",
}


def dataset_spec(name: str) -> SnapSpec:
    """The spec of a data set by name (case-insensitive; a few aliases accepted)."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    spec = DATASETS.get(key)
    if spec is None:
        hint = " (the synthetic generator is engine.ingest.synthetic.generate)" if key == "synthetic" else ""
        raise NotFoundError(f"unknown data set {name!r}{hint}", name=name, known=sorted(DATASETS))
    return spec


# ---- cache and download ---------------------------------------------------------------------------------
def default_cache_dir() -> Path:
    """``$TGMS_CACHE/datasets`` when TGMS_CACHE is set, else ``~/.cache/tgms/datasets``."""
    root = os.environ.get("TGMS_CACHE")
    if root:
        return Path(root) / "datasets"
    return Path.home() / ".cache" / "tgms" / "datasets"


def snap_url(name: str) -> str:
    base = os.environ.get("TGMS_SNAP_BASE_URL") or SNAP_BASE_URL
    return base.rstrip("/") + "/" + dataset_spec(name).filename


def cached_path(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the downloaded file of a data set lives (whether or not it is there yet)."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return root / dataset_spec(name).filename


def packaged_collegemsg() -> Path:
    """The gzipped CollegeMsg copy shipped inside the package."""
    return Path(str(importlib.resources.files("tgms.engine.ingest") / "data" / PACKAGED_COLLEGEMSG))


def download(
    name: str,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    url: str | None = None,
    timeout: float = 60.0,
    force: bool = False,
) -> Path:
    """Fetch a data set's gzipped file from SNAP into the cache (atomically) and return its path.

    An existing cached file is reused unless ``force``. The bytes go to a temporary file in the cache
    directory, are checked to be a complete gzip stream, and are renamed into place, so an interrupted or
    truncated download never leaves a file that looks cached.
    """
    dest = cached_path(name, cache_dir)
    if dest.exists() and not force:
        return dest
    url = url or snap_url(name)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NotFoundError(
            f"cannot create the cache directory {dest.parent}", cache_dir=str(dest.parent), reason=str(exc)
        ) from exc
    write_atomic(
        dest,
        lambda out: _fetch(url, out, timeout=timeout, dest=dest),
        check=lambda tmp: _check_gzip(tmp, url),
    )
    return dest


def _fetch(url: str, out: BinaryIO, *, timeout: float, dest: Path) -> None:
    hint = f"download {url} by hand to {dest}, or pass source=PATH"
    req = urllib.request.Request(url, headers={"User-Agent": "tgms-ingest/0.1"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            shutil.copyfileobj(resp, out, 1 << 20)
    except urllib.error.HTTPError as exc:
        raise NotFoundError(
            f"download of {url} failed with HTTP {exc.code}", url=url, status=exc.code, hint=hint
        ) from exc
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise NotFoundError(
            f"cannot download {url} (offline?): {reason}", url=url, reason=str(reason), hint=hint
        ) from exc


def _check_gzip(path: Path, url: str) -> None:
    try:
        with path.open("rb") as fh:
            if fh.read(2) != _GZIP_MAGIC:
                raise SchemaError(f"download of {url} is not a gzip file", url=url, problem="not gzip")
        with gzip.open(path, "rb") as gz:
            while gz.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error) as exc:
        raise NotFoundError(
            f"download of {url} is incomplete or corrupt: {exc}", url=url, reason=str(exc)
        ) from exc


# ---- loading --------------------------------------------------------------------------------------------
def load_dataset(
    name: str,
    source: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> EventFrame:
    """Load a SNAP data set as an :class:`EventFrame` (see the module docstring for where it comes from)."""
    return read_snap_file(source_path(name, source, cache_dir), dataset_spec(name))


def source_path(
    name: str,
    source: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The file :func:`load_dataset` reads for these arguments (downloading it into the cache if absent)."""
    spec = dataset_spec(name)
    if source is not None:
        return Path(source)
    if spec.name == "collegemsg" and cache_dir is None:
        return packaged_collegemsg()
    path = cached_path(spec.name, cache_dir)
    return path if path.exists() else download(spec.name, cache_dir)


def source_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a SNAP file's content, gunzipped when gzipped: the packaged ``.gz`` copy and the plain
    text file of the same data give the same hash (the one SNAP's text is usually cited by)."""
    import hashlib

    return hashlib.sha256(_read_bytes(Path(path))).hexdigest()


def read_snap_file(path: str | os.PathLike[str], spec: SnapSpec | str) -> EventFrame:
    """Parse one SNAP file (plain or gzip) laid out as ``spec`` into an event frame."""
    if isinstance(spec, str):
        spec = dataset_spec(spec)
    path = Path(path)
    data = _read_bytes(path)
    cols = _fast_parse(data, spec)
    if cols is None:
        cols = _slow_parse(data, spec, str(path))
    return _to_frame(cols, spec, str(path))


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise NotFoundError(f"no such file: {path}", file=str(path)) from exc
    except IsADirectoryError as exc:
        raise NotFoundError(f"not a file: {path}", file=str(path)) from exc
    except OSError as exc:
        raise NotFoundError(f"cannot read {path}: {exc}", file=str(path), reason=str(exc)) from exc
    if raw[:2] != _GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise SchemaError(
            f"{path}: not a valid gzip stream: {exc}", file=str(path), line=None, problem="bad gzip"
        ) from exc


def _strip_comments(data: bytes) -> bytes:
    if not (data.startswith(b"#") or b"\n#" in data):
        return data
    return b"\n".join(ln for ln in data.split(b"\n") if not ln.lstrip().startswith(b"#"))


def _fast_parse(data: bytes, spec: SnapSpec) -> dict[str, np.ndarray] | None:
    """pyarrow's CSV reader on a well-formed file; None whenever anything is off (then scan slowly)."""
    data = _strip_comments(data)
    if not data.strip():
        return None
    if spec.delimiter == " " and b"\t" in data:
        return None
    types = {"src": pa.int64(), "dst": pa.int64(), "t": pa.int64(), "rating": pa.float64()}
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data),
            read_options=pacsv.ReadOptions(column_names=spec.columns, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter=spec.delimiter, quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types={c: types[c] for c in spec.columns}),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    if table.num_rows == 0 or any(table.column(c).null_count for c in spec.columns):
        return None
    cols = {c: table.column(c).to_numpy() for c in spec.columns}
    if (cols["src"] < 0).any() or (cols["dst"] < 0).any():
        return None
    if (cols["t"] < 0).any() or (cols["t"] > _MAX_SECONDS).any():
        return None
    if spec.has_rating:
        r = cols["rating"]
        if not np.isfinite(r).all() or (np.abs(r) > 10).any():
            return None
    return cols


def _slow_parse(data: bytes, spec: SnapSpec, file: str) -> dict[str, np.ndarray]:
    """Line-by-line parse: the definition of the format, and the source of exact error positions."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data[: exc.start].count(b"\n") + 1
        raise SchemaError(
            f"{file}:{line_no}: not UTF-8 text", file=file, line=line_no, problem="not UTF-8"
        ) from exc
    src: list[int] = []
    dst: list[int] = []
    ts: list[int] = []
    ratings: list[float] = []
    n_lines = 0
    for n_lines, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split() if spec.delimiter == " " else [f.strip() for f in line.split(spec.delimiter)]
        if len(fields) != spec.n_columns:
            _fail(file, n_lines, raw, f"expected {spec.n_columns} columns, got {len(fields)}")
        src.append(_parse_id(fields[0], "source id", file, n_lines, raw))
        dst.append(_parse_id(fields[1], "target id", file, n_lines, raw))
        if spec.has_rating:
            ratings.append(_parse_rating(fields[2], file, n_lines, raw))
        ts.append(_parse_seconds(fields[-1], file, n_lines, raw))
    if not ts:
        _fail(file, max(n_lines, 1), "", "file is empty (no data rows)")
    cols = {
        "src": np.asarray(src, dtype=np.int64),
        "dst": np.asarray(dst, dtype=np.int64),
        "t": np.asarray(ts, dtype=np.int64),
    }
    if spec.has_rating:
        cols["rating"] = np.asarray(ratings, dtype=np.float64)
    return cols


def _fail(file: str, line: int, raw: str, problem: str, cls: type[TGMSError] = SchemaError) -> NoReturn:
    raise cls(f"{file}:{line}: {problem}", file=file, line=line, problem=problem, text=raw[:200])


def _parse_id(field: str, what: str, file: str, line: int, raw: str) -> int:
    try:
        value = int(field)
    except ValueError:
        _fail(file, line, raw, f"{what} {field[:40]!r} is not an integer")
    return _in_range(value, what, 2**63 - 1, f"{what} {field[:40]} is too large", file, line, raw)


def _parse_seconds(field: str, file: str, line: int, raw: str) -> int:
    try:
        value = int(field)
    except ValueError:
        try:
            float(field)
        except ValueError:
            _fail(file, line, raw, f"time {field[:40]!r} is not a number")
        _fail(file, line, raw, f"time {field[:40]!r} is not an integer number of seconds")
    beyond = f"time {value} is beyond the representable range"
    return _in_range(value, "time", _MAX_SECONDS, beyond, file, line, raw)


def _in_range(value: int, what: str, most: int, too_large: str, file: str, line: int, raw: str) -> int:
    """An id or a time is a non-negative integer up to ``most``; ``too_large`` says how it is not."""
    if value < 0:
        _fail(file, line, raw, f"{what} {value} is negative", InvalidArgError)
    if value > most:
        _fail(file, line, raw, too_large, InvalidArgError)
    return value


def _parse_rating(field: str, file: str, line: int, raw: str) -> float:
    try:
        value = float(field)
    except ValueError:
        _fail(file, line, raw, f"rating {field[:40]!r} is not a number")
    if not math.isfinite(value) or abs(value) > 10:
        _fail(file, line, raw, f"rating {field[:40]!r} is outside [-10, 10]", InvalidArgError)
    return value


def _to_frame(cols: dict[str, np.ndarray], spec: SnapSpec, file: str) -> EventFrame:
    n = len(cols["t"])
    ids, inverse = np.unique(np.concatenate([cols["src"], cols["dst"]]), return_inverse=True)
    uids = pa.array([f"n{int(i)}" for i in ids], type=pa.string())
    src = uids.take(pa.array(inverse[:n]))
    dst = uids.take(pa.array(inverse[n:]))
    props = None
    if spec.has_rating:
        values, r_inv = np.unique(cols["rating"], return_inverse=True)
        texts = pa.array([props_text({"rating": float(v)}) for v in values], type=pa.string())
        props = texts.take(pa.array(r_inv))
    table = make_table(src, dst, cols["t"] * US_PER_SECOND, None, props)
    return EventFrame(table, rel_type=spec.rel_type, label=spec.label, name=spec.name, source=file)
