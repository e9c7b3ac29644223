"""Reading what a user hands the command line: files, JSON text and numeric options.

Every problem is one structured error, before anything is opened or written: a missing file is
``E_NOT_FOUND``; a directory, an unreadable file or a non-numeric option ``E_INVALID_ARG``; text that is
not UTF-8 or not JSON ``E_SCHEMA``; input larger or more deeply nested than the bounds below ``E_LIMIT``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tgms.engine.api import (
    MAX_JSON_DEPTH,
    InvalidArgError,
    LimitError,
    NotFoundError,
    SchemaError,
    check_depth,
)

#: a plan, an answer, a trace, a suite or JSON-ARGS: far below this (a 10^4-task suite is ~30 MB)
MAX_JSON_BYTES = 256 * 1024 * 1024
#: one line of an ops file (one batch); bulk loads go through `tgms ingest`, not through lines of JSON
MAX_OPS_LINE_BYTES = 64 * 1024 * 1024


def reject_constant(name: str) -> Any:
    """``json.loads`` hook: NaN and Infinity are not JSON numbers."""
    raise ValueError(f"{name} is not a JSON number")


def _check_file(path: str, what: str) -> Path:
    if "\x00" in path:
        raise InvalidArgError(f"{what} file name contains a NUL byte", path=path)
    p = Path(path)
    try:
        if not p.exists():
            raise NotFoundError(f"{what} file {path} does not exist", path=path)
        if p.is_dir():
            raise InvalidArgError(f"{what} file {path} is a directory, not a file", path=path)
    except OSError as exc:  # e.g. a name too long for the file system
        raise InvalidArgError(f"{what} file {path} cannot be used: {exc.strerror}", path=path) from None
    return p


def _open_failed(exc: OSError, path: str, what: str) -> InvalidArgError:
    return InvalidArgError(f"{what} file {path} cannot be read: {exc.strerror or exc}", path=path)


def read_text(path: str, what: str, max_bytes: int = MAX_JSON_BYTES) -> str:
    """The UTF-8 text of a user-supplied file."""
    p = _check_file(path, what)
    try:
        with open(p, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise _open_failed(exc, path, what) from None
    if len(data) > max_bytes:
        raise LimitError(
            f"{what} file {path} is larger than {max_bytes} bytes", path=path, max_bytes=max_bytes
        )
    return decode_utf8(data, f"{what} file {path}", path=path)


def decode_utf8(data: bytes, what: str, **details: Any) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError(
            f"{what} is not UTF-8 text (byte {exc.start}: {exc.reason})", byte_offset=exc.start, **details
        ) from None


def parse_json(text: str, what: str, **details: Any) -> Any:
    """Parse JSON text; NaN/Infinity refused; nesting bounded by ``MAX_JSON_DEPTH`` (``E_LIMIT``)."""
    try:
        value = json.loads(text, parse_constant=reject_constant)
    except RecursionError:
        raise LimitError(
            f"{what} is nested more than {MAX_JSON_DEPTH} levels deep", max_depth=MAX_JSON_DEPTH, **details
        ) from None
    except ValueError as exc:
        raise SchemaError(f"{what} is not valid JSON: {exc}", **details) from None
    try:
        check_depth(value, what)
    except LimitError as exc:
        exc.details.update(details)
        raise
    return value


def read_json(path: str, what: str) -> Any:
    return parse_json(read_text(path, what), f"{what} file {path}", path=path)


def iter_lines(path: str, what: str, max_line_bytes: int = MAX_OPS_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """(line number, UTF-8 text) of every line of a user-supplied file, each line bounded in size."""
    p = _check_file(path, what)
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed below; an open failure is a structured error
    except OSError as exc:
        raise _open_failed(exc, path, what) from None
    with fh:
        for lineno, raw in enumerate(_lines(fh, max_line_bytes, path, what), 1):
            yield lineno, decode_utf8(raw, f"{what} file {path} line {lineno}", path=path, line=lineno)


def _lines(fh: Any, limit: int, path: str, what: str) -> Iterator[bytes]:
    lineno = 0
    while True:
        try:
            raw = fh.readline(limit + 1)
        except OSError as exc:
            raise _open_failed(exc, path, what) from None
        if not raw:
            return
        lineno += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise LimitError(
                f"{what} file {path} line {lineno} is longer than {limit} bytes",
                path=path,
                line=lineno,
                max_bytes=limit,
            )
        yield raw


# -- numeric options (argparse ``type=``): a TGMSError passes through argparse to main ------------------
def _number(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidArgError(f"{option} must be a number, got {text!r}", option=option, value=text) from None
    if not math.isfinite(value):
        raise InvalidArgError(f"{option} must be a finite number, got {text!r}", option=option, value=text)
    return value


def seconds(option: str) -> Callable[[str], float]:
    """A finite number of seconds >= 0 (a budget: ``nan``, ``inf`` and negatives are refused; ``0`` admits
    nothing, so every priced call is refused with ``E_COST``)."""

    def parse(text: str) -> float:
        value = _number(text, option)
        if value < 0:
            raise InvalidArgError(f"{option} must be >= 0 seconds, got {text!r}", option=option, value=text)
        return value

    parse.__name__ = "seconds"
    return parse


def count_list(option: str, lo: int, hi: int) -> Callable[[str], list[int]]:
    """Comma-separated whole numbers in ``[lo, hi]``; ``1e5`` is accepted where it is whole."""

    def parse(text: str) -> list[int]:
        out = []
        for part in (s.strip() for s in text.split(",")):
            if not part:
                continue
            value = _number(part, option)
            if not value.is_integer() or not lo <= value <= hi:
                raise InvalidArgError(
                    f"{option}: {part!r} is not a whole number in [{lo}, {hi}]", option=option, value=part
                )
            out.append(int(value))
        return out

    parse.__name__ = "count_list"
    return parse


def whole(option: str, lo: int, hi: int) -> Callable[[str], int]:
    """One whole number in ``[lo, hi]`` (written as an integer)."""

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise InvalidArgError(
                f"{option} must be a whole number, got {text!r}", option=option, value=text
            ) from None
        if not lo <= value <= hi:
            raise InvalidArgError(
                f"{option} must lie in [{lo}, {hi}], got {value}", option=option, value=value
            )
        return value

    parse.__name__ = "whole"
    return parse


def add_seconds(p: argparse._ActionsContainer, option: str, **kw: Any) -> None:
    """The option ``option``, parsed by :func:`seconds` (which names it in its errors)."""
    p.add_argument(option, type=seconds(option), **kw)


def add_whole(p: argparse._ActionsContainer, option: str, lo: int, hi: int, **kw: Any) -> None:
    """The option ``option``, parsed by :func:`whole` in ``[lo, hi]``."""
    p.add_argument(option, type=whole(option, lo, hi), **kw)


def fspath(text: str) -> str:
    """A path argument: refuse NUL bytes (``open`` raises ValueError on them) up front."""
    if "\x00" in text:
        raise InvalidArgError("a path may not contain a NUL byte", value=text)
    return os.fspath(text)


def out_dir(path: str) -> Path:
    """An output directory: refused up front (``E_INVALID_ARG``) when it is an existing file, so long work
    does not run only to fail at its last step."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InvalidArgError(f"{path} is a file, not a directory", path=path)
    return p


def out_file(path: str) -> Path:
    """An output file: its directory must exist and the path must not be a directory (checked up front)."""
    p = Path(path)
    if p.is_dir():
        raise InvalidArgError(f"{path} is a directory, not a file", path=path)
    if not p.absolute().parent.is_dir():
        raise NotFoundError(f"the directory of {path} does not exist", path=path)
    return p
