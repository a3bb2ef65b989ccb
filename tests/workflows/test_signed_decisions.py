"""Approvals and replies are taken only with an assertion signed by a key the run pinned,
saying exactly this run, this approval (or its replies), this proposal (or text) and this
decision, now; the event records whose signature it was.

Each forgery is sent raw through the SDK (no CLI checks) and must be refused: recorded when a
pinned key signed it, refused by the update's validator and recorded nowhere when none did
(anyone can send that); the real decision afterwards still goes through and pays once."""

from __future__ import annotations

import dataclasses
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from temporalio.client import WorkflowUpdateFailedError

from agentledger.app.devserver import DevServer
from agentledger.app.errors import Refused
from agentledger.app.runtime import Runtime
from agentledger.domain.assertions import approval_audience
from agentledger.domain.events import ApprovalAttemptRefused, ApprovalGranted, ApprovalRejected
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision
from bench._chat_pack import CUSTOMER  # registers the chat pack, seeded with the stack
from bench._stack import open_stack
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # identity, not storage
]


def _claims(run_id: str, approval_id: str, digest: str, **changed: Any) -> dict[str, Any]:
    now = int(time.time())
    return {
        "iss": "agentledger-local",
        "sub": "ops_lead_1",
        "aud": approval_audience(run_id, approval_id),
        "iat": now,
        "nbf": now,
        "exp": now + 120,
        "jti": uuid.uuid4().hex,
        "digest": digest,
        "decision": "approve",
        **changed,
    }


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def _signed(key: Ed25519PrivateKey, kid: str, claims: dict[str, Any]) -> str:
    return jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": kid})


async def test_every_forged_or_misbound_assertion_is_refused_and_the_real_one_is_recorded(
    harness: Harness,
) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    digest, issuer = pending.proposal_digest, harness.issuer
    own = Ed25519PrivateKey.generate()  # mallory's key: not pinned by the run
    past = int(time.time()) - 3600
    unsigned = {  # no pinned key signed these: refused before they are accepted
        "assertion_untrusted_key": _signed(
            own, "mallory-key", _claims(run_id, approval_id, digest)
        ),
        "assertion_bad_signature": _signed(own, issuer.kid, _claims(run_id, approval_id, digest)),
        "assertion_missing": "",
    }
    forgeries = {
        "assertion_wrong_audience": _signed(
            issuer.key, issuer.kid, _claims(run_id, "apr_999", digest)
        ),
        "assertion_wrong_decision": _signed(
            issuer.key, issuer.kid, _claims(run_id, approval_id, digest, decision="reject")
        ),
        "assertion_expired": _signed(
            issuer.key,
            issuer.kid,
            _claims(run_id, approval_id, digest, iat=past, nbf=past, exp=past + 300),
        ),
        "assertion_lifetime": _signed(
            issuer.key,
            issuer.kid,
            _claims(run_id, approval_id, digest, exp=int(time.time()) + 86_400),
        ),
        "assertion_wrong_issuer": _signed(
            issuer.key, issuer.kid, _claims(run_id, approval_id, digest, iss="someone-else")
        ),
        "assertion_malformed": _signed(
            issuer.key, issuer.kid, _claims(run_id, approval_id, digest, roles=["approver"])
        ),
    }
    handle = harness.client.get_workflow_handle(run_id)
    for reason, token in {**unsigned, **forgeries}.items():
        decision = ApprovalDecision(
            approval_id=approval_id,
            approver_id="ops_lead_1",
            approve=True,
            proposal_digest=digest,
            assertion=token,
        )
        with pytest.raises(WorkflowUpdateFailedError) as refusal:
            await handle.execute_update(AgentRunWorkflow.decide_approval, decision)
        assert getattr(refusal.value.cause, "type", None) == reason
    assert refund_rows(harness) == 0

    await harness.decide(run_id, approval_id, "ops_lead_1")
    events = await harness.finish(run_id)
    refused = [e.reason_code for e in events if isinstance(e, ApprovalAttemptRefused)]
    assert refused == list(forgeries)
    (granted,) = [e for e in events if isinstance(e, ApprovalGranted)]
    assert granted.assertion is not None
    assert (granted.assertion.subject, granted.assertion.issuer, granted.assertion.key_id) == (
        "ops_lead_1",
        "agentledger-local",
        issuer.kid,
    )
    assert len(granted.assertion.token_id) == 32
    assert refund_rows(harness) == 1


