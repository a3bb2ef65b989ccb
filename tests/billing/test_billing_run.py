"""The billing pack (built in, declared only through agentledger.sdk) end to end on the real
Temporal server: the run asks which subscription, reads the customer's reply from the
conversation, proposes the change, waits for a billing lead, makes it exactly once and says so."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from agentledger.app import runs as client_ops
from agentledger.domain import events as ev
from agentledger.domain.decisions import Claim
from agentledger.domain.state import WorkingState
from agentledger.packs.billing import PACK
from agentledger.packs.billing import records as r
from agentledger.packs.billing.seed import DEMO_APPROVER
from tests._temporal import Harness

pytestmark = pytest.mark.temporal


async def start(h: Harness, request: str, user: str) -> str:
    order = PACK.make_work_order(request, h.principal(user))
    handle = await client_ops.start_run(h.client, h.settings.task_queue, order, issuer=h.issuer)
    return handle.id


async def parked(h: Harness, run_id: str) -> WorkingState:
    state = await client_ops.wait_for(h.client, run_id, pending_approval=True)
    assert state.status == "running", state.status
    return state


async def approve(h: Harness, run_id: str) -> dict[str, Any]:
    state = await parked(h, run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    await h.decide(run_id, approval_id, DEMO_APPROVER)
    return dict(pending.proposal.arguments)


def rows(h: Harness, table: Any) -> list[Any]:
    with h.runtime.ledger.engine.connect() as conn:
        return list(conn.execute(select(table)).all())


async def test_the_run_asks_which_subscription_and_cancels_the_one_named(h: Harness) -> None:
    run_id = await start(h, "Please cancel my subscription.", "cust_ana")
    asked = await parked(h, run_id)
    assert asked.awaiting is not None and asked.awaiting.reason == "question"
    question = asked.conversation[-1].text
    assert "Pro monthly (sub_1001)" in question and "Family plan (sub_1002)" in question

    await client_ops.reply(
        h.client, run_id, "cust_ana", "The family plan, please.", issuer=h.issuer
    )
    assert await approve(h, run_id) == {
        "subscription_id": "sub_1002",
        "reason": "customer asked to cancel",
    }
    done = await parked(h, run_id)
    assert done.awaiting is not None and done.awaiting.reason == "follow_up"
    assert "Family plan (sub_1002) is cancelled" in done.conversation[-1].text

    status = {row.subscription_id: row.status for row in rows(h, r.subscriptions)}
    assert status["sub_1002"] == "cancelled" and status["sub_1001"] == "active"
    assert [c.action for c in rows(h, r.changes)] == ["cancel"]
    # the ledger catches up with a parked run on its next activity; the run's own state is current
    steps = [e.step for e in h.runtime.ledger.read(run_id) if isinstance(e, ev.StepStarted)]
    assert steps[:2] == ["classify", "classify"] and "gather" in steps
    cancel = next(a for a in done.completed_actions if a.tool == "cancel_subscription")
    assert cancel.status == "succeeded" and done.last_answer is not None
    assert done.last_answer.claims == (
        Claim(operation_id=cancel.operation_id, tool="cancel_subscription", resource_id="sub_1002"),
    )
    await h.client.get_workflow_handle(run_id).terminate("test done")


async def test_a_follow_up_about_another_subscription_never_reuses_the_first_ones_receipt(
    h: Harness,
) -> None:
    run_id = await start(h, "Please cancel my subscription.", "cust_ana")
    await parked(h, run_id)
    await client_ops.reply(h.client, run_id, "cust_ana", "The family plan.", issuer=h.issuer)
    assert (await approve(h, run_id))["subscription_id"] == "sub_1002"
    cancelled = await parked(h, run_id)
    assert cancelled.awaiting is not None and cancelled.awaiting.reason == "follow_up"

    await client_ops.reply(
        h.client, run_id, "cust_ana", "And what about sub_1001?", issuer=h.issuer
    )
    after = await parked(h, run_id)
    assert after.pending_approvals, "cancelling sub_1001 needs its own approval"
    ((pending,),) = (tuple(after.pending_approvals.values()),)
    assert pending.proposal.arguments["subscription_id"] == "sub_1001"
    said = after.last_answer.answer if after.last_answer is not None else ""
    assert "(sub_1001) is cancelled" not in said and said.endswith("Nothing has changed yet.")
    assert after.last_answer is not None and after.last_answer.claims == ()
    status = {row.subscription_id: row.status for row in rows(h, r.subscriptions)}
    assert status["sub_1001"] == "active"
    await h.client.get_workflow_handle(run_id).terminate("test done")


async def test_a_single_subscription_is_credited_without_a_question(h: Harness) -> None:
    run_id = await start(h, "I was overcharged, can I get a prorated credit?", "cust_ben")
    arguments = await approve(h, run_id)
    assert arguments["subscription_id"] == "sub_2001" and arguments["currency"] == "USD"
    done = await parked(h, run_id)
    assert "prorated credit for Basic (sub_2001) was issued" in done.conversation[-1].text
    (credit,) = rows(h, r.credits)
    assert float(credit.amount) == arguments["amount"] > 0
    assert [t.role for t in done.conversation] == ["agent"]  # the answer; no question was asked
    await h.client.get_workflow_handle(run_id).terminate("test done")


@pytest.fixture
def h(harness: Harness) -> Harness:
    return harness
