"""A flood of updates no pinned key signed, sent at a parked run through the raw SDK, is refused
by the update's validator: no handler takes it (so none holds one of the execution's in-flight
update slots while waiting on an activity), nothing reaches the ledger or the Temporal history,
and the real, signed decision or reply goes through once the flood is over. Each refusal is
counted on ``agentledger_unsigned_updates_refused_total``, on the worker's ``/metrics``."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from agentledger.app import runs as client_ops
from agentledger.app.devserver import DevServer
from agentledger.app.observability.metrics import LedgerMetrics, temporal_runtime
from agentledger.app.temporal import connect
from agentledger.domain import events as ev
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision, Reply
from bench._chat_pack import CUSTOMER  # registers the chat pack, seeded with the stack
from bench._stack import open_stack
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # identity, not storage
]

FLOOD = 30
"""Three times Temporal's in-flight updates per execution (``history.maxInFlightUpdates``)."""


@pytest.fixture
async def exported(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[Harness, LedgerMetrics]]:
    """A harness whose worker runs on a Temporal runtime exporting the SDK's metrics, and the
    ``/metrics`` scrape an operator reads (the ledger's metrics with the SDK's appended)."""
    runtime, sdk_address = temporal_runtime()
    stack = await open_stack(
        tmp_path, temporal_server.address, database_url, f"flood-{uuid.uuid4().hex[:8]}"
    )
    metrics = LedgerMetrics.over(stack.runtime.ledger, sdk_address=sdk_address)
    client = await connect(stack.settings, runtime=runtime)
    async with stack.runtime.worker(client):
        yield Harness(stack.runtime, client, stack.settings), metrics
    stack.runtime.ledger.engine.dispose()


async def _outcome(sent: Awaitable[object]) -> str:
    """``refused`` by the run with the reason, ``throttled`` by the frontend, or ``taken``."""
    try:
        await sent
    except WorkflowUpdateFailedError as exc:
        return f"refused {getattr(exc.cause, 'type', None)}"
    except RPCError as exc:  # over the execution's in-flight limit while the flood lasts
        return "throttled" if "limit" in exc.message.lower() else f"rpc {exc.message}"
    return "taken"


def _refused_on_metrics(scrape: str, queue: str) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(scrape):
        for sample in family.samples:
            if (
                sample.name == "agentledger_unsigned_updates_refused_total"
                and sample.labels.get("task_queue") == queue
            ):
                key = (sample.labels["update"], sample.labels["reason"])
                found[key] = found.get(key, 0.0) + sample.value
    return found


async def _accepted_updates(client: Client, run_id: str) -> list[str]:
    """The names of the updates the run's Temporal history accepted."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    accepted = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    return [
        e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for e in history.events
        if e.event_type == accepted
    ]


async def test_a_flood_of_unsigned_decisions_is_refused_unrecorded_and_the_approver_decides(
    exported: tuple[Harness, LedgerMetrics],
) -> None:
    harness, metrics = exported
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    handle = harness.client.get_workflow_handle(run_id)
    unsigned = ApprovalDecision(
        approval_id=approval_id,
        approver_id="ops_lead_1",  # a real approver's id: anyone can claim it
        approve=True,
        proposal_digest=pending.proposal_digest,
    )
    outcomes = await asyncio.gather(
        *(
            _outcome(handle.execute_update(AgentRunWorkflow.decide_approval, unsigned))
            for _ in range(FLOOD)
        )
    )
    refused = outcomes.count("refused assertion_missing")
    assert refused + outcomes.count("throttled") == FLOOD, outcomes
    assert refused > 0

    await harness.decide(run_id, approval_id, "ops_lead_1")
    events = await harness.finish(run_id)
    assert not [e for e in events if isinstance(e, ev.ApprovalAttemptRefused)]
    (granted,) = [e for e in events if isinstance(e, ev.ApprovalGranted)]
    assert granted.approver == "ops_lead_1" and refund_rows(harness) == 1
    assert await _accepted_updates(harness.client, run_id) == ["decide_approval"]
    counted = _refused_on_metrics(metrics.scrape(), harness.settings.task_queue)
    assert counted.keys() == {("decide_approval", "assertion_missing")}
    # Refusals, not distinct updates: an update the server hands the worker again (its
    # speculative workflow task superseded by the next update of the flood) is refused again.
    assert counted["decide_approval", "assertion_missing"] >= refused


async def test_a_flood_of_unsigned_replies_is_refused_unrecorded_and_the_customer_is_heard(
    harness: Harness,
) -> None:
    handle = await harness.chatting()
    forged = Reply(principal_id=CUSTOMER.user_id, text="red", assertion="not.a.jws")
    outcomes = await asyncio.gather(
        *(_outcome(handle.execute_update(AgentRunWorkflow.reply, forged)) for _ in range(FLOOD))
    )
    refused = outcomes.count("refused assertion_malformed")
    assert refused + outcomes.count("throttled") == FLOOD, outcomes
    assert refused > 0

    await client_ops.reply(
        harness.client, handle.id, CUSTOMER.user_id, "red", issuer=harness.issuer
    )
    await client_ops.wait_for(harness.client, handle.id, pending_approval=False)
    await handle.terminate("checked")
    events = harness.runtime.ledger.read(handle.id)
    assert not [e for e in events if isinstance(e, ev.ReplyRefused)]
    assert [e.text for e in events if isinstance(e, ev.UserReplied)] == ["red"]
    assert await _accepted_updates(harness.client, handle.id) == ["reply"]
