"""Governance at the edges, end to end on a real Temporal server: approvals that expire, are
for another amount or arrive twice, budgets that run out, and a tool result that gives orders."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select
from temporalio.client import WorkflowUpdateFailedError

from agentledger.app import runs as client_ops
from agentledger.app.errors import Refused
from agentledger.app.registry import get_pack
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.events import (
    ApprovalAttemptRefused,
    ApprovalExpired,
    ContextPacketBuilt,
    RunCompleted,
    RunEvent,
    RunFailed,
    ToolCallDenied,
)
from agentledger.domain.fold import project
from agentledger.domain.governance import proposal_digest
from agentledger.domain.workorder import Budget, WorkOrder
from agentledger.packs.support import records
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision
from tests._temporal import Harness
from tests.workflows import hostile_packs
from tests.workflows.test_refund_run import REQUEST, kinds, refund_rows


@pytest.fixture(autouse=True)
def _hostile_packs() -> None:
    hostile_packs.register()  # before the harness builds its worker, which collects the models


def work_order(h: Harness, pack: str = "support", **changes: object) -> WorkOrder:
    order = get_pack(pack).make_work_order(REQUEST, h.principal("usr_73"))
    return order.model_copy(update=changes)


async def run(h: Harness, order: WorkOrder) -> str:
    handle = await client_ops.start_run(h.client, h.settings.task_queue, order, issuer=h.issuer)
    return handle.id


async def test_an_approval_nobody_decides_expires_and_the_run_ends_without_a_refund(
    harness: Harness,
) -> None:
    run_id = await run(harness, work_order(harness, hostile_packs.SHORT_TTL.name))
    events = await harness.finish(run_id)  # nobody approves; the durable timer fires

    expired = [e for e in events if isinstance(e, ApprovalExpired)]
    assert len(expired) == 1
    assert "tool_call_authorised" not in kinds(events[events.index(expired[0]) :])
    assert isinstance(events[-1], RunCompleted)
    assert "was not carried out" in events[-1].answer
    assert refund_rows(harness) == 0
    assert harness.runtime.ledger.approvals(status="expired", run_id=run_id)


async def test_an_approval_arriving_after_expiry_is_refused_and_recorded(
    harness: Harness,
) -> None:
    run_id = await run(harness, work_order(harness, hostile_packs.SHORT_TTL.name))
    state = await harness.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals
    await harness.finish(run_id)

    with pytest.raises(Refused):
        await harness.decide(run_id, approval_id, "ops_lead_1")
    assert refund_rows(harness) == 0


async def test_a_run_out_of_steps_ends_with_a_typed_failure_not_a_loop(harness: Harness) -> None:
    run_id = await run(harness, work_order(harness, budget=Budget(steps=2)))
    events = await harness.finish(run_id)

    assert isinstance(events[-1], RunFailed)
    assert events[-1].reason_code == "budget_exhausted"
    assert kinds(events).count("step_started") == 2
    assert refund_rows(harness) == 0


async def test_a_run_out_of_tool_calls_gets_a_typed_denial_and_ends(harness: Harness) -> None:
    run_id = await run(harness, work_order(harness, budget=Budget(tool_calls=1)))
    events = await harness.finish(run_id)

    denied = [e for e in events if isinstance(e, ToolCallDenied)]
    assert denied and {e.reason_code for e in denied} == {"budget_exhausted"}
    assert kinds(events).count("tool_call_authorised") == 1
    assert events[-1].kind in ("run_completed", "run_failed")
    assert refund_rows(harness) == 0


async def test_an_approval_for_a_different_amount_is_refused_and_recorded(
    harness: Harness,
) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    (pending,) = state.pending_approvals.values()
    handle = harness.client.get_workflow_handle(run_id)
    other = await _digest_of_another_amount(harness, run_id, pending.proposal.arguments)

    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(
            AgentRunWorkflow.decide_approval,
            ApprovalDecision(
                approval_id=pending.approval_id,
                approver_id="ops_lead_1",
                approve=True,
                proposal_digest=other,
                # Signed by the real approver: what they saw was another amount.
                assertion=harness.issuer.approval_assertion(
                    "ops_lead_1",
                    run_id=run_id,
                    approval_id=pending.approval_id,
                    digest=other,
                    approve=True,
                ),
            ),
        )
    await harness.decide(run_id, pending.approval_id, "ops_lead_1")
    events = await harness.finish(run_id)

    refused = [e for e in events if isinstance(e, ApprovalAttemptRefused)]
    assert [(e.attempted_by, e.reason_code) for e in refused] == [("ops_lead_1", "digest_mismatch")]
    assert _refunded_amounts(harness) == [42.5]


async def _digest_of_another_amount(h: Harness, run_id: str, arguments: dict) -> str:  # type: ignore[type-arg]
    """What an approver who saw 500 EUR instead of the pending amount would send."""
    run = h.runtime.ledger.get_run(run_id)
    assert run is not None
    manifest = h.runtime.ledger.get_manifest(run.manifest_hash)
    assert manifest is not None
    bigger = ToolCallProposal(tool="create_refund", arguments={**arguments, "amount": 500.0})
    return proposal_digest(bigger, manifest.hash, manifest.policy_version)


async def test_a_duplicate_approval_update_while_waiting_refunds_once(harness: Harness) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals

    outcomes = await asyncio.gather(
        harness.decide(run_id, approval_id, "ops_lead_1"),
        harness.decide(run_id, approval_id, "ops_lead_1"),
        return_exceptions=True,
    )
    events = await harness.finish(run_id)

    assert sum(o is None for o in outcomes) == 1
    assert [type(o) for o in outcomes if o is not None] == [Refused]
    assert kinds(events).count("approval_granted") == 1
    refused = [e for e in events if isinstance(e, ApprovalAttemptRefused)]
    # The loser is refused either inside the run (recorded as not_pending) or, if the run has
    # already finished by the time it arrives, by the closed workflow; never granted twice.
    assert [e.reason_code for e in refused] in (["not_pending"], [])
    assert _refunded_amounts(harness) == [42.5]


async def test_a_tool_result_that_gives_orders_stays_data_and_cannot_move_money(
    harness: Harness,
) -> None:
    run_id = await run(harness, work_order(harness, hostile_packs.INJECTED.name))
    events = await harness.finish(run_id)

    denied = [e for e in events if isinstance(e, ToolCallDenied)]
    assert [(e.tool, e.reason_code) for e in denied] == [
        ("create_refund", "exceeds_verified_limit")
    ]
    assert "approval_requested" not in kinds(events)
    assert _refunded_amounts(harness) == []
    assert isinstance(events[-1], RunCompleted)
    carriers = _packet_items_containing(harness, events, hostile_packs.INJECTION)
    assert carriers, "the injected text reached the model"
    assert {(i["kind"], i["trust_level"]) for i in carriers} == {
        ("tool_result", "tool_observation")
    }
    assert project(events).status == "completed"


def _packet_items_containing(h: Harness, events: list[RunEvent], text: str) -> list[dict]:  # type: ignore[type-arg]
    items = []
    for event in events:
        if isinstance(event, ContextPacketBuilt):
            packet = h.runtime.ledger.get_packet(event.packet_hash)
            assert packet is not None
            for section in packet["sections"]:
                items += [i for i in section["items"] if text in str(i["content"])]
    return items


def _refunded_amounts(h: Harness, order_id: str = "ord_4821") -> list[float]:
    with h.runtime.ledger.engine.connect() as conn:
        rows = conn.execute(
            select(records.refunds.c.amount).where(records.refunds.c.order_id == order_id)
        ).all()
    return [float(r.amount) for r in rows]
