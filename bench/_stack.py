"""The embedded stack that benchmarks and tests both run on: a dev server on a free port, a
seeded runtime over one database, and a client (tests import these; bench never imports tests)."""

from __future__ import annotations

import socket
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from agentledger.app.config import Settings, TemporalSecurity
from agentledger.app.devserver import DevServer, ensure_dev_server, stop_dev_server
from agentledger.app.runtime import Runtime
from agentledger.app.temporal import connect
from bench.harness import Harness

Stack = Harness
"""The runtime, client and settings of one stack (the benchmarks' name for a ``Harness``)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_dev_server(data_dir: Path) -> DevServer:
    """A headless dev server persisting in ``data_dir``, on a free port; stop it with
    ``agentledger.app.devserver.stop_dev_server(data_dir)``."""
    return ensure_dev_server(data_dir, port=free_port(), ui_port=None)


async def open_stack(
    data_dir: Path,
    temporal_address: str,
    database_url: str | None,
    task_queue: str,
    *,
    payload_codec: bool = True,
) -> Harness:
    """A seeded runtime and a client on ``task_queue`` (no worker yet: ``runtime.worker``);
    payloads sealed with the data directory's key ring unless ``payload_codec`` is off."""
    settings = Settings(
        data_dir=data_dir,
        database_url=database_url,
        temporal_address=temporal_address,
        task_queue=task_queue,
        temporal_security=TemporalSecurity(payload_codec=payload_codec),
    )
    runtime = Runtime.open(settings)
    runtime.seed()
    return Harness(runtime, await connect(settings), settings)


@asynccontextmanager
async def embedded_stack(
    database_url: str | None = None, *, payload_codec: bool = True
) -> AsyncIterator[Stack]:
    """A private stack in a temporary directory, its dev server stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-") as tmp:
        data_dir = Path(tmp)
        server = start_dev_server(data_dir)
        try:
            queue = f"bench-{uuid.uuid4().hex[:8]}"
            yield await open_stack(
                data_dir, server.address, database_url, queue, payload_codec=payload_codec
            )
        finally:
            stop_dev_server(data_dir)
