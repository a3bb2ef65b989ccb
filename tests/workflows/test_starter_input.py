"""What a run's starter sends is workflow input, and anyone who can start a workflow can write it:
neither the queues a run's calls go to nor the state and manifest a continuation carries are
taken on the starter's word. (The genuine continuations, vouched for by their ledgers, are the
long-run and conversation tests' continue-as-new.)"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from agentledger.activities.messages import ActivityQueues
from agentledger.app import runs as client_ops
from agentledger.app.identity import Issuer
from agentledger.app.registry import get_pack
from agentledger.domain.events import HandoffRequested, RunFailed
from agentledger.domain.fold import state_hash
from agentledger.domain.handoffs import HandoffOrigin, child_work_order
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import WorkOrder
from agentledger.packs.support.review import FRAUD_CHECK
from agentledger.workflows import Continuation, RunInput, RunOutcome
from tests._temporal import Harness
from tests.workflows import handoff_packs
from tests.workflows.test_refund_run import REQUEST, approve_pending, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize(
        "database_url", ["sqlite"], indirect=True
    ),  # workflow input, not storage
]


async def _start_raw(
    h: Harness, run_id: str, params: RunInput
) -> WorkflowHandle[object, RunOutcome]:
    """As a raw Temporal client would: no CLI, no API, no client_ops checks."""
    return await h.client.start_workflow(
        "AgentRun", params, id=run_id, task_queue=h.settings.task_queue, result_type=RunOutcome
    )


async def test_queues_a_starter_names_are_not_where_calls_go(harness: Harness) -> None:
    run_id = f"run_{uuid.uuid4().hex[:12]}"
    order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
    named = ActivityQueues(model="mallory-models", tool="mallory-tools")
    handle = await _start_raw(
        harness,
        run_id,
        RunInput(
            run_id=run_id,
            work_order=order,
            queues=named,
            requester_assertion=harness.issuer.start_assertion(order, run_id=run_id),
        ),
    )
    await approve_pending(harness, run_id)
    await handle.result()

    queues = {
        event.activity_task_scheduled_event_attributes.task_queue.name
        for event in (await handle.fetch_history()).events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    assert queues == {harness.settings.task_queue}
    assert refund_rows(harness) == 1


async def _parked(h: Harness) -> tuple[str, WorkingState, ExecutionManifest]:
    """A refund run parked on its approval, then terminated: its ledger holds the state."""
    run_id = await h.start(REQUEST)
    state = await h.until_approval_or_end(run_id)
    assert state.pending_approvals
    manifest = h.runtime.ledger.get_manifest(h.runtime.ledger.read(run_id)[-1].manifest_hash)
    assert manifest is not None
    await h.client.get_workflow_handle(run_id).terminate("taken over")
    return run_id, state, manifest


async def _continued(
    h: Harness, run_id: str, state: WorkingState, manifest: ExecutionManifest
) -> WorkflowHandle[object, RunOutcome]:
    order = get_pack("support").make_work_order(REQUEST, h.principal("usr_73"))
    carried = Continuation(state=state, state_hash=state_hash(state), manifest=manifest)
    return await _start_raw(h, run_id, RunInput(run_id=run_id, work_order=order, continued=carried))


async def _refused(handle: WorkflowHandle[object, RunOutcome]) -> str:
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "carried_state_mismatch"
    return cause.message


async def test_a_continuation_whose_manifest_trusts_the_starters_key_is_refused(
    harness: Harness, tmp_path: Path
) -> None:
    run_id, state, manifest = await _parked(harness)
    mallory = Issuer.local(tmp_path / "mallory", name="mallory")
    forged = manifest.model_copy(update={"trusted_keys": (mallory.trusted_key(),)})

    message = await _refused(await _continued(harness, run_id, state, forged))

    assert "was not frozen for run" in message
    assert refund_rows(harness) == 0


async def test_a_continuation_whose_state_is_not_its_ledgers_fold_is_refused(
    harness: Harness,
) -> None:
    run_id, state, manifest = await _parked(harness)
    (approval_id,) = state.pending_approvals
    pending = state.pending_approvals[approval_id]
    # The same proposal, now for ten times the amount: hashed afresh, so its own hash matches.
    bigger = {**pending.proposal.arguments, "amount": "9999.00"}
    forged = state.model_copy(
        update={
            "pending_approvals": {
                approval_id: pending.model_copy(
                    update={"proposal": pending.proposal.model_copy(update={"arguments": bigger})}
                )
            }
        }
    )

    message = await _refused(await _continued(harness, run_id, forged, manifest))

    assert "not the fold of" in message
    assert refund_rows(harness) == 0


async def test_another_runs_continuation_is_refused(harness: Harness) -> None:
    _, state, manifest = await _parked(harness)
    elsewhere = f"run_{uuid.uuid4().hex[:12]}"

    await _refused(await _continued(harness, elsewhere, state, manifest))

    assert refund_rows(harness) == 0


def _delegation(h: Harness, parent_run_id: str) -> tuple[WorkOrder, HandoffOrigin]:
    """A child's input as a starter could write it: the reviewer profile, under the fraud-check
    contract, for a parent run named by the starter."""
    parent = get_pack("support_reviewed").make_work_order(REQUEST, h.principal("usr_73"))
    order = child_work_order(parent, FRAUD_CHECK, {"order_id": "ord_4821"}, FRAUD_CHECK.budget)
    origin = HandoffOrigin(
        parent_run_id=parent_run_id, handoff=FRAUD_CHECK.name, authority=FRAUD_CHECK.authority
    )
    return order, origin


@pytest.mark.parametrize("parent", ["none", "real"])
async def test_a_child_run_no_parent_delegated_is_refused(harness: Harness, parent: str) -> None:
    """A handoff origin is workflow input: a child is prepared only for a delegation its
    parent's ledger recorded (a real run that delegated nothing, or no run at all)."""
    parent_run_id = f"run_{uuid.uuid4().hex[:12]}"
    if parent == "real":
        parent_run_id = await harness.start(REQUEST)
        await approve_pending(harness, parent_run_id)
        await harness.client.get_workflow_handle(parent_run_id).result()
    run_id = f"{parent_run_id}/handoff/1"
    order, origin = _delegation(harness, parent_run_id)

    handle = await _start_raw(
        harness, run_id, RunInput(run_id=run_id, work_order=order, handoff=origin)
    )

    assert (await handle.result()).status == "failed"
    ended = harness.runtime.ledger.read(run_id)[-1]
    assert isinstance(ended, RunFailed) and ended.reason_code == "preparation_failed"
    assert "is not a delegation" in ended.message and "never requested" in ended.message


