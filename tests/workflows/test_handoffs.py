"""Handoffs as child workflows, on a real Temporal dev server (``docs/handoffs.md``).

The support agent (``support_reviewed``) delegates a fraud check to a read-only reviewer whose
verdict gates the refund; the variants in ``handoff_packs`` break one term of the contract each.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import TypeVar

import pytest
from temporalio.client import WorkflowFailureError

from agentledger.app import operators
from agentledger.app import runs as client_ops
from agentledger.app.registry import get_pack
from agentledger.app.render import timeline
from agentledger.cli.show import print_run
from agentledger.domain import events as ev
from agentledger.domain.fold import project
from agentledger.packs.support.review import FRAUD_CHECK
from tests._temporal import Harness
from tests.workflows import handoff_packs
from tests.workflows.test_refund_run import REQUEST, approve_pending, refund_rows

pytestmark = pytest.mark.temporal
SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

SUSPECT_REQUEST = "Can I get a refund for order ord_5100? It arrived late."


@pytest.fixture(autouse=True)
def _handoff_packs() -> None:
    handoff_packs.register()  # before the harness builds its worker, which collects the models


async def _start(
    h: Harness, pack: str = "support_reviewed", request: str = REQUEST, user: str = "usr_73"
) -> str:
    order = get_pack(pack).make_work_order(request, h.principal(user))
    handle = await client_ops.start_run(h.client, h.settings.task_queue, order, issuer=h.issuer)
    return handle.id


E = TypeVar("E", bound=ev.Envelope)


def _of(events: list[ev.RunEvent], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def _child(h: Harness, run_id: str, n: int = 1) -> list[ev.RunEvent]:
    """The log of the run's ``n``-th child, by the id its parent recorded."""
    requested = _of(h.runtime.ledger.read(run_id), ev.HandoffRequested)
    return h.runtime.ledger.read(requested[n - 1].child_run_id)


