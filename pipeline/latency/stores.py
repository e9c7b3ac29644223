"""The stores the benchmarks run on, built once with the engine's ``build_store`` and reused.

A scale is a synthetic size (``10**6``: ``synthetic`` with ``n_events = 10**6``, ``n_nodes =
max(1000, 10**6 // 50)``, seed 0, no correction epoch) or a data set name (``"collegemsg"``). Stores live
under a work directory, by default ``$TGMS_CACHE/bench`` (else ``~/.cache/tgms/bench``): outside any
checkout, so a benchmark leaves ``git status`` clean, and kept between runs because a 10^7 store takes
minutes to build.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tgms.engine.api import InvalidArgError, Store, build_store

Scale = int | str
Progress = Callable[[str], None]
#: scale tokens that are real data sets, not synthetic sizes
DATASETS = ("collegemsg",)
#: the largest synthetic scale accepted (the generator is meant for up to 10^7 edge versions)
MAX_SCALE = 10**8


def default_work_dir() -> Path:
    root = os.environ.get("TGMS_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "tgms") / "bench"


def synthetic_nodes(n_events: int) -> int:
    return max(1_000, n_events // 50)


def store_dir(work: Path, scale: Scale) -> Path:
    return work / (scale if isinstance(scale, str) else f"syn-{scale}")


def bench_store(work: Path, scale: Scale, progress: Progress) -> Store:
    """The store of ``scale`` under ``work``, opened read-only (built first when it is not there)."""
    root = store_dir(work, scale)
    if not (root / "store.json").exists():
        if isinstance(scale, str):
            progress(f"loading {scale} into {root}")
            build_store(scale, root, progress=progress).close()
        else:
            progress(f"building synthetic store of {scale:,} events in {root}")
            build_store(
                "synthetic", root, events=scale, nodes=synthetic_nodes(scale), corrections=False
            ).close()
    return Store.open(root, read_only=True)


def parse_scales(text: str, *, datasets: bool = False) -> list[Scale]:
    """``"1e5,1e6"`` -> ``[100000, 1000000]`` (and data set names when ``datasets``); a bad token is an
    ``E_INVALID_ARG`` naming it."""
    out: list[Scale] = []
    for token in (t.strip() for t in text.split(",")):
        if not token:
            continue
        if datasets and token in DATASETS:
            out.append(token)
            continue
        try:
            value = float(token)
        except ValueError:
            value = float("nan")
        if not (value == value and value.is_integer() and 1 <= value <= MAX_SCALE):  # NaN fails the first
            legal = "a whole number of events in [1, 1e8] such as 1e5" + (
                f", or one of {', '.join(DATASETS)}" if datasets else ""
            )
            raise InvalidArgError(f"bad scale {token!r}: expected {legal}", field="scales", value=token)
        out.append(int(value))
    return out


def one_scale(text: str, *, datasets: bool = False) -> Scale:
    """Exactly one scale (``--scale 1e7``)."""
    scales = parse_scales(text, datasets=datasets)
    if len(scales) != 1:
        raise InvalidArgError(f"expected one scale, got {text!r}", field="scale", value=text)
    return scales[0]
