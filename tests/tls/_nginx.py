"""Debian's nginx as the TLS edge in front of a local server, started and stopped by a test.

``grpc``: TLS-terminating HTTP/2 proxy to a gRPC server (Temporal's frontend); ``http``: a TLS
reverse proxy to an HTTP server (``agentledger serve``). With ``client_ca`` the proxy demands a
client certificate signed by it (mutual TLS).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest

from tests.tls._pki import Pair

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


def require_nginx() -> str:
    """The nginx binary: missing, a skip on a developer's machine and a failure under CI."""
    if NGINX is None:
        reason = "nginx is not installed (Debian: apt-get install nginx; ./run.sh test does)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set, so this is an error, not a skip)", pytrace=False)
        pytest.skip(reason)
    return NGINX


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def tls_proxy(
    folder: Path,
    upstream: str,
    server: Pair,
    *,
    mode: Literal["grpc", "http"],
    client_ca: Path | None = None,
) -> Iterator[int]:
    """nginx listening with TLS on a free loopback port (yielded) and proxying to ``upstream``."""
    binary = require_nginx()
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = folder / "nginx.conf"
    conf.write_text(_config(folder, port, upstream, server, mode, client_ca))
    log = (folder / "nginx.out").open("wb")
    proc = subprocess.Popen(
        [binary, "-p", str(folder), "-c", str(conf), "-e", str(folder / "error.log")],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_listening(port, proc, folder)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _config(
    folder: Path,
    port: int,
    upstream: str,
    server: Pair,
    mode: Literal["grpc", "http"],
    client_ca: Path | None,
) -> str:
    verify, deny = "", ""
    if client_ca is not None:
        verify = f"ssl_client_certificate {client_ca}; ssl_verify_client optional_no_ca;"
        # A gRPC gateway's refusal: status 16 (UNAUTHENTICATED) as a trailers-only response,
        # for a client without a certificate or with one its CA did not sign.
        deny = (
            "if ($ssl_client_verify != SUCCESS) { add_header grpc-status 16 always;"
            ' add_header grpc-message "client certificate required" always; return 200; }'
            if mode == "grpc"
            else "if ($ssl_client_verify != SUCCESS) { return 403; }"
        )
    if mode == "grpc":
        location = f"grpc_pass grpc://{upstream}; grpc_read_timeout 300s; grpc_send_timeout 300s;"
        listen = f"listen 127.0.0.1:{port} ssl http2;"
    else:
        location = (
            f"proxy_pass http://{upstream}; proxy_http_version 1.1; proxy_buffering off;"
            " proxy_set_header Host $host; proxy_set_header X-Forwarded-Proto https;"
        )
        listen = f"listen 127.0.0.1:{port} ssl;"
    user = "user root;" if os.geteuid() == 0 else ""
    temp = folder / "tmp"
    temp.mkdir(exist_ok=True)
    return f"""
{user}
daemon off;
master_process on;
worker_processes 1;
pid {folder}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    server {{
        {listen}
        ssl_certificate {server.cert};
        ssl_certificate_key {server.key};
        ssl_protocols TLSv1.2 TLSv1.3;
        {verify}
        {"default_type application/grpc;" if mode == "grpc" else ""}
        location / {{ {deny} {location} }}
    }}
}}
"""


def _wait_listening(port: int, proc: subprocess.Popen[bytes], folder: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited: {(folder / 'nginx.out').read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nginx did not listen on {port} within 15 s")
