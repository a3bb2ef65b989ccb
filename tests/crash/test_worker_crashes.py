"""A worker SIGKILLed at the worst moments: every run still refunds exactly once, with a
contiguous, duplicate-free log and the same events as a run without faults.

The worker is a subprocess (``python -m agentledger.cli worker``) loading the fault pack; it kills
itself at a named point once per run, and a supervisor restarts it.
"""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.domain.principal import Principal
from bench.crash import crashkit, fault_pack
from bench.crash.crashkit import (
    CrashSite,
    RunCheck,
    WorkerProcess,
    approve_from_inbox,
    check_run,
    parked_on_approval,
    start_run,
)
from tests.workflows.test_refund_run import HAPPY_PATH

RESULT_TIMEOUT = 120.0


def clean(run_id: str) -> RunCheck:
    return crashkit.clean(run_id, HAPPY_PATH)


async def refund_with_approval(
    client: Client, site: CrashSite, ledger: Ledger, customer: Principal, approver: Principal
) -> str:
    order = fault_pack.crash_order(0)
    run_id = await start_run(client, site, customer, order)
    await approve_from_inbox(client, ledger, run_id, approver, issuer=site.issuer)
    await asyncio.wait_for(client.get_workflow_handle(run_id).result(), RESULT_TIMEOUT)
    return run_id


@pytest.mark.parametrize(
    "point",
    ["create_refund_before_commit", "create_refund_after_commit"],
    ids=["while-create-refund-runs", "after-commit-before-receipt"],
)
async def test_a_worker_killed_inside_create_refund_refunds_exactly_once(
    point: str,
    crash_site: CrashSite,
    crash_ledger: Ledger,
    client: Client,
    customer: Principal,
    approver: Principal,
) -> None:
    async with WorkerProcess(crash_site, point=point) as worker:
        run_id = await refund_with_approval(client, crash_site, crash_ledger, customer, approver)

    assert worker.kills == 1
    assert check_run(crash_ledger, run_id, fault_pack.crash_order(0)) == clean(run_id)


async def test_a_worker_killed_the_moment_the_approval_request_is_recorded_resumes(
    crash_site: CrashSite,
    crash_ledger: Ledger,
    client: Client,
    customer: Principal,
    approver: Principal,
) -> None:
    """The ledger committed the request (the inbox shows it); the workflow task that asked
    never completed, so the new worker re-runs that task and must not contradict the ledger."""
    async with WorkerProcess(crash_site, point="approval_recorded") as worker:
        run_id = await refund_with_approval(client, crash_site, crash_ledger, customer, approver)

    assert worker.kills == 1
    assert check_run(crash_ledger, run_id, fault_pack.crash_order(0)) == clean(run_id)


async def test_a_worker_killed_while_the_run_is_parked_on_an_approval_resumes(
    crash_site: CrashSite,
    crash_ledger: Ledger,
    client: Client,
    customer: Principal,
    approver: Principal,
) -> None:
    order = fault_pack.crash_order(0)
    async with WorkerProcess(crash_site) as worker:
        run_id = await start_run(client, crash_site, customer, order)
        await parked_on_approval(client, run_id)
        worker.kill()
        await approve_from_inbox(client, crash_ledger, run_id, approver, issuer=crash_site.issuer)
        await asyncio.wait_for(client.get_workflow_handle(run_id).result(), RESULT_TIMEOUT)

    assert worker.kills == 1
    assert check_run(crash_ledger, run_id, order) == clean(run_id)


async def test_a_worker_killed_before_a_read_tool_runs_repeats_only_the_read(
    crash_site: CrashSite,
    crash_ledger: Ledger,
    client: Client,
    customer: Principal,
    approver: Principal,
) -> None:
    async with WorkerProcess(crash_site, point="get_order") as worker:
        run_id = await refund_with_approval(client, crash_site, crash_ledger, customer, approver)

    assert worker.kills == 1
    assert check_run(crash_ledger, run_id, fault_pack.crash_order(0)) == clean(run_id)
