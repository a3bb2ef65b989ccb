"""An external issuer speaks only for the directory's people of the tenants the worker binds it
to: a decision or reply signed by the run's own key on behalf of another issuer's caller is
refused (``assertion_foreign_issuer``) and recorded when that issuer is bound elsewhere, or
nowhere. Sent raw through the SDK and the bare `temporal` binary, as a compromised or
misconfigured service (or anyone holding what it signed) would send it."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError

from agentledger.app import runs as client_ops
from agentledger.app.devserver import DevServer, temporal_binary
from agentledger.app.identity import VerifiedCaller
from agentledger.app.registry import get_pack
from agentledger.app.runtime import Runtime
from agentledger.domain.events import (
    ApprovalAttemptRefused,
    ApprovalGranted,
    ReplyRefused,
    RunFailed,
)
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision, Reply, RunInput
from bench._chat_pack import CUSTOMER
from bench._stack import open_stack
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # identity, not storage
]

GLOBEX_IDP = "https://idp.globex.test"
ACME_IDP = "https://idp.acme.test"
UNBOUND_IDP = "https://idp.nobody.test"


@pytest.fixture
async def bound(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> AsyncIterator[Harness]:
    """A stack whose workers bind Globex's issuer to ``globex`` and Acme's to ``acme``."""
    queue = f"issuers-{uuid.uuid4().hex[:8]}"
    stack = await open_stack(tmp_path, temporal_server.address, database_url, queue)
    tenants = {GLOBEX_IDP: ("globex",), ACME_IDP: ("acme",)}
    settings = dataclasses.replace(stack.settings, issuer_tenants=tenants)
    async with Runtime(settings, stack.runtime.ledger).worker(stack.client):
        yield stack
    stack.runtime.ledger.engine.dispose()


def _for(
    stack: Harness, issuer: str, run_id: str, approval_id: str, digest: str
) -> ApprovalDecision:
    """ops_lead_1 (an approver of acme) approving, as a caller of ``issuer`` vouched."""
    caller = VerifiedCaller(subject="ops_lead_1", issuer=issuer, token_id=uuid.uuid4().hex)
    return ApprovalDecision(
        approval_id=approval_id,
        approver_id="ops_lead_1",
        approve=True,
        proposal_digest=digest,
        assertion=stack.issuer.approval_assertion(
            "ops_lead_1",
            run_id=run_id,
            approval_id=approval_id,
            digest=digest,
            approve=True,
            on_behalf_of=caller,
        ),
    )


async def test_another_tenants_issuer_cannot_approve_as_an_acme_approver(bound: Harness) -> None:
    run_id = await bound.start(REQUEST)
    state = await bound.until_approval_or_end(run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    handle = bound.client.get_workflow_handle(run_id)
    for issuer in (GLOBEX_IDP, UNBOUND_IDP):
        with pytest.raises(WorkflowUpdateFailedError) as refusal:
            await handle.execute_update(
                AgentRunWorkflow.decide_approval,
                _for(bound, issuer, run_id, approval_id, pending.proposal_digest),
            )
        assert getattr(refusal.value.cause, "type", None) == "assertion_foreign_issuer"
    assert refund_rows(bound) == 0

    await handle.execute_update(
        AgentRunWorkflow.decide_approval,
        _for(bound, ACME_IDP, run_id, approval_id, pending.proposal_digest),
    )
    events = await bound.finish(run_id)
    refused = [
        (e.attempted_by, e.reason_code) for e in events if isinstance(e, ApprovalAttemptRefused)
    ]
    assert refused == [("ops_lead_1", "assertion_foreign_issuer")] * 2
    (granted,) = [e for e in events if isinstance(e, ApprovalGranted)]
    assert granted.assertion is not None and granted.assertion.on_behalf_of_issuer == ACME_IDP
    assert refund_rows(bound) == 1


async def test_the_bare_temporal_binary_cannot_approve_for_another_tenants_issuer(
    bound: Harness,
) -> None:
    run_id = await bound.start(REQUEST)
    state = await bound.until_approval_or_end(run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    forged = _for(bound, GLOBEX_IDP, run_id, approval_id, pending.proposal_digest)
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(),
        "workflow",
        "update",
        "execute",
        "--address",
        bound.settings.temporal_address or "",
        "--workflow-id",
        run_id,
        "--name",
        "decide_approval",
        "--input",
        forged.model_dump_json(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode != 0, out
    assert f"'{GLOBEX_IDP}' does not speak for ops_lead_1".encode() in out
    assert refund_rows(bound) == 0
    await bound.decide(run_id, approval_id, "ops_lead_1")
    events = await bound.finish(run_id)
    refused = [
        (e.attempted_by, e.reason_code) for e in events if isinstance(e, ApprovalAttemptRefused)
    ]
    assert refused == [("ops_lead_1", "assertion_foreign_issuer")]
    assert refund_rows(bound) == 1


async def test_another_tenants_issuer_cannot_reply_as_a_customer(bound: Harness) -> None:
    order = get_pack("chat").make_work_order("I'd like to pick a colour", CUSTOMER)
    handle = await client_ops.start_run(
        bound.client, bound.settings.task_queue, order, issuer=bound.issuer
    )
    state = await client_ops.wait_for(bound.client, handle.id, pending_approval=False)
    assert state.awaiting is not None
    caller = VerifiedCaller(subject=CUSTOMER.user_id, issuer=GLOBEX_IDP, token_id="tok-globex")
    forged = Reply(
        principal_id=CUSTOMER.user_id,
        text="red",
        assertion=bound.issuer.reply_assertion(
            CUSTOMER.user_id,
            run_id=handle.id,
            text="red",
            reply_to=state.awaiting.seq,
            on_behalf_of=caller,
        ),
    )
    with pytest.raises(WorkflowUpdateFailedError) as refusal:
        await handle.execute_update(AgentRunWorkflow.reply, forged)
    assert getattr(refusal.value.cause, "type", None) == "assertion_foreign_issuer"
    await client_ops.reply(bound.client, handle.id, CUSTOMER.user_id, "red", issuer=bound.issuer)
    await handle.terminate("checked")
    events = bound.runtime.ledger.read(handle.id)
    assert [e.reason_code for e in events if isinstance(e, ReplyRefused)] == [
        "assertion_foreign_issuer"
    ]


async def test_another_tenants_issuer_cannot_start_a_run_for_a_customer(bound: Harness) -> None:
    """A start signed by the service's key on behalf of Globex's caller, for Acme's customer,
    is refused and recorded; on behalf of Acme's caller it runs."""
    order = get_pack("support").make_work_order(REQUEST, bound.principal("usr_73"))

    async def start(idp: str) -> str:
        run_id = f"run_{uuid.uuid4().hex[:12]}"
        caller = VerifiedCaller(subject="usr_73", issuer=idp, token_id=uuid.uuid4().hex)
        signed = bound.issuer.start_assertion(order, run_id=run_id, on_behalf_of=caller)
        await bound.client.start_workflow(
            "AgentRun",
            RunInput(run_id=run_id, work_order=order, requester_assertion=signed),
            id=run_id,
            task_queue=bound.settings.task_queue,
        )
        return run_id

    refused = await bound.finish(await start(GLOBEX_IDP))
    assert [e.kind for e in refused] == ["run_started", "run_failed"]
    failed = refused[-1]
    assert isinstance(failed, RunFailed) and failed.reason_code == "assertion_foreign_issuer"
    state = await bound.until_approval_or_end(await start(ACME_IDP))
    assert state.pending_approvals, state.status
