"""``LocalServer``: one OpenAI-compatible model server run as a subprocess on 127.0.0.1.

Generic over the command (a :class:`ServerSpec`), so the same lifecycle serves llama.cpp, vLLM and, in
tests, the scripted test-double server. Start: a free port on 127.0.0.1, the process in its own process
group (``start_new_session``: a server's own workers, e.g. vLLM's engine process, share the group and are
stopped with it), output to a log file under the cache, then a readiness wait polling ``/v1/models``
that fails fast with the log's tail when the process exits and times out with a structured error. Stop:
SIGTERM to the group, a grace period, SIGKILL to whatever is left. Live servers are tracked by
:mod:`models.local.reaper`, so an exception, interpreter exit or Ctrl-C leaves no orphan.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from tgms.models.config import EndpointConfig, Flavour
from tgms.models.errors import LocalServerError
from tgms.models.local import reaper
from tgms.models.local.paths import logs_dir
from tgms.models.local.watchdog import group_alive
from tgms.models.local.watchdog import signal_group as _signal_group

#: run by path beside every server (models/local/watchdog.py: stdlib only)
WATCHDOG = Path(__file__).with_name("watchdog.py")

HOST = "127.0.0.1"
LOG_TAIL_BYTES = 4000


@dataclass(frozen=True)
class ServerSpec:
    """What to run and how its endpoint is used; ``command(port)`` is the argv for one start."""

    name: str  # short, for logs and messages: "llamacpp", "vllm", "scripted"
    command: Callable[[int], list[str]]
    model: str  # the served model name, as clients must send it
    flavour: Flavour  # how the server takes a JSON schema (models.structured)
    concurrency: int  # requests worth having in flight: 1 for llama.cpp (serial), 4 for vLLM (batches)
    ready_timeout_s: float = 120.0
    env: Mapping[str, str] = field(default_factory=dict)  # added to the parent's environment
    unset_env: tuple[str, ...] = ()  # removed from it (e.g. the project venv's PYTHONPATH for vLLM's venv)
    stop_timeout_s: float = 15.0  # grace after SIGTERM before SIGKILL
    # the client's per-request timeout: a CPU server shared with other work can take minutes for a
    # 3k-token prompt (prefill 70-175 tokens/s measured here, 4-60x slower under contention)
    client_timeout_s: float = 600.0


class LocalServer:
    """A context manager around one server subprocess (see the module docstring)."""

    def __init__(self, spec: ServerSpec, *, port: int | None = None, log_dir: Path | None = None) -> None:
        self.spec = spec
        self._fixed_port = port
        self._log_dir = Path(log_dir) if log_dir is not None else None
        self.port: int | None = None
        self.log_path: Path | None = None
        self.startup_s: float | None = None  # from spawn to the first ready answer
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> LocalServer:
        if self._proc is not None:
            return self
        self.port = self._fixed_port or free_port()
        directory = self._log_dir or logs_dir()
        directory.mkdir(parents=True, exist_ok=True)
        self.log_path = directory / f"{self.spec.name}-{self.port}-{time.strftime('%Y%m%dT%H%M%S')}.log"
        argv = self.spec.command(self.port)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (held open for the process's lifetime)
        self._log.write(f"$ {' '.join(argv)}\n".encode())
        self._log.flush()
        started = time.monotonic()
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self._environment(),
                start_new_session=True,
            )
        except OSError as exc:
            self._close_log()
            raise LocalServerError(
                f"cannot run the {self.spec.name} server: {exc}", reason="bad_config", argv=argv
            ) from exc
        reaper.register(self)
        self._start_watchdog()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def stop(self) -> None:
        """SIGTERM the process group, wait, SIGKILL what is left; idempotent."""
        proc = self._proc
        if proc is None:
            return
        pgid = proc.pid  # the session leader's pid is its group id (start_new_session)
        _signal_group(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=self.spec.stop_timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(pgid, signal.SIGKILL)
            proc.wait(timeout=10)
        # the leader is gone; its workers (same group) get the rest of the grace, then SIGKILL
        deadline = time.monotonic() + self.spec.stop_timeout_s
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
        self._proc = None
        self._stop_watchdog()
        self._close_log()
        reaper.unregister(self)

    def _start_watchdog(self) -> None:
        """The process that stops this server if this process dies without stopping it (SIGKILL):
        :mod:`models.local.watchdog`, in its own session so a terminal's signals are left to us."""
        assert self._proc is not None
        argv = [sys.executable, "-I", str(WATCHDOG), str(os.getpid()), str(self._proc.pid)]
        argv.append(str(self.spec.stop_timeout_s))
        try:
            self._watchdog = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                start_new_session=True,
            )
        except OSError as exc:  # the server still runs; only a SIGKILL of this process would orphan it
            if self._log is not None:
                self._log.write(f"no watchdog: {exc}\n".encode())
                self._log.flush()

    def _stop_watchdog(self) -> None:
        dog, self._watchdog = self._watchdog, None
        if dog is None:
            return
        try:
            dog.wait(timeout=5)  # it exits within half a second of the group's end
        except subprocess.TimeoutExpired:
            dog.kill()
            dog.wait(timeout=5)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what callers use --------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalServerError(f"the {self.spec.name} server has not been started", reason="not_started")
        return f"http://{HOST}:{self.port}"

    def endpoint(self, **overrides: Any) -> EndpointConfig:
        """The client config for this server (served model name, flavour, concurrency); fields overridable."""
        values: dict[str, Any] = {
            "base_urls": (self.base_url,),
            "model": self.spec.model,
            "flavour": self.spec.flavour,
            "concurrency": self.spec.concurrency,
            "timeout_s": self.spec.client_timeout_s,
            # a serial server is still working on a request whose reply timed out: never re-send it
            "retry_read_timeouts": self.spec.concurrency > 1,
        }
        return EndpointConfig(**{**values, **overrides})

    def log_tail(self, limit: int = LOG_TAIL_BYTES) -> str:
        return read_tail(self.log_path, limit) if self.log_path is not None else ""

    # -- internals ---------------------------------------------------------------------------------
    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in self.spec.unset_env}
        env.update(self.spec.env)
        return env

    def _wait_ready(self) -> None:
        assert self._proc is not None
        url = self.base_url + "/v1/models"
        deadline = time.monotonic() + self.spec.ready_timeout_s
        with httpx.Client(timeout=2.0) as http:
            while True:
                code = self._proc.poll()
                if code is not None:
                    raise LocalServerError(
                        f"the {self.spec.name} server exited with code {code} before it was ready",
                        reason="exited",
                        returncode=code,
                        log=str(self.log_path),
                        log_tail=self.log_tail(),
                    )
                if _answers(http, url):
                    return
                if time.monotonic() >= deadline:
                    raise LocalServerError(
                        f"the {self.spec.name} server was not ready within {self.spec.ready_timeout_s:g} s",
                        reason="timeout",
                        timeout_s=self.spec.ready_timeout_s,
                        log=str(self.log_path),
                        log_tail=self.log_tail(),
                    )
                time.sleep(0.2)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def free_port() -> int:
    """A port on 127.0.0.1 that is free now (the OS's choice; the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def read_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _answers(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(url).status_code == 200
    except httpx.HTTPError:
        return False
