"""The campaign's endpoints: scripted replicas (TEST DOUBLE) sharing load and failing over, the response
cache making a full rerun free, readiness of replicas served elsewhere, and processes stopped on exit."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.pipeline.campaign.conftest import Bundle, cluster_conf, jobs_for, scripted_model
from tgms.engine.api import NotFoundError
from tgms.models.config import EndpointConfig, ModelConfig
from tgms.models.errors import InfraError
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.models.testing.smoke_rule import smoke_reply
from tgms.pipeline.campaign.endpoints import open_model, scripted_replicas
from tgms.pipeline.campaign.executor import CellJob, run_jobs, start_actors, write_result
from tgms.pipeline.campaign.records import TaskResult, read_records
from tgms.pipeline.systems.record import TaskRecord


def flat(**keys: Any) -> ModelConfig:
    """A model config from the flat keys of conf/model/*.yaml."""
    return ModelConfig.model_validate(keys)


def stats(url: str) -> dict[str, Any]:
    return httpx.get(url + "/scripted/stats", timeout=5).json()


def refuses(url: str) -> bool:
    try:
        httpx.get(url + "/health", timeout=2)
    except httpx.ConnectError:
        return True
    return False


def finished(jobs: list[CellJob]) -> list[TaskRecord]:
    return [r for j in jobs for r in read_records(j.records_path)]


def test_two_replicas_share_the_load_and_one_stopping_mid_run_loses_no_task(
    ray_info: dict, small_bundle: Bundle, tmp_path: Path
) -> None:
    model = scripted_model(replicas=2, reply_delay_s=0.2)
    n_tasks = 24
    with scripted_replicas(2, reply_delay_s=0.2) as servers:
        urls = [s.base_url for s in servers]
        endpoint = EndpointConfig(
            base_urls=tuple(urls), model="scripted", concurrency=16, timeout_s=10, backoff_base_s=0.05
        )
        jobs = jobs_for(small_bundle, ["static_graph_rag"], n_tasks, tmp_path, model)
        seen: dict[str, Any] = {}

        def on_record(job: CellJob, result: TaskResult) -> None:
            write_result(job, result)
            seen["n"] = seen.get("n", 0) + 1
            if seen["n"] == 8:  # a third of the way: replica 0 goes away with requests in flight
                seen["before_stop"] = stats(urls[0])
                servers[0].stop()

        with start_actors(small_bundle.bundles(), endpoint, cluster_conf(), tmp_path / "work") as pool:
            run_jobs(pool, jobs, on_record)
        second = stats(urls[1])
    assert seen["before_stop"]["chat_requests"] > 0 and second["chat_requests"] > 0, "both replicas served"
    records = finished(jobs)
    assert sorted(r.task_id for r in records) == sorted(t.id for t in small_bundle.tasks[:n_tasks])
    assert all(r.status != "infra_error" for r in records), "no task lost to the stopped replica"
    assert refuses(urls[0]) and refuses(urls[1]), "every replica stopped on leaving"


def test_response_cache_makes_a_full_rerun_send_no_request(
    ray_info: dict, small_bundle: Bundle, tmp_path: Path
) -> None:
    with ScriptedServer(smoke_reply) as server:
        model = flat(name="scripted", kind="endpoint", api_base=[server.url], concurrency=16, timeout_s=10)
        with open_model(model, tmp_path / "cache", True) as (endpoint, _):
            assert endpoint.cache_dir == tmp_path / "cache" / "responses"
            runs = []
            with start_actors(small_bundle.bundles(), endpoint, cluster_conf(), tmp_path / "work") as pool:
                for name in ("first", "second"):  # the second is a full rerun: fresh records, no resume
                    jobs = jobs_for(small_bundle, ["tgms", "static_graph_rag"], 6, tmp_path / name, model)
                    before = server.log.chat_count
                    run_jobs(pool, jobs, resume=False)
                    runs.append((server.log.chat_count - before, finished(jobs)))
    (sent_first, first), (sent_second, second) = runs
    assert sent_first > 12, "the first run asked the model (tgms plans and reports, the baseline answers)"
    # the --smoke replies parse as each role expects: plans run, reports and baseline answers are emitted
    assert {r.system for r in first if r.status == "answered"} == {"tgms", "static_graph_rag"}
    assert sent_second == 0, "the rerun sent no request"
    assert all(c.cached for r in second for c in r.llm_calls) and any(r.llm_calls for r in second)

    traced = {r.task_id: r.trace_digest for r in first if r.system == "tgms" and r.trace_digest}
    assert traced, "some tgms plans ran"
    traces = [json.loads(line) for f in (tmp_path / "first" / "traces").glob("*tgms*") for line in f.open()]
    assert {t["task_id"]: t["trace"]["trace_digest"] for t in traces} == traced, "each run plan's trace kept"

    def key(r: dict[str, Any]) -> tuple:
        return r.system, r.task_id, r.status, repr(r.predicted), r.correct

    assert sorted(map(key, first)) == sorted(map(key, second)), "the same answers from the cache"


def test_scripted_kind_starts_replicas_and_stops_them_on_error(tmp_path: Path) -> None:
    model = scripted_model(replicas=2)
    with pytest.raises(RuntimeError, match="boom"), open_model(model, tmp_path, False) as (endpoint, gen):
        urls = list(endpoint.base_urls)
        assert len(urls) == 2 and gen == model.generation and endpoint.cache_dir is None
        assert all(httpx.get(u + "/health", timeout=5).status_code == 200 for u in urls)
        raise RuntimeError("boom")
    assert all(refuses(u) for u in urls)


def test_endpoint_readiness_names_each_unready_replica(tmp_path: Path) -> None:
    dead = ScriptedServer().start()
    dead_url = dead.url
    dead.stop()
    with ScriptedServer(model="qwen") as good:
        listed = tmp_path / "endpoints.txt"
        listed.write_text(f"# written by vllm_replicas.sbatch\n{dead_url}\n\n", encoding="utf-8")
        model = flat(name="qwen", kind="endpoint", api_base=[good.url], endpoints_file=str(listed))
        t0 = time.monotonic()
        with pytest.raises(InfraError) as err, open_model(model, None, False, ready_timeout_s=1.0):
            pass
        assert time.monotonic() - t0 < 10, "the wait is bounded"
        d = err.value.to_dict()["details"]
        assert list(d["unready"]) == [dead_url] and d["ready"] == [good.url]
        assert dead_url in err.value.message and "unreachable" in d["unready"][dead_url]

        wrong = flat(name="llama", kind="endpoint", api_base=[good.url])
        t0 = time.monotonic()
        with (
            pytest.raises(InfraError, match="not 'llama'"),
            open_model(wrong, None, False, ready_timeout_s=30),
        ):
            pass
        assert time.monotonic() - t0 < 5, "a replica serving another model fails at once"

        ok = flat(name="qwen", kind="endpoint", api_base=[good.url], max_model_len=4096)
        with open_model(ok, tmp_path, True) as (endpoint, gen):
            assert (
                endpoint.base_urls == (good.url,) and endpoint.model == "qwen" and gen.max_model_len == 4096
            )


def test_the_driver_waits_for_an_endpoints_file_that_appears_late(tmp_path: Path) -> None:
    """model.endpoints_wait_s: the vLLM job of a scale sweep's model may still be loading its weights."""
    import threading

    from tgms.pipeline.campaign.endpoints import read_endpoints_file, replica_urls

    path = tmp_path / "endpoints.qwen.txt"
    later = threading.Timer(0.5, lambda: path.write_text("http://gpu01:8000\n# a comment\n\n"))
    later.start()
    try:
        model = flat(name="qwen", kind="endpoint", endpoints_file=str(path), endpoints_wait_s=30)
        assert replica_urls(model) == ["http://gpu01:8000"]
    finally:
        later.cancel()
    with pytest.raises(NotFoundError, match=r"missing\.txt"):  # not there, no wait: a clear E_NOT_FOUND
        read_endpoints_file(tmp_path / "missing.txt")
    started = time.monotonic()
    with pytest.raises(NotFoundError):
        read_endpoints_file(tmp_path / "missing.txt", wait_s=1.0)
    assert 0.9 <= time.monotonic() - started < 5
