"""LocalServer's lifecycle against a real subprocess (the scripted TEST DOUBLE server): no model needed."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

from tests.models.local.conftest import pid_alive, python_spec, read_pid, scripted_spec, wait_gone
from tgms.models.client import ChatClient
from tgms.models.errors import InfraError, LocalServerError
from tgms.models.local import reaper
from tgms.models.local.server import LocalServer, ServerSpec, group_alive
from tgms.models.local.smoke import smoke

MESSAGES = [{"role": "user", "content": "are you there?"}]


def test_start_waits_until_ready_and_the_endpoint_answers_through_chat_client(tmp_path: Path) -> None:
    with LocalServer(scripted_spec("pong"), log_dir=tmp_path) as server:
        assert server.running and server.pid is not None
        pid = server.pid
        cfg = server.endpoint(timeout_s=5.0)
        assert cfg.base_urls == (f"http://127.0.0.1:{server.port}",)
        assert (cfg.model, cfg.flavour, cfg.concurrency) == ("scripted", "llamacpp", 2)
        with ChatClient(cfg) as client:
            completion = client.complete(MESSAGES)
        assert completion.text == "pong"
        assert completion.endpoint == server.base_url
        assert server.log_path is not None and server.log_path.parent == tmp_path
    assert not server.running and server.pid is None
    assert wait_gone(pid) and not group_alive(pid)
    assert "scripted server on" in server.log_path.read_text()  # the process's output went to the log


def test_readiness_waits_for_a_slow_start(tmp_path: Path) -> None:
    with LocalServer(scripted_spec("late", start_delay=1.5), log_dir=tmp_path) as server:
        assert server.startup_s is not None and server.startup_s >= 1.5
        with ChatClient(server.endpoint(timeout_s=5.0, max_retries=0)) as client:
            assert client.complete(MESSAGES).text == "late"  # ready means ready: no retry needed


def test_endpoint_overrides_and_a_server_not_started(tmp_path: Path) -> None:
    server = LocalServer(scripted_spec(), log_dir=tmp_path)
    with pytest.raises(LocalServerError) as err:
        server.endpoint()
    assert err.value.details["reason"] == "not_started"
    with server:
        assert server.endpoint().timeout_s == 600.0  # CPU servers are slow: a generous default
        cfg = server.endpoint(max_tokens=64, concurrency=1, cache_dir=tmp_path / "c", timeout_s=9)
        assert (cfg.max_tokens, cfg.concurrency, cfg.model, cfg.timeout_s) == (64, 1, "scripted", 9)


def test_a_process_that_dies_at_start_gives_the_structured_error_with_the_log_tail(tmp_path: Path) -> None:
    code = "import sys; print('loading model: bad magic number in weights', file=sys.stderr); sys.exit(3)"
    started = time.monotonic()
    with pytest.raises(LocalServerError) as err:
        LocalServer(python_spec(code, ready_timeout_s=60), log_dir=tmp_path).start()
    assert time.monotonic() - started < 20  # failed fast, not at the readiness timeout
    shape = err.value.to_dict()
    assert isinstance(err.value, InfraError)  # infrastructure: never scored as a wrong answer
    assert shape["error"] == "E_INFRA_LOCAL_SERVER"
    assert shape["details"]["reason"] == "exited"
    assert shape["details"]["returncode"] == 3
    assert "bad magic number" in shape["details"]["log_tail"]
    assert Path(shape["details"]["log"]).parent == tmp_path
    assert reaper.live_count() == 0


def test_a_server_never_ready_times_out_and_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    with pytest.raises(LocalServerError) as err:
        LocalServer(python_spec(code, ready_timeout_s=1.0), log_dir=tmp_path).start()
    assert err.value.details["reason"] == "timeout"
    assert wait_gone(read_pid(pid_file))
    assert reaper.live_count() == 0


def test_stop_kills_workers_that_ignore_sigterm(tmp_path: Path) -> None:
    """A server's own workers (vLLM's engine process) share its group; one ignoring SIGTERM gets SIGKILL."""
    worker_pid = tmp_path / "worker"
    worker = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(worker_pid)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    )
    scripted = scripted_spec("w")

    def command(port: int) -> list[str]:
        server = " ".join(scripted.command(port))
        return ["sh", "-c", f'{sys.executable} -c "{worker}" & exec {server}']

    spec = ServerSpec("group", command, "scripted", "llamacpp", 1, ready_timeout_s=20, stop_timeout_s=1.0)
    with LocalServer(spec, log_dir=tmp_path) as server:
        pid = read_pid(worker_pid)
        assert pid_alive(pid)
        leader = server.pid
    assert leader is not None and wait_gone(leader)
    assert wait_gone(pid), "a worker that ignored SIGTERM outlived the stop"


def test_signal_handlers_are_installed_while_a_server_lives_and_restored_after(tmp_path: Path) -> None:
    before = {s: signal.getsignal(s) for s in reaper.SIGNALS}
    with LocalServer(scripted_spec(), log_dir=tmp_path):
        for s in reaper.SIGNALS:  # a signal the process ignores (nohup, a background job) stays ignored
            assert (signal.getsignal(s) is before[s]) == (before[s] is signal.SIG_IGN)
        assert reaper.live_count() == 1
    assert {s: signal.getsignal(s) for s in reaper.SIGNALS} == before
    assert reaper.live_count() == 0


def test_stop_is_idempotent(tmp_path: Path) -> None:
    server = LocalServer(scripted_spec(), log_dir=tmp_path).start()
    pid = server.pid
    server.stop()
    server.stop()
    assert pid is not None and wait_gone(pid)


def test_smoke_is_one_real_round_trip_and_stops_the_server() -> None:
    before = reaper.live_count()
    result = smoke(scripted_spec("hello"), max_tokens=4)
    assert result["reply"] == "hello" and result["startup_s"] > 0
    assert reaper.live_count() == before
