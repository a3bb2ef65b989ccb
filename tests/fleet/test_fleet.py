"""A worker fleet: three worker processes on one task queue, a couple of hundred refund runs with
approvals on the PostgreSQL ledger, workers SIGKILLed and restarted at random meanwhile, and the
database taken down for a few seconds mid-fleet, as a failover looks to its clients (every
connection dropped, new ones refused).

Every run completes, every approved refund is paid exactly once, every ledger is contiguous with
no duplicate event, and the work is spread over the workers (the distribution is printed, read
from the identities Temporal recorded for each task).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import uuid
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowHistory, WorkflowUpdateFailedError
from temporalio.service import RPCError

from agentledger.activities.ledger import Ledger
from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer
from agentledger.app.identity import Issuer
from agentledger.app.temporal import connect
from agentledger.domain.principal import Principal
from bench.crash import crashkit, fault_pack, outages
from bench.crash.crashkit import CrashSite, WorkerProcess
from tests.crash.conftest import open_seeded

pytestmark = [pytest.mark.temporal, pytest.mark.postgres]

RUNS = int(os.environ.get("AGENTLEDGER_FLEET_RUNS", "200"))
WORKERS = 3
KILLS = 6
AT_ONCE = 40  # runs driven at a time by this test (the fleet holds them all)
FAILOVER_AFTER, FAILOVER_FOR = 10.0, 5.0  # seconds


async def _drive(
    client: Client, site: CrashSite, ledger: Ledger, customer: Principal, approver: Principal,
    order: str,
) -> str:  # fmt: skip
    """Start a refund, approve it from the inbox (again while no worker answers), await it."""
    run_id = await crashkit.start_run(client, site, customer, order)
    for _ in range(200):
        try:
            await crashkit.approve_from_inbox(
                client, ledger, run_id, approver, issuer=site.issuer, timeout=300
            )
            break
        except (RPCError, WorkflowUpdateFailedError, DBAPIError):
            # No worker answered the update (one was killed), or the inbox's database is
            # failing over; a decided approval is refused and recorded, so asking again can
            # never grant twice.
            await asyncio.sleep(0.5)
    await client.get_workflow_handle(run_id).result()
    return run_id


async def _killer(workers: list[WorkerProcess], stop: asyncio.Event) -> None:
    """SIGKILL a random worker every few seconds; its supervisor starts a replacement."""
    chance = random.Random(7)
    for _ in range(KILLS):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=chance.uniform(3.0, 8.0))
        if stop.is_set():
            return
        with contextlib.suppress(ProcessLookupError, AssertionError):
            chance.choice(workers).kill()


async def _failover(database_url: str, stop: asyncio.Event) -> bool:
    """Mid-fleet, the ledger's database refuses and drops every connection for a while."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=FAILOVER_AFTER)
    if stop.is_set():
        return False
    url = make_url(database_url)
    assert url.database is not None
    with outages.database_outage(url.set(database="postgres"), url.database):
        await asyncio.sleep(FAILOVER_FOR)
    return True


async def _polling(client: Client, task_queue: str, workers: int) -> None:
    """Until ``workers`` processes poll the queue (each takes a share only once it polls)."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    for _ in range(600):
        described = await client.workflow_service.describe_task_queue(request)
        if len({p.identity for p in described.pollers}) >= workers:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{workers} workers never polled {task_queue}")


def _handled_by(history: WorkflowHistory) -> Counter[str]:
    """Which worker processes (``pid@host``) took this run's workflow and activity tasks."""
    found: Counter[str] = Counter()
    for event in history.events:
        for attributes in (
            event.workflow_task_started_event_attributes,
            event.activity_task_started_event_attributes,
        ):
            if attributes.identity:
                found[attributes.identity] += 1
    return found


async def test_a_fleet_with_random_kills_and_a_failover_pays_each_refund_exactly_once(
    temporal_server: DevServer, postgres_database: str, tmp_path: Path
) -> None:
    site = CrashSite(temporal_server.address, postgres_database, f"fleet-{uuid.uuid4().hex[:8]}",
                     tmp_path)  # fmt: skip
    runtime = open_seeded(site.database_url, tmp_path)
    Issuer.local(tmp_path)  # one key before three workers race to create it
    ledger = runtime.ledger
    customer, approver = ledger.get_principal("usr_73"), ledger.get_principal("ops_lead_1")
    assert customer is not None and approver is not None
    client = await connect(
        Settings(data_dir=tmp_path, temporal_address=site.address, database_url=site.database_url)
    )
    orders = [fault_pack.crash_order(i) for i in range(RUNS)]
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(order: str) -> str:
        async with gate:
            return await _drive(client, site, ledger, customer, approver, order)

    workers = [WorkerProcess(site) for _ in range(WORKERS)]
    stop = asyncio.Event()
    async with contextlib.AsyncExitStack() as fleet:
        for worker in workers:
            await fleet.enter_async_context(worker)
        await _polling(client, site.task_queue, WORKERS)
        killing = asyncio.create_task(_killer(workers, stop))
        failing_over = asyncio.create_task(_failover(site.database_url, stop))
        run_ids = await asyncio.wait_for(asyncio.gather(*(one(o) for o in orders)), timeout=1500)
        stop.set()
        await killing
        failed_over = await failing_over

    checks = [crashkit.check_run(ledger, r, o) for r, o in zip(run_ids, orders, strict=True)]
    assert [c.run_id for c in checks if c.status != "completed"] == []
    assert sum(c.refund_rows for c in checks) == RUNS  # one refund per approved order
    assert [c for c in checks if c.refund_rows != 1 or c.gaps or c.duplicate_events] == []

    handled: Counter[str] = Counter()
    for run_id in run_ids:
        handled += _handled_by(await client.get_workflow_handle(run_id).fetch_history())
    kills = sum(w.kills for w in workers)
    print(
        f"fleet: {RUNS} runs, {WORKERS} workers, {kills} SIGKILLs, database failover "
        f"{'for ' + str(FAILOVER_FOR) + ' s' if failed_over else 'not reached'}; "
        "tasks per worker process:"
    )
    for identity, tasks in handled.most_common():
        print(f"  {identity}: {tasks}")
    assert kills >= 1
    assert failed_over, "every run ended before the failover: nothing was tested"
    assert len(handled) >= WORKERS  # each of the first three took a share (replacements more)
    runtime.ledger.engine.dispose()
