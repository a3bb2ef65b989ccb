"""An approver approves a smaller call than proposed: the edit is signed (the assertion covers
the pending proposal's digest and the exact edits), judged by the run as a proposal would be
(schema, the gate's checks, no widening unless the terms allow it), recorded with what was
proposed, what was approved and the difference, and only the edited call runs, once, under its
own idempotency key. The model's next packet carries the amendment as a verified fact."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import JsonValue
from sqlalchemy import select
from temporalio.client import WorkflowUpdateFailedError

from agentledger.app import operators
from agentledger.app import runs as client_ops
from agentledger.app.errors import Refused
from agentledger.domain import events as ev
from agentledger.domain.context.candidates import candidates_from_state
from agentledger.domain.fold import project
from agentledger.domain.governance import arguments_digest, idempotency_key
from agentledger.domain.state import WorkingState
from agentledger.packs.support import records
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # identity, not storage
]


async def parked(harness: Harness) -> tuple[str, str, dict[str, JsonValue]]:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    return run_id, approval_id, pending.proposal.arguments


async def approve(
    harness: Harness, run_id: str, approval_id: str, edits: dict[str, JsonValue], who: str
) -> str:
    result = await client_ops.decide(
        harness.client, run_id, approval_id, who, issuer=harness.issuer, approve=True, edits=edits
    )
    return result.decision


def refunded(harness: Harness) -> list[tuple[float, str]]:
    table = records.refunds
    with harness.runtime.ledger.engine.connect() as conn:
        rows = conn.execute(select(table.c.amount, table.c.idempotency_key)).all()
    return [(float(amount), key) for amount, key in rows]


async def test_a_refund_approved_at_a_smaller_amount_refunds_exactly_that_once(
    harness: Harness,
) -> None:
    run_id, approval_id, proposed = await parked(harness)
    smaller = round(float(proposed["amount"]) * 0.4, 2)  # type: ignore[arg-type]
    assert await approve(harness, run_id, approval_id, {"amount": smaller}, "ops_lead_1") == (
        "granted"
    )
    events = await harness.finish(run_id)

    (granted,) = [e for e in events if isinstance(e, ev.ApprovalGranted)]
    assert granted.edit is not None and granted.assertion is not None
    assert granted.edit.proposed == proposed
    assert granted.edit.approved == {**proposed, "amount": smaller}
    assert [(c.argument, c.proposed, c.approved) for c in granted.edit.changes] == [
        ("amount", proposed["amount"], smaller)
    ]
    (authorised,) = [e for e in events if isinstance(e, ev.ToolCallAuthorised)
                     and e.tool == "create_refund"]  # fmt: skip
    assert authorised.arguments["amount"] == smaller and authorised.approval_id == approval_id
    edited_key = idempotency_key(
        run_id, authorised.operation_id, arguments_digest("create_refund", granted.edit.approved)
    )
    assert authorised.idempotency_key == edited_key
    assert refunded(harness) == [(smaller, edited_key)]
    assert isinstance(events[-1], ev.RunCompleted)
    answer = events[-1].answer
    assert f"Your refund of {smaller} EUR" in answer, answer  # what ran, not what was proposed
    state = project(events)
    assert state.approvals[approval_id].used and state.approvals[approval_id].edit == granted.edit
    (amendment,) = [
        item for item in candidates_from_state(state, (), events[-1].recorded_at)
        if item.id == f"amendment:{approval_id}"
    ]  # fmt: skip
    assert (amendment.kind, amendment.trust_level) == ("verified_fact", "verified_fact")


@pytest.mark.parametrize(
    ("edits", "code"),
    [
        ({"amount": 10_000.0}, "edit_widens"),  # asks for more than was proposed
        ({"order_id": "ord_4822"}, "edit_widens"),  # another order
        ({"amount": "twenty"}, "invalid_edit"),  # outside the schema
        ({"currency": "USD"}, "argument_mismatch"),  # the gate's verified-fact check
        ({}, "invalid_edit"),
    ],
)
async def test_an_edit_that_widens_or_the_gate_denies_is_refused_and_recorded(
    harness: Harness, edits: dict[str, JsonValue], code: str
) -> None:
    run_id, approval_id, _ = await parked(harness)
    with pytest.raises(Refused) as refused:
        await approve(harness, run_id, approval_id, edits, "ops_lead_1")
    assert refused.value.reason_code == code
    attempts = [e for e in harness.runtime.ledger.read(run_id)
                if isinstance(e, ev.ApprovalAttemptRefused)]  # fmt: skip
    assert [(a.attempted_by, a.reason_code) for a in attempts] == [("ops_lead_1", code)]
    await harness.decide(run_id, approval_id, "ops_lead_1", approve=False, reason="no")
    await harness.finish(run_id)
    assert refund_rows(harness) == 0


async def test_a_signature_over_the_plain_proposal_does_not_approve_an_edit(
    harness: Harness,
) -> None:
    """The assertion binds the edits: one signed for the unedited call cannot carry them."""
    run_id, approval_id, proposed = await parked(harness)
    state = await client_ops.live_state(harness.client, run_id)
    digest = state.pending_approvals[approval_id].proposal_digest
    plain = harness.issuer.approval_assertion(
        "ops_lead_1", run_id=run_id, approval_id=approval_id, digest=digest, approve=True
    )
    forged = ApprovalDecision(
        approval_id=approval_id,
        approver_id="ops_lead_1",
        approve=True,
        proposal_digest=digest,
        edits={"amount": 1.0},
        assertion=plain,
    )
    handle = harness.client.get_workflow_handle(run_id)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(AgentRunWorkflow.decide_approval, forged)
    assert getattr(refused.value.cause, "type", "") == "assertion_wrong_digest"
    assert proposed["amount"] != 1.0


TRIALS = 30


async def test_an_edit_racing_a_plain_approve_and_a_cancel_has_one_outcome_and_one_effect(
    harness: Harness,
) -> None:
    """30 parked runs, each decided three ways at once: an edited approve, a plain approve and
    a cancel. Each approval ends exactly one way; at most one refund is authorised per run, and
    it is the call the recorded, signed grant approved."""
    run_ids = await asyncio.gather(*(harness.start(REQUEST) for _ in range(TRIALS)))
    parked = await asyncio.gather(*(harness.until_approval_or_end(r) for r in run_ids))
    proposals = [s.pending_approvals[min(s.pending_approvals)].proposal for s in parked]
    await asyncio.gather(*(_race(harness, r, s) for r, s in zip(run_ids, parked, strict=True)))
    outcomes = [
        _one_outcome(await harness.finish(run_id), proposal.arguments)
        for run_id, proposal in zip(run_ids, proposals, strict=True)
    ]
    assert set(outcomes) <= {"edited", "granted", "cancelled"}, outcomes


async def _race(harness: Harness, run_id: str, state: WorkingState) -> None:
    ((approval_id, pending),) = state.pending_approvals.items()
    smaller = round(float(pending.proposal.arguments["amount"]) / 2, 2)  # type: ignore[arg-type]
    await asyncio.gather(
        approve(harness, run_id, approval_id, {"amount": smaller}, "ops_lead_1"),
        client_ops.decide(harness.client, run_id, approval_id, "ops_lead_1",
                          issuer=harness.issuer, approve=True),
        operators.cancel(harness.client, run_id, "ops_lead_1", "racing", issuer=harness.issuer),
        return_exceptions=True,
    )  # fmt: skip


def _one_outcome(events: list[ev.RunEvent], proposed: dict[str, JsonValue]) -> str:
    decided = [e for e in events if isinstance(e, ev.ApprovalGranted | ev.ApprovalExpired)]
    assert len(decided) == 1, [e.kind for e in decided]
    refunds = [e for e in events if isinstance(e, ev.ToolCallAuthorised)
               and e.tool == "create_refund"]  # fmt: skip
    (decision,) = decided
    if not isinstance(decision, ev.ApprovalGranted):
        assert not refunds and isinstance(events[-1], ev.RunCancelled)
        return "cancelled"
    assert decision.assertion is not None and len(refunds) <= 1
    approved = decision.edit.approved if decision.edit else proposed
    for refund in refunds:  # none when the cancel came before the gate dispatched it
        assert refund.approval_id == decision.approval_id and refund.arguments == approved
    return "edited" if decision.edit else "granted"
