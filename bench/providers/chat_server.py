"""A local HTTP server speaking the chat-completions wire format, with scripted replies.

Real sockets on 127.0.0.1 (no mock transport): the client under test opens connections, sends
JSON and reads status codes, headers and bodies exactly as it would from a provider. Each request
pops the next scripted reply; every request is recorded for assertions. ``ECHO`` in a reply's
body is replaced by the request's Authorization header, as careless providers echo a bad key.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from bench.providers.streams import Event, events_for

ECHO = "<<authorization>>"


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunk_delay: float = 0.0
    """Between the chunks of a streamed reply (a request with ``"stream": true``)."""
    cut_after: int | None = None
    """A streamed reply's connection closed after this many chunks, mid-way."""

    def payload(self) -> bytes:
        return json.dumps(self.body).encode() if isinstance(self.body, dict) else self.body


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: httpx.Headers  # case-insensitive, as HTTP header names are
    body: dict[str, Any]
    at: float = 0.0
    """When the request arrived (``time.perf_counter``)."""


class ChatServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if not self._script:
                return Reply(status=500, body={"error": {"message": "script exhausted"}})
            return self._script.popleft()


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = httpx.Headers(list(self.headers.items()))
            recorded = Recorded(self.path, headers, json.loads(raw or b"{}"), time.perf_counter())
            reply = server._next(recorded)
            time.sleep(reply.delay)
            if recorded.body.get("stream") and reply.status == 200 and isinstance(reply.body, dict):
                self._stream(reply, events_for(self.path, json.loads(reply.payload())))
                return
            echoed = recorded.headers.get("Authorization", "")
            payload = reply.payload().replace(ECHO.encode(), echoed.encode())
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to deliver

        def _stream(self, reply: Reply, events: list[Event]) -> None:
            """The scripted reply as its provider streams it (``streams``): server-sent events."""
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for sent, (name, data) in enumerate(events):
                    if sent == reply.cut_after:
                        return  # no end of the stream: the connection just ends
                    text = data if isinstance(data, str) else json.dumps(data)
                    line = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
                    self.wfile.write(line.encode())
                    self.wfile.flush()
                    time.sleep(reply.chunk_delay)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
