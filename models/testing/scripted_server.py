"""TEST DOUBLE: a scripted OpenAI-compatible chat server for tests. Never used to report results.

A real HTTP server (stdlib ``ThreadingHTTPServer`` in a thread, on 127.0.0.1, port 0) that speaks enough
of the OpenAI chat API for the real client code to run against it over real sockets:
``POST /v1/chat/completions`` answers a canned completion chosen by a rule (a dict from the sha256 of the
last user message to the reply text, or a callable of the request body), with ``usage`` counts;
``GET /health`` and ``GET /v1/models`` answer while the server is marked healthy; ``GET /scripted/stats``
reports the request counts (so a test can read the log of a server running as a process).

Faults are injected for the next N chat requests: an HTTP status (429 with Retry-After, 500, ...), a hang
past the client's timeout, or a slow reply. Every request is logged (path and JSON body), and the count of
chat requests in flight is tracked with its high-water mark. Use it as a context manager; it stops on exit
(and releases any request that is hanging). ``python -m tgms.models.testing.scripted_server --port N`` runs it
as a process (see :func:`main`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: a rule maps the request body to the reply text (or a dict with ``text`` and ``finish_reason``)
Rule = dict[str, str] | Callable[[dict[str, Any]], "str | dict[str, Any]"]


def prompt_hash(text: str) -> str:
    """The key of a dict rule: the sha256 of the last user message's text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def last_user_message(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content, sort_keys=True)
    return ""


@dataclass
class Fault:
    """What the next ``count`` chat requests get instead of (or before) their reply."""

    count: int
    status: int | None = None  # answer this HTTP status
    retry_after: float | None = None  # with this Retry-After header
    message: str | None = None  # the error message of the status's body (e.g. a context-window error)
    delay_s: float = 0.0  # wait this long first (a hang when it exceeds the client's timeout)


@dataclass
class RequestLog:
    """What the server received, guarded by ``lock``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[dict[str, Any]] = field(default_factory=list)  # {"method", "path", "body"}
    in_flight: int = 0
    high_water: int = 0

    @property
    def chat_bodies(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r["body"] for r in self.requests if r["path"] == "/v1/chat/completions"]

    @property
    def chat_count(self) -> int:
        return len(self.chat_bodies)


class ScriptedServer:
    """TEST DOUBLE: a scripted OpenAI-compatible server (see the module docstring)."""

    def __init__(
        self, rule: Rule | None = None, *, default: str | None = "", model: str = "scripted"
    ) -> None:
        self.rule: Rule = rule if rule is not None else {}
        self.default = default  # reply when a dict rule has no entry; None answers 404
        self.model = model
        self.port = 0  # 0: a free port chosen by the OS (the CLI sets its --port)
        self.healthy = True
        self.delay_s = 0.0  # added to every chat reply (a slow server)
        self.usage = True  # False: replies carry no ``usage`` (as llama.cpp's streamed replies)
        self.log = RequestLog()
        self._faults: list[Fault] = []
        self._faults_lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> ScriptedServer:
        handler = type("Handler", (_Handler,), {"server_double": self})
        self._httpd = _HTTPServer(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="scripted-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the scripted server is not running")
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)  # an IPv4 server's address (the type also admits AF_UNIX's bytes)
        return f"http://{host}:{port}"

    # -- fault injection ---------------------------------------------------------------------------
    def fail_next(
        self, count: int, status: int, retry_after: float | None = None, message: str | None = None
    ) -> None:
        """The next ``count`` chat requests answer HTTP ``status`` (with Retry-After when given, and
        ``message`` as the body's error message, e.g. a server's context-window refusal)."""
        self._push(Fault(count, status=status, retry_after=retry_after, message=message))

    def hang_next(self, count: int, seconds: float) -> None:
        """The next ``count`` chat requests wait ``seconds`` before answering nothing useful (a hang)."""
        self._push(Fault(count, status=504, delay_s=seconds))

    def slow_next(self, count: int, seconds: float) -> None:
        """The next ``count`` chat requests answer normally after ``seconds``."""
        self._push(Fault(count, delay_s=seconds))

    def _push(self, fault: Fault) -> None:
        with self._faults_lock:
            self._faults.append(fault)

    def _take_fault(self) -> Fault | None:
        with self._faults_lock:
            while self._faults and self._faults[0].count <= 0:
                self._faults.pop(0)
            if not self._faults:
                return None
            self._faults[0].count -= 1
            return self._faults[0]

    # -- replies -----------------------------------------------------------------------------------
    def reply_for(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The canned reply (``text``, ``finish_reason``) for a request, or None when the rule has none."""
        out: str | dict[str, Any] | None
        if callable(self.rule):
            out = self.rule(body)
        else:
            out = self.rule.get(prompt_hash(last_user_message(body)), self.default)
        if out is None:
            return None
        return out if isinstance(out, dict) else {"text": out, "finish_reason": "stop"}


