"""The Temporal server killed and restarted mid-run, and the ledger database refusing every
connection for a while: runs resume, activities retry with backoff, nothing is lost or doubled."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.engine import URL, make_url

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger._tables import payload_keys
from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer, stop_dev_server
from agentledger.app.temporal import connect
from bench._stack import start_dev_server
from bench.crash import fault_pack
from bench.crash.crashkit import (
    CrashSite,
    WorkerProcess,
    approve_from_inbox,
    check_run,
    reached,
    release,
    start_run,
)
from bench.crash.outages import crash_and_restart_server, database_outage
from tests.crash.conftest import open_seeded
from tests.crash.test_worker_crashes import RESULT_TIMEOUT, clean

OUTAGE_SECONDS = 6.0


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[DevServer, Path]]:
    """A server of this test's own: the session's server must not be restarted under others."""
    data_dir = tmp_path / "temporal"
    server = start_dev_server(data_dir)
    yield server, data_dir
    stop_dev_server(data_dir)


async def events_recorded(ledger: Ledger, run_id: str, at_least: int) -> None:
    while ledger.last_seq(run_id) < at_least:
        await asyncio.sleep(0.01)


async def test_a_temporal_server_killed_mid_run_and_restarted_loses_nothing(
    own_server: tuple[DevServer, Path], tmp_path: Path
) -> None:
    server, data_dir = own_server
    site = CrashSite(server.address, f"sqlite:///{tmp_path / 'ledger.db'}", "restart", tmp_path)
    runtime = open_seeded(site.database_url, tmp_path)
    ledger, order = runtime.ledger, fault_pack.crash_order(0)
    customer, approver = ledger.get_principal("usr_73"), ledger.get_principal("ops_lead_1")
    assert customer is not None and approver is not None
    client = await connect(
        Settings(data_dir=tmp_path, temporal_address=server.address, database_url=site.database_url)
    )

    async with WorkerProcess(site):
        run_id = await start_run(client, site, customer, order)
        await events_recorded(ledger, run_id, 5)  # past the first tool call, steps in flight
        await crash_and_restart_server(server, data_dir)
        await approve_from_inbox(client, ledger, run_id, approver, issuer=site.issuer)
        await asyncio.wait_for(client.get_workflow_handle(run_id).result(), RESULT_TIMEOUT)

    assert check_run(ledger, run_id, order) == clean(run_id)


@pytest.mark.postgres
@pytest.mark.parametrize(
    "point",
    ["get_order", "create_refund_before_commit"],
    ids=["during-a-read", "during-the-refund-commit"],
)
async def test_a_database_refusing_connections_for_a_while_delays_but_loses_nothing(
    point: str,
    crash_site: CrashSite,
    postgres_server: URL,
    postgres_database: str,
) -> None:
    site = CrashSite(
        crash_site.address, postgres_database, crash_site.task_queue, crash_site.work_dir
    )
    client = await connect(
        Settings(
            data_dir=site.work_dir, temporal_address=site.address, database_url=site.database_url
        )
    )
    runtime = open_seeded(site.database_url, site.work_dir)
    ledger, order = runtime.ledger, fault_pack.crash_order(0)
    customer, approver = ledger.get_principal("usr_73"), ledger.get_principal("ops_lead_1")
    assert customer is not None and approver is not None
    database = make_url(postgres_database).database
    assert database is not None

    async with WorkerProcess(site, point=point, action="stall") as worker:
        run_id = await start_run(client, site, customer, order)
        if point.startswith("create_refund"):
            await approve_from_inbox(client, ledger, run_id, approver, issuer=site.issuer)
        await reached(site, point, order)  # the tool call is under way
        with database_outage(postgres_server, database):
            release(site)  # the read now meets a database that refuses it, for a while
            await asyncio.sleep(OUTAGE_SECONDS)
        if point == "get_order":
            await approve_from_inbox(client, ledger, run_id, approver, issuer=site.issuer)
        await asyncio.wait_for(client.get_workflow_handle(run_id).result(), RESULT_TIMEOUT)

    assert worker.kills == 0
    assert check_run(ledger, run_id, order) == clean(run_id)
    ledger.engine.dispose()


async def test_a_run_started_while_the_database_refuses_waits_for_its_payload_key(
    crash_site: CrashSite, postgres_server: URL, postgres_database: str
) -> None:
    """A start's first payload needs the run's own key, kept in the ledger: during a failover
    the start waits for the database (its pooled connection dropped, new ones refused) instead
    of failing, and the key it gets is stored."""
    site = CrashSite(
        crash_site.address, postgres_database, crash_site.task_queue, crash_site.work_dir
    )
    settings = Settings(
        data_dir=site.work_dir, temporal_address=site.address, database_url=site.database_url
    )
    client = await connect(settings)
    ledger = open_seeded(site.database_url, site.work_dir).ledger
    customer = ledger.get_principal("usr_73")
    assert customer is not None
    await start_run(client, site, customer, fault_pack.crash_order(0))  # a pooled connection
    database = make_url(postgres_database).database
    assert database is not None

    with database_outage(postgres_server, database):
        order = fault_pack.crash_order(1)
        starting = asyncio.create_task(start_run(client, site, customer, order))
        await asyncio.sleep(2.0)
        assert not starting.done()  # waiting, not failed
    run_id = await asyncio.wait_for(starting, 30)

    with ledger.engine.connect() as conn:
        query = select(payload_keys.c.wrapped).where(payload_keys.c.workflow_id == run_id)
        assert conn.execute(query).scalar_one() is not None
    ledger.engine.dispose()