async def test_a_clear_verdict_lets_the_refund_through_and_the_child_is_on_the_timeline(
    harness: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = await _start(harness)
    await approve_pending(harness, run_id)
    events = await harness.finish(run_id)

    (requested,) = _of(events, ev.HandoffRequested)
    (completed,) = _of(events, ev.HandoffCompleted)
    assert requested.child_run_id == completed.child_run_id
    assert re.fullmatch(rf"{run_id}/handoff/1-[0-9a-f]{{32}}", requested.child_run_id)
    assert (requested.handoff, requested.owner) == ("fraud_check", "risk-team")
    assert completed.output == {"verdict": "clear", "reasons": []}
    assert refund_rows(harness) == 1
    assert any(requested.child_run_id in line for line in timeline(events))
    assert print_run(harness.runtime.ledger, run_id) == 0  # `agentledger show` of the parent
    assert f"`agentledger show {requested.child_run_id}`" in capsys.readouterr().out
    child = _child(harness, run_id)
    assert [e.seq for e in child] == list(range(1, len(child) + 1))
    assert isinstance(child[-1], ev.RunCompleted)
    # The child read the evidence through its own calls, under its own manifest.
    receipts = _of(child, ev.ToolReceiptRecorded)
    assert [r.receipt.tool for r in receipts] == ["get_order", "get_customer"]
    assert {e.manifest_hash for e in child} != {e.manifest_hash for e in events}


@SQLITE
async def test_the_childs_spending_is_charged_to_the_parent(harness: Harness) -> None:
    run_id = await _start(harness)
    await approve_pending(harness, run_id)
    events = await harness.finish(run_id)

    child = project(_child(harness, run_id))
    (requested,) = _of(events, ev.HandoffRequested)
    (charge,) = [e for e in _of(events, ev.BudgetCharged) if e.reason.startswith("handoff:")]
    assert charge.reason == f"handoff:{requested.child_run_id}"
    assert (charge.steps, charge.tool_calls, charge.tokens) == (
        child.used.steps,
        child.used.tool_calls,
        child.used.tokens,
    )
    assert child.used.steps > 0 and child.used.tool_calls == 2
    # The parent's own spending (its steps, calls and model tokens) plus the child's.
    parent = project(events)
    own_tokens = sum(e.tokens for e in _of(events, ev.BudgetCharged) if e is not charge)
    assert parent.used.steps == len(_of(events, ev.StepStarted)) + child.used.steps
    assert parent.used.tool_calls == len(_of(events, ev.ToolCallAuthorised)) + 2
    assert parent.used.tokens == own_tokens + child.used.tokens


@SQLITE
async def test_a_suspected_verdict_gates_the_refund_proposal(harness: Harness) -> None:
    run_id = await _start(harness, request=SUSPECT_REQUEST, user="usr_88")
    events = await harness.finish(run_id)

    (completed,) = _of(events, ev.HandoffCompleted)
    assert completed.output["verdict"] == "suspected"
    assert not _of(events, ev.ApprovalRequested)
    assert refund_rows(harness, "ord_5100") == 0
    final = project(events)
    assert final.status == "completed"
    assert final.last_answer is not None and "did not clear it" in final.last_answer.answer


@SQLITE
async def test_output_that_fails_the_schema_is_a_typed_refusal(harness: Harness) -> None:
    run_id = await _start(harness, handoff_packs.SLOPPY.name)
    events = await harness.finish(run_id)

    (refused,) = _of(events, ev.HandoffRefused)
    assert refused.reason_code == "output_schema_violation"
    assert refused.child_run_id == _of(events, ev.HandoffRequested)[0].child_run_id
    assert "maybe" in refused.detail
    assert not _of(events, ev.HandoffCompleted) and not _of(events, ev.ApprovalRequested)
    assert refund_rows(harness) == 0
    assert project(events).status == "completed"  # the parent answers without a refund


@SQLITE
async def test_a_child_that_exceeds_its_budget_is_refused_and_still_charged(
    harness: Harness,
) -> None:
    run_id = await _start(harness, handoff_packs.TIGHT.name)
    events = await harness.finish(run_id)

    (requested,) = _of(events, ev.HandoffRequested)
    assert requested.budget.steps == 1
    (refused,) = _of(events, ev.HandoffRefused)
    assert refused.reason_code == "child_budget_exhausted"
    child = _child(harness, run_id)
    assert isinstance(child[-1], ev.RunFailed) and child[-1].reason_code == "budget_exhausted"
    assert any(
        e.reason == f"handoff:{requested.child_run_id}" for e in _of(events, ev.BudgetCharged)
    )
    assert refund_rows(harness) == 0


@SQLITE
async def test_a_tool_outside_the_childs_authority_is_denied_by_its_gate(
    harness: Harness,
) -> None:
    run_id = await _start(harness, handoff_packs.GREEDY.name)
    await approve_pending(harness, run_id)  # the review still clears: the parent's refund
    events = await harness.finish(run_id)

    child = _child(harness, run_id)
    (denied,) = _of(child, ev.ToolCallDenied)
    assert (denied.tool, denied.reason_code) == ("create_refund", "outside_handoff_authority")
    assert not [a for a in _of(child, ev.ToolCallAuthorised) if a.tool == "create_refund"]
    manifest = harness.runtime.ledger.get_manifest(child[0].manifest_hash)
    assert manifest is not None and manifest.handoff_origin is not None
    assert {g.name for g in manifest.tool_grants} <= set(FRAUD_CHECK.authority)
    assert _of(events, ev.HandoffCompleted)
    assert refund_rows(harness) == 1  # the parent's one refund, after its own approval


@SQLITE
async def test_a_contract_wider_than_the_parent_is_refused_at_manifest_resolution(
    harness: Harness,
) -> None:
    run_id = await _start(harness, handoff_packs.WIDE.name)
    events = await harness.finish(run_id)

    (failed,) = _of(events, ev.RunFailed)
    assert failed.reason_code == "preparation_failed"
    assert failed.message.startswith("handoff_contract_invalid:")
    assert "close_account" in failed.message
    assert not _of(events, ev.HandoffRequested)


@SQLITE
async def test_cancelling_the_parent_cancels_the_child_waiting_on_approval(
    harness: Harness,
) -> None:
    run_id = await _start(harness, handoff_packs.REFUNDER.name)
    child_id = await asyncio.wait_for(_requested_child(harness, run_id), 60)
    await asyncio.wait_for(_recorded(harness, child_id), 60)
    state = await client_ops.wait_for(harness.client, child_id, pending_approval=True)
    assert state.pending_approvals

    handle = harness.client.get_workflow_handle(run_id)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(handle.result(), 60)
    await asyncio.wait_for(_ended(harness, child_id), 60)

    events, child = harness.runtime.ledger.read(run_id), _child(harness, run_id)
    (refused,) = _of(events, ev.HandoffRefused)
    assert (refused.reason_code, refused.child_run_id) == ("parent_cancelled", child_id)
    assert isinstance(events[-1], ev.RunFailed) and events[-1].reason_code == "cancelled"
    (asked,) = _of(child, ev.ApprovalRequested)
    assert isinstance(child[-1], ev.RunFailed) and child[-1].reason_code == "cancelled"
    assert [e.approval_id for e in _of(child, ev.ApprovalExpired)] == [asked.approval_id]
    assert not harness.runtime.ledger.approvals(status="pending", run_id=child_id)
    assert refund_rows(harness) == 0


@SQLITE
async def test_a_child_past_its_termination_time_is_cancelled_and_charged_its_allotment(
    harness: Harness,
) -> None:
    run_id = await _start(harness, handoff_packs.SLOW.name)
    events = await harness.finish(run_id)  # the child waits on an approval nobody decides

    (requested,) = _of(events, ev.HandoffRequested)
    (refused,) = _of(events, ev.HandoffRefused)
    assert (refused.reason_code, refused.child_run_id) == (
        "handoff_timed_out",
        requested.child_run_id,
    )
    (charge,) = [e for e in _of(events, ev.BudgetCharged) if e.reason.startswith("handoff:")]
    assert (charge.steps, charge.tool_calls) == (
        requested.budget.steps,
        requested.budget.tool_calls,
    )
    child = _child(harness, run_id)
    assert isinstance(child[-1], ev.RunFailed) and child[-1].reason_code == "cancelled"
    assert project(events).status == "completed" and refund_rows(harness) == 0


async def _recorded(h: Harness, run_id: str) -> None:
    while not h.runtime.ledger.read(run_id):
        await asyncio.sleep(0.1)


async def _ended(h: Harness, run_id: str) -> None:
    while project(h.runtime.ledger.read(run_id)).status == "running":
        await asyncio.sleep(0.1)


async def _requested_child(h: Harness, run_id: str) -> str:
    """The child run id the parent recorded, once it has."""
    while not (requested := _of(h.runtime.ledger.read(run_id), ev.HandoffRequested)):
        await asyncio.sleep(0.1)
    return requested[0].child_run_id


@SQLITE
async def test_a_workflow_squatting_on_the_childs_old_id_cannot_block_the_delegation(
    harness: Harness,
) -> None:
    """Child ids were the parent's id and a counter: anyone who can start a workflow could start
    one under the next child's id first, and the delegation would fail. Now a suffix from the
    parent's deterministic randomness makes the id unguessable."""
    run_id = f"run_{uuid.uuid4().hex[:12]}"
    squatter = await harness.client.start_workflow(
        "NoSuchWorkflow", id=f"{run_id}/handoff/1", task_queue=f"nobody-{run_id}"
    )
    order = get_pack("support_reviewed").make_work_order(REQUEST, harness.principal("usr_73"))
    await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, run_id=run_id, issuer=harness.issuer
    )
    await approve_pending(harness, run_id)
    events = await harness.finish(run_id)
    await squatter.terminate("test over")

    (requested,) = _of(events, ev.HandoffRequested)
    assert requested.child_run_id != squatter.id
    assert _of(events, ev.HandoffCompleted) and not _of(events, ev.HandoffRefused)
    assert refund_rows(harness) == 1


@SQLITE
async def test_an_operators_cancel_of_the_parent_cancels_the_child_waiting_on_approval(
    harness: Harness,
) -> None:
    run_id = await _start(harness, handoff_packs.REFUNDER.name)
    child_id = await asyncio.wait_for(_requested_child(harness, run_id), 60)
    await asyncio.wait_for(_recorded(harness, child_id), 60)
    await client_ops.wait_for(harness.client, child_id, pending_approval=True)

    why = "the customer withdrew the request"
    ended = await operators.cancel(harness.client, run_id, "ops_lead_1", why, issuer=harness.issuer)
    assert ended == "cancelled"
    await asyncio.wait_for(_ended(harness, child_id), 60)

    events, child = await harness.finish(run_id), _child(harness, run_id)
    (refused,) = _of(events, ev.HandoffRefused)
    assert (refused.reason_code, refused.child_run_id) == ("parent_cancelled", child_id)
    assert isinstance(events[-1], ev.RunCancelled) and events[-1].cancelled_by == "ops_lead_1"
    assert isinstance(child[-1], ev.RunFailed) and child[-1].reason_code == "cancelled"
    assert not harness.runtime.ledger.approvals(status="pending", run_id=child_id)
    assert refund_rows(harness) == 0