async def test_a_decision_names_the_assertions_subject_or_no_one(harness: Harness) -> None:
    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    agents = harness.issuer.approval_assertion(
        "agent_2",
        run_id=run_id,
        approval_id=approval_id,
        digest=pending.proposal_digest,
        approve=False,
    )
    handle = harness.client.get_workflow_handle(run_id)

    def deciding(approver_id: str) -> ApprovalDecision:
        return ApprovalDecision(
            approval_id=approval_id,
            approver_id=approver_id,
            approve=False,
            proposal_digest=pending.proposal_digest,
            reason="no",
            assertion=agents,
        )

    async def refusal(approver_id: str) -> str:
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(AgentRunWorkflow.decide_approval, deciding(approver_id))
        return str(refused.value.cause)

    assert "not 'ops_lead_1'" in await refusal("ops_lead_1")
    # The subject alone decides (agent_2 lacks the approver role, and the directory says so).
    assert "lacks the approver role" in await refusal("")
    await harness.decide(run_id, approval_id, "ops_lead_1", approve=False, reason="not today")
    events = await harness.finish(run_id)
    refused = [
        (e.attempted_by, e.reason_code) for e in events if isinstance(e, ApprovalAttemptRefused)
    ]
    assert refused == [("ops_lead_1", "assertion_subject_mismatch"), ("agent_2", "missing_role")]
    (rejected,) = [e for e in events if isinstance(e, ApprovalRejected)]
    assert rejected.assertion is not None and rejected.assertion.subject == "ops_lead_1"
    assert refund_rows(harness) == 0


async def test_a_service_signing_for_a_caller_records_the_callers_token(harness: Harness) -> None:
    from agentledger.app import runs as client_ops
    from agentledger.app.identity import VerifiedCaller

    run_id = await harness.start(REQUEST)
    state = await harness.until_approval_or_end(run_id)
    (approval_id,) = state.pending_approvals
    # A caller of the service's own issuer (an external one must be bound: test_issuer_binding).
    caller = VerifiedCaller(subject="ops_lead_1", issuer=harness.issuer.name, token_id="tok-42")
    await client_ops.decide(
        harness.client,
        run_id,
        approval_id,
        "ops_lead_1",
        issuer=harness.issuer,
        approve=True,
        on_behalf_of=caller,
    )
    (granted,) = [e for e in await harness.finish(run_id) if isinstance(e, ApprovalGranted)]
    assert granted.assertion is not None
    assert (granted.assertion.on_behalf_of_issuer, granted.assertion.on_behalf_of_token_id) == (
        harness.issuer.name,
        "tok-42",
    )


async def test_a_reply_is_taken_only_as_its_signed_sender_with_its_signed_text(
    harness: Harness,
) -> None:
    from agentledger.app import runs as client_ops
    from agentledger.domain.events import ReplyRefused, UserReplied
    from agentledger.workflows import Reply

    handle = await harness.chatting()
    signed_red = harness.issuer.reply_assertion(CUSTOMER.user_id, run_id=handle.id, text="red")
    forged = {  # unsigned (anyone can send this: refused unrecorded), and for another text
        "assertion_missing": Reply(principal_id=CUSTOMER.user_id, text="red"),
        "assertion_wrong_digest": Reply(
            principal_id=CUSTOMER.user_id, text="blue", assertion=signed_red
        ),
    }
    for reason, reply in forged.items():
        with pytest.raises(WorkflowUpdateFailedError) as refusal:
            await handle.execute_update(AgentRunWorkflow.reply, reply)
        assert getattr(refusal.value.cause, "type", None) == reason
    await client_ops.reply(
        harness.client, handle.id, CUSTOMER.user_id, "red", issuer=harness.issuer
    )
    await client_ops.wait_for(harness.client, handle.id, pending_approval=False)
    await handle.terminate("checked")
    events = harness.runtime.ledger.read(handle.id)
    refused = [e.reason_code for e in of(events, ReplyRefused)]
    assert refused == ["assertion_wrong_digest"]
    (taken,) = of(events, UserReplied)
    assert taken.text == "red" and taken.assertion is not None
    assert taken.assertion.subject == CUSTOMER.user_id


async def test_a_key_revoked_while_the_approval_waits_decides_nothing(
    temporal_server: DevServer, database_url: str, tmp_path: Path
) -> None:
    queue = f"revoke-{uuid.uuid4().hex[:8]}"
    stack = await open_stack(tmp_path, temporal_server.address, database_url, queue)
    async with stack.runtime.worker(stack.client):
        run_id = await stack.start(REQUEST)
        state = await stack.until_approval_or_end(run_id)
        (approval_id,) = state.pending_approvals
    # The key the run pinned is revoked on the workers (AGENTLEDGER_REVOKED_KEYS) meanwhile.
    revoked = dataclasses.replace(stack.settings, revoked_keys=frozenset({stack.issuer.kid}))
    async with Runtime(revoked, stack.runtime.ledger).worker(stack.client):
        with pytest.raises(Refused, match="revoked"):
            await stack.decide(run_id, approval_id, "ops_lead_1")
        await stack.client.get_workflow_handle(run_id).terminate("checked")
    events = stack.runtime.ledger.read(run_id)
    refused = [e.reason_code for e in of(events, ApprovalAttemptRefused)]
    assert refused == ["assertion_key_revoked"]
    assert not of(events, ApprovalGranted) and refund_rows(stack) == 0
