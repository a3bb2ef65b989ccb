"""`verify` reads Temporal's history, never a worker: it agrees with the ledger on a finished
run, and calls a run that never got going what it is instead of waiting on it."""

from __future__ import annotations

import argparse

import pytest

from agentledger.app import runs as client_ops
from agentledger.app.errors import ServerUnavailable
from agentledger.app.history import recorded_state
from agentledger.app.registry import get_pack
from agentledger.cli import verify as verify_command
from agentledger.domain.fold import project
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_history_and_the_ledger_project_the_same_finished_run(
    harness: Harness,
) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    await harness.decide(run_id, next(iter(state.pending_approvals)), "ops_lead_1")
    events = await harness.finish(run_id)
    recorded = await recorded_state(harness.client, run_id)
    assert recorded == project(events)
    assert recorded.status == "completed"
    assert await verify_command.verify(harness.settings, argparse.Namespace(run_id=run_id)) == 0


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_run_no_worker_ever_picked_up_does_not_match(harness: Harness) -> None:
    order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
    handle = await client_ops.start_run(
        harness.client, "a-queue-nobody-polls", order, issuer=harness.issuer
    )
    verdict = await verify_command.verify(harness.settings, argparse.Namespace(run_id=handle.id))
    with pytest.raises(ServerUnavailable, match="no worker is polling task queue a-queue-nobody"):
        await client_ops.live_state(harness.client, handle.id)
    await handle.terminate("test over")
    assert verdict == 1
