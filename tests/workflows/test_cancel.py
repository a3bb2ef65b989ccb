"""An operator cancels a live run: signed as them, judged by the run (the ``canceller`` role in
the run's tenant, a stated reason), honoured at the next safe point. A parked refund refunds
nothing and ends ``run_cancelled`` with who and why; a refused cancel is recorded and changes
nothing; one nobody signed is refused before it is accepted."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from agentledger.app import operators
from agentledger.app.errors import Refused
from agentledger.domain import events as ev
from agentledger.workflows import AgentRunWorkflow, CancelOrder
from bench._chat_pack import OPERATOR  # registers the chat pack, seeded with the stack
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # identity, not storage
]

WHY = "the customer withdrew the request by phone"


async def parked(harness: Harness) -> tuple[str, str]:
    run_id = await harness.start(REQUEST)
    (approval,) = await harness.in_inbox(run_id)
    return run_id, approval.approval_id


async def cancel(harness: Harness, run_id: str, who: str, reason: str = WHY) -> str:
    return await operators.cancel(harness.client, run_id, who, reason, issuer=harness.issuer)


async def refused_update(handle: WorkflowHandle[Any, Any], order: CancelOrder) -> str:
    with pytest.raises(WorkflowUpdateFailedError) as failed:
        await handle.execute_update(AgentRunWorkflow.cancel_run, order)
    return str(failed.value.cause)


async def test_a_parked_refund_cancelled_refunds_nothing_and_records_who_and_why(
    harness: Harness,
) -> None:
    run_id, approval_id = await parked(harness)
    assert await cancel(harness, run_id, "ops_lead_1") == "cancelled"
    events = await harness.finish(run_id)
    expired, ended = events[-2:]
    assert isinstance(expired, ev.ApprovalExpired) and expired.approval_id == approval_id
    assert isinstance(ended, ev.RunCancelled)
    assert (ended.cancelled_by, ended.reason) == ("ops_lead_1", WHY)
    assert ended.assertion is not None and ended.assertion.subject == "ops_lead_1"
    assert ended.operator_entry is not None and "canceller" in ended.operator_entry.roles
    assert refund_rows(harness) == 0
    row = harness.runtime.ledger.get_run(run_id)
    assert row is not None and row.status == "cancelled"
    assert harness.runtime.ledger.approvals(status="pending", run_id=run_id) == []
    with pytest.raises(Refused) as ended_already:  # an ended run takes no cancel
        await cancel(harness, run_id, "ops_lead_1")
    assert ended_already.value.reason_code == "run_ended"


async def test_a_cancel_without_the_role_or_a_reason_is_refused_and_recorded(
    harness: Harness,
) -> None:
    run_id, approval_id = await parked(harness)
    with pytest.raises(Refused, match="lacks the canceller role") as no_role:
        await cancel(harness, run_id, "fin_lead_1")
    assert no_role.value.reason_code == "missing_role"
    with pytest.raises(Refused) as no_reason:
        await cancel(harness, run_id, "ops_lead_1", reason="  ")
    assert no_reason.value.reason_code == "bad_reason"
    refused = [
        e for e in harness.runtime.ledger.read(run_id) if isinstance(e, ev.OperatorActionRefused)
    ]
    assert [(e.attempted_by, e.reason_code) for e in refused] == [
        ("fin_lead_1", "missing_role"),
        ("ops_lead_1", "bad_reason"),
    ]
    await harness.decide(run_id, approval_id, "ops_lead_1")  # the run went on untouched
    assert (await harness.finish(run_id))[-1].kind == "run_completed"
    assert refund_rows(harness) == 1


async def test_a_cancel_nobody_signed_or_signed_for_another_reason_is_refused(
    harness: Harness,
) -> None:
    run_id, approval_id = await parked(harness)
    handle = harness.client.get_workflow_handle(run_id)
    before = len(harness.runtime.ledger.read(run_id))
    unsigned = CancelOrder(operator_id="ops_lead_1", reason=WHY)
    assert "assertion_missing" in await refused_update(handle, unsigned)
    assert len(harness.runtime.ledger.read(run_id)) == before  # refused before it was accepted
    signed = harness.issuer.operator_assertion("ops_lead_1", "cancel", run_id=run_id, text=WHY)
    swapped = CancelOrder(operator_id="ops_lead_1", reason="another reason", assertion=signed)
    assert "digest" in await refused_update(handle, swapped)
    other = harness.issuer.operator_assertion(
        "ops_lead_1", "cancel", run_id="run-elsewhere", text=WHY
    )
    elsewhere = CancelOrder(operator_id="ops_lead_1", reason=WHY, assertion=other)
    assert "audience" in await refused_update(handle, elsewhere)
    assert refund_rows(harness) == 0
    await harness.decide(run_id, approval_id, "ops_lead_1")
    assert (await harness.finish(run_id))[-1].kind == "run_completed"


async def test_a_conversation_waiting_on_its_customer_is_cancelled(harness: Harness) -> None:
    handle = await harness.chatting()
    assert await cancel(harness, handle.id, OPERATOR.user_id) == "cancelled"
    outcome = await handle.result()
    assert outcome.status == "cancelled"
    assert harness.runtime.ledger.read(handle.id)[-1].kind == "run_cancelled"
