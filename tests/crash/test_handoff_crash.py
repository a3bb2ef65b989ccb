"""A worker SIGKILLed in the middle of a child run (the fraud-check reviewer's own read): the
parent and the child resume on a restarted worker, each log contiguous and free of duplicates,
one delegation, one review, one refund."""

from __future__ import annotations

import asyncio
import dataclasses
import os

from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.domain import events as ev
from agentledger.domain.fold import project
from agentledger.domain.principal import Principal
from agentledger.workflows import AgentRunWorkflow, RunInput
from bench.crash.crashkit import (
    CrashSite,
    WorkerProcess,
    approve_from_inbox,
    duplicate_events,
    refund_rows,
)
from tests.crash import handoff_faults
from tests.workflows.test_refund_run import REQUEST

RESULT_TIMEOUT = 120.0


def _contiguous(events: list[ev.RunEvent]) -> bool:
    return [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_a_worker_killed_inside_the_childs_read_resumes_without_double_effects(
    crash_site: CrashSite,
    crash_ledger: Ledger,
    client: Client,
    customer: Principal,
    approver: Principal,
) -> None:
    site = handoff_faults.HandoffSite(**dataclasses.asdict(crash_site))
    run_id = f"run_handoff_crash_{os.urandom(3).hex()}"
    order = handoff_faults.make_work_order(REQUEST, customer)
    signed = site.issuer.start_assertion(order, run_id=run_id)
    async with WorkerProcess(site, point="get_customer") as worker:
        await client.start_workflow(
            AgentRunWorkflow.run,
            RunInput(run_id=run_id, work_order=order, requester_assertion=signed),
            id=run_id,
            task_queue=site.task_queue,
        )
        await approve_from_inbox(client, crash_ledger, run_id, approver, issuer=site.issuer)
        await asyncio.wait_for(client.get_workflow_handle(run_id).result(), RESULT_TIMEOUT)

    assert worker.kills == 1
    parent = crash_ledger.read(run_id)
    (requested,) = [e for e in parent if isinstance(e, ev.HandoffRequested)]
    child = crash_ledger.read(requested.child_run_id)
    for log in (parent, child):
        assert _contiguous(log) and duplicate_events(log) == 0
    assert project(parent).status == project(child).status == "completed"
    assert [e.kind for e in parent].count("handoff_requested") == 1
    (completed,) = [e for e in parent if isinstance(e, ev.HandoffCompleted)]
    assert completed.output["verdict"] == "clear"
    reads = [e.receipt.tool for e in child if isinstance(e, ev.ToolReceiptRecorded)]
    assert reads == ["get_order", "get_customer"]  # the killed read repeated, recorded once
    assert refund_rows(crash_ledger, "ord_4821") == 1