class _HTTPServer(ThreadingHTTPServer):
    # the default backlog of 5 drops connection bursts (a campaign opens dozens at once) into SYN retries
    request_queue_size = 256


class _Handler(BaseHTTPRequestHandler):
    server_double: ScriptedServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read the RequestLog instead
        return

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (a timeout): nothing to answer
            pass

    def _record(self, body: Any) -> None:
        log = self.server_double.log
        with log.lock:
            log.requests.append({"method": self.command, "path": self.path, "body": body})

    def do_GET(self) -> None:
        double = self.server_double
        self._record(None)
        if self.path == "/scripted/stats":
            log = double.log
            with log.lock:
                chats = sum(1 for r in log.requests if r["path"] == "/v1/chat/completions")
                stats = {"chat_requests": chats, "in_flight": log.in_flight, "high_water": log.high_water}
            self._send(200, stats)
        elif self.path not in ("/health", "/v1/models"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
        elif not double.healthy:
            self._send(503, {"error": {"message": "unhealthy"}})
        elif self.path == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._send(200, {"object": "list", "data": [{"id": double.model, "object": "model"}]})

    def do_POST(self) -> None:
        double = self.server_double
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            self._record(None)
            self._send(400, {"error": {"message": "body is not JSON"}})
            return
        self._record(body)
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        log = double.log
        with log.lock:
            log.in_flight += 1
            log.high_water = max(log.high_water, log.in_flight)
        try:
            self._chat(double, body)
        finally:
            with log.lock:
                log.in_flight -= 1

    def _chat(self, double: ScriptedServer, body: dict[str, Any]) -> None:
        fault = double._take_fault()
        delay = double.delay_s + (fault.delay_s if fault else 0.0)
        if delay > 0 and double._stopping.wait(delay):
            return  # stopping: release the hanging request
        if fault is not None and fault.status is not None:
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else None
            message = fault.message or f"injected HTTP {fault.status}"
            self._send(fault.status, {"error": {"message": message}}, headers)
            return
        reply = double.reply_for(body)
        if reply is None:
            self._send(404, {"error": {"message": "no scripted reply for this prompt"}})
            return
        text = str(reply["text"])
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
        completion_tokens = len(text.split())
        payload: dict[str, Any] = {
            "id": "scripted-" + prompt_hash(json.dumps(body, sort_keys=True))[:12],
            "object": "chat.completion",
            "model": body.get("model", double.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": reply.get("finish_reason", "stop"),
                }
            ],
        }
        if double.usage:
            payload["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        self._send(200, payload)


def main(argv: list[str] | None = None) -> None:
    """TEST DOUBLE as a process: ``python -m tgms.models.testing.scripted_server --port N --reply TEXT``.

    Serves every chat request the fixed reply until SIGTERM/SIGINT, so tests can run it as the command of
    a :class:`models.local.LocalServer` (a real subprocess) without a model. ``--start-delay`` waits before
    binding (a slow start for readiness tests); ``--reply-delay`` waits before every reply (a slow model,
    for throughput benchmarks); ``--smoke`` replies by prompt role (:mod:`models.testing.smoke_rule`)
    instead of the fixed text.
    """
    import argparse
    import signal
    import time

    p = argparse.ArgumentParser(prog="scripted_server", description="TEST DOUBLE: scripted chat server")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--reply", default="ok", help="the text of every chat reply")
    p.add_argument("--model", default="scripted", help="the model id listed by /v1/models")
    p.add_argument("--start-delay", type=float, default=0.0, metavar="S", help="wait S s before binding")
    p.add_argument("--reply-delay", type=float, default=0.0, metavar="S", help="wait S s before each reply")
    p.add_argument("--smoke", action="store_true", help="reply by prompt role (models.testing.smoke_rule)")
    args = p.parse_args(argv)
    time.sleep(args.start_delay)
    if args.smoke:
        from tgms.models.testing.smoke_rule import smoke_reply

        server = ScriptedServer(smoke_reply, model=args.model)
    else:
        server = ScriptedServer(default=args.reply, model=args.model)
    server.port = args.port
    server.delay_s = max(0.0, args.reply_delay)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with server:
        print(f"scripted server on {server.url}", flush=True)
        stop.wait()
    print("scripted server stopped", flush=True)


if __name__ == "__main__":
    main()
