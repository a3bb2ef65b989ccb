"""A private embedded stack for benchmarks: dev server (speed flags), SQLite ledger, worker."""

from __future__ import annotations

import socket
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

from agentledger.app import Runtime
from agentledger.config import Settings
from agentledger.devserver import ensure_dev_server, stop_dev_server
from agentledger.temporal_client import connect


@dataclass
class Stack:
    settings: Settings
    client: Client
    runtime: Runtime


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def embedded_stack(database_url: str | None = None) -> AsyncIterator[Stack]:
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-") as tmp:
        data_dir = Path(tmp)
        server = ensure_dev_server(data_dir, port=free_port(), ui_port=None)
        try:
            settings = Settings(
                data_dir=data_dir,
                database_url=database_url,
                temporal_address=server.address,
                task_queue=f"bench-{uuid.uuid4().hex[:8]}",
            )
            runtime = Runtime.open(settings)
            runtime.seed()
            yield Stack(settings, await connect(settings), runtime)
        finally:
            stop_dev_server(data_dir)