async def test_a_run_borrowing_a_delegated_childs_id_for_its_input_is_refused(
    harness: Harness,
) -> None:
    """A child's origin is checked under the input's run id; a starter that names the real
    child's id (read from the parent's history) in the input of a workflow of its own, with the
    very work order and origin the parent delegated, would be prepared as a second copy of that
    child. The input's run id must be the workflow's own."""
    handoff_packs.register()
    order = get_pack("support_reviewed").make_work_order(REQUEST, harness.principal("usr_73"))
    parent_run_id = (
        await client_ops.start_run(
            harness.client, harness.settings.task_queue, order, issuer=harness.issuer
        )
    ).id
    requested = await _delegated(harness, parent_run_id)
    copied = child_work_order(order, FRAUD_CHECK, requested.input, requested.budget)
    origin = HandoffOrigin(
        parent_run_id=parent_run_id, handoff=FRAUD_CHECK.name, authority=FRAUD_CHECK.authority
    )
    own = f"run_{uuid.uuid4().hex[:12]}"

    handle = await _start_raw(
        harness, own, RunInput(run_id=requested.child_run_id, work_order=copied, handoff=origin)
    )

    assert (await handle.result()).status == "failed"
    ended = harness.runtime.ledger.read(own)[-1]
    assert isinstance(ended, RunFailed) and ended.reason_code == "run_id_mismatch"
    assert [e.kind for e in harness.runtime.ledger.read(own)] == ["run_started", "run_failed"]


async def _delegated(h: Harness, run_id: str) -> HandoffRequested:
    for _ in range(600):
        found = [e for e in h.runtime.ledger.read(run_id) if isinstance(e, HandoffRequested)]
        if found:
            return found[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run_id} never delegated")
