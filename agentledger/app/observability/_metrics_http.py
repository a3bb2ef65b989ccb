"""One ``/metrics`` scrape: the agentledger registry followed by the Temporal SDK's own metrics.

The SDK's Rust core exports Prometheus text on a bind address of its own
(``temporalio.runtime.PrometheusConfig``); bound to a loopback port, it is read at each scrape
and appended, so task-queue latency, slot usage and poller metrics come with the ledger's
counters on the one endpoint an operator configures.
"""

from __future__ import annotations

import logging
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)
SDK_TIMEOUT_SECONDS = 2.0


def loopback_address() -> str:
    """A free loopback ``host:port`` for the SDK's exporter (only this process reads it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


class Exposition:
    """What one scrape returns."""

    def __init__(self, registry: CollectorRegistry, sdk_address: str | None = None) -> None:
        self.registry, self.sdk_address = registry, sdk_address

    def render(self) -> bytes:
        ours = generate_latest(self.registry)
        return ours + self._sdk() if self.sdk_address else ours

    def _sdk(self) -> bytes:
        try:
            url = f"http://{self.sdk_address}/metrics"
            with urllib.request.urlopen(url, timeout=SDK_TIMEOUT_SECONDS) as reply:
                body: bytes = reply.read()
        except OSError as exc:  # the scrape still serves agentledger's own metrics
            log.warning("Temporal SDK metrics unavailable at %s: %s", self.sdk_address, exc)
            return b""
        return body if body.endswith(b"\n") or not body else body + b"\n"


def wsgi_app(exposition: Exposition) -> Callable[..., Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "/") not in ("/", "/metrics"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"only /metrics is served here\n"]
        body = exposition.render()
        start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
        return [body]

    return app


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """A scrape every few seconds is not news."""


def serve_http(exposition: Exposition, port: int, host: str = "0.0.0.0") -> WSGIServer:
    """Serve ``/metrics`` on a daemon thread; ``shutdown()`` the returned server to stop."""
    server = make_server(
        host, port, wsgi_app(exposition), _ThreadingServer, handler_class=_QuietHandler
    )
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
