"""Fixtures for crash tests: a database seeded with the fault pack's orders, a client, principals.

The worker under test always runs in a subprocess (``crashkit.WorkerProcess``); this process only
starts runs, sends approvals and reads the ledger.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer
from agentledger.app.runtime import Runtime
from agentledger.app.temporal import connect
from agentledger.domain.principal import Principal
from bench.crash import fault_pack
from bench.crash.crashkit import CrashSite


def open_seeded(database_url: str, work_dir: Path) -> Runtime:
    runtime = Runtime.open(Settings(data_dir=work_dir, database_url=database_url))
    runtime.seed()
    fault_pack.seed(runtime.ledger.engine)
    return runtime


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def crash_site(temporal_server: DevServer, sqlite_url: str, tmp_path: Path) -> CrashSite:
    return CrashSite(
        address=temporal_server.address,
        database_url=sqlite_url,
        task_queue=f"crash-{uuid.uuid4().hex[:10]}",
        work_dir=tmp_path,
    )


@pytest.fixture
def crash_ledger(crash_site: CrashSite) -> Iterator[Ledger]:
    runtime = open_seeded(crash_site.database_url, crash_site.work_dir)
    yield runtime.ledger
    runtime.ledger.engine.dispose()


@pytest.fixture
async def client(crash_site: CrashSite) -> AsyncIterator[Client]:
    settings = Settings(
        data_dir=crash_site.work_dir,
        temporal_address=crash_site.address,
        database_url=crash_site.database_url,  # where the workflows' payload keys are
    )
    yield await connect(settings)


@pytest.fixture
def customer(crash_ledger: Ledger) -> Principal:
    found = crash_ledger.get_principal("usr_73")
    assert found is not None
    return found


@pytest.fixture
def approver(crash_ledger: Ledger) -> Principal:
    found = crash_ledger.get_principal("ops_lead_1")
    assert found is not None
    return found
