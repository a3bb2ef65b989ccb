"""The refund scenario on a real Temporal dev server, against SQLite and PostgreSQL ledgers."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from agentledger.app.errors import Refused
from agentledger.domain.decisions import Claim
from agentledger.domain.events import ApprovalAttemptRefused, RunCompleted, RunEvent
from agentledger.domain.fold import project
from agentledger.packs.support import records
from tests._temporal import Harness

REQUEST = "Can I get a refund for order ord_4821? It arrived late."

HAPPY_PATH = [
    "run_started",
    "step_started",
    "context_packet_built",
    "budget_charged",
    "model_called",
    "decision_recorded",  # get_order
    "tool_call_authorised",
    "tool_receipt_recorded",
    "step_started",
    "context_packet_built",
    "budget_charged",
    "model_called",
    "decision_recorded",  # search
    "tool_call_authorised",
    "tool_receipt_recorded",
    "evidence_recorded",
    "evidence_recorded",
    "evidence_recorded",
    "step_started",
    "context_packet_built",
    "budget_charged",
    "model_called",
    "decision_recorded",  # proceed
    "step_started",
    "context_packet_built",
    "budget_charged",
    "model_called",
    "decision_recorded",  # draft
    "approval_requested",
    "approval_granted",
    "tool_call_authorised",
    "tool_receipt_recorded",  # create_refund, exactly once
    "step_started",
    "context_packet_built",
    "budget_charged",
    "model_called",
    "decision_recorded",  # final
    "memory_proposed",  # the outcome with its receipt enters the memory lifecycle
    "run_completed",
]


def refund_rows(h: Harness, order_id: str = "ord_4821") -> int:
    with h.runtime.ledger.engine.connect() as conn:
        return conn.execute(
            select(func.count())
            .select_from(records.refunds)
            .where(records.refunds.c.order_id == order_id)
        ).scalar_one()


def kinds(events: list[RunEvent]) -> list[str]:
    return [e.kind for e in events]


async def approve_pending(h: Harness, run_id: str, approver: str = "ops_lead_1") -> None:
    state = await h.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals
    await h.decide(run_id, approval_id, approver)


async def test_a_late_order_is_refunded_once_after_approval(harness: Harness) -> None:
    run_id = await harness.start(REQUEST)
    await approve_pending(harness, run_id)
    events = await harness.finish(run_id)

    assert kinds(events) == HAPPY_PATH
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert refund_rows(harness) == 1
    final = events[-1]
    assert isinstance(final, RunCompleted)
    assert final.cited_source_ids[0] == "returns-2026-08#late-delivery"
    assert set(final.cited_source_ids) <= {
        e.source_id for e in events if e.kind == "evidence_recorded"
    }  # type: ignore[attr-defined]
    assert "has been created" in final.answer
    state = project(events)
    refund = next(a for a in state.completed_actions if a.tool == "create_refund")
    assert refund.status == "succeeded" and refund.idempotency_key
    assert final.claims == (
        Claim(operation_id=refund.operation_id, tool="create_refund", resource_id="ord_4821"),
    )
    assert final.answer.endswith(f"(receipt {refund.receipt_id})")
    run = harness.runtime.ledger.get_run(run_id)
    assert run is not None and run.status == "completed"
    assert harness.runtime.ledger.approvals(status="granted", run_id=run_id)


async def test_a_second_identical_request_does_not_refund_twice(harness: Harness) -> None:
    first = await harness.start(REQUEST)
    await approve_pending(harness, first)
    await harness.finish(first)

    second = await harness.start(REQUEST)
    events = await harness.finish(second)

    assert "approval_requested" not in kinds(events)
    assert refund_rows(harness) == 1
    assert "already been refunded" in project(events).last_answer.answer  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("approver", "reason_code"),
    [
        ("usr_73", "requester_cannot_approve"),
        ("agent_2", "missing_role"),
        ("ops_globex", "wrong_tenant"),
    ],
)
async def test_an_approval_by_someone_not_allowed_is_refused_and_recorded(
    harness: Harness, approver: str, reason_code: str
) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals

    with pytest.raises(Refused):
        await harness.decide(run_id, approval_id, approver)
    await harness.decide(run_id, approval_id, "ops_lead_1")
    events = await harness.finish(run_id)

    refused = [e for e in events if isinstance(e, ApprovalAttemptRefused)]
    assert [(e.attempted_by, e.reason_code) for e in refused] == [(approver, reason_code)]
    assert refund_rows(harness) == 1


async def test_a_reused_approval_is_refused_and_recorded(harness: Harness) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals
    await harness.decide(run_id, approval_id, "ops_lead_1")
    await harness.finish(run_id)

    with pytest.raises(Refused):
        await harness.decide(run_id, approval_id, "ops_lead_1")
    assert refund_rows(harness) == 1


async def test_a_rejected_approval_ends_with_an_answer_and_no_refund(harness: Harness) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals
    await harness.decide(
        run_id, approval_id, "ops_lead_1", approve=False, reason="customer already got a voucher"
    )
    events = await harness.finish(run_id)

    assert kinds(events).count("approval_requested") == 1  # a rejected proposal is not re-asked
    assert "approval_rejected" in kinds(events)
    assert "tool_call_authorised" in kinds(events)  # the reads, never the refund
    assert refund_rows(harness) == 0
    answer = project(events).last_answer
    assert answer is not None and "was not carried out" in answer.answer
    assert isinstance(events[-1], RunCompleted)


async def test_an_unknown_order_ends_in_a_clear_answer(harness: Harness) -> None:
    run_id = await harness.start("Refund order ord_9999 please, it never came.")
    events = await harness.finish(run_id)

    assert events[-1].kind == "run_completed"
    errors = [e for e in events if e.kind == "error_recorded"]
    assert [e.code for e in errors] == ["order_not_found"]  # type: ignore[attr-defined]
    assert "could not find order ord_9999" in project(events).last_answer.answer  # type: ignore[union-attr]
    assert refund_rows(harness, "ord_9999") == 0


async def test_another_customers_order_is_treated_as_unknown(harness: Harness) -> None:
    run_id = await harness.start("Refund ord_5100, it arrived late.", user="usr_73")
    events = await harness.finish(run_id)

    assert "approval_requested" not in kinds(events)
    assert refund_rows(harness, "ord_5100") == 0


async def test_an_order_delivered_on_time_gets_no_refund_proposal(harness: Harness) -> None:
    run_id = await harness.start("Can I get a refund for ord_4822? It arrived late.")
    events = await harness.finish(run_id)

    assert "approval_requested" not in kinds(events)
    answer = project(events).last_answer
    assert answer is not None and "delivered on time" in answer.answer
    assert answer.supporting_source_ids == ("returns-2026-08#change-of-mind",)
