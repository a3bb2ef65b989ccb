"""The gate's verdicts and people's decisions become events in the domain, in one vocabulary:
an approval request folds back to exactly the pending approval it records, an allowed call is
recorded exactly as it was allowed, and a denial is the model's error only when it broke the
protocol."""

from __future__ import annotations

from datetime import UTC, datetime

from agentledger.domain import events as ev
from agentledger.domain.approvals import ApprovalRefusal
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.envelope import Stamp
from agentledger.domain.fold import evolve
from agentledger.domain.principal import Principal
from agentledger.domain.state import ApprovalRequest, WorkingState
from agentledger.domain.verdict_events import (
    authorised,
    decided,
    denied,
    refused_attempt,
    requested,
)
from agentledger.domain.verdicts import Allow, AuthorisedCall, Deny

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
STAMP = Stamp(run_id="run_1", seq=5, recorded_at=NOW, manifest_hash="sha256:m")
ALLOW = Allow(
    tool="create_refund",
    tool_version="1",
    arguments={"order_id": "ord_4821", "amount": 42.5},
    arguments_digest="sha256:a",
    idempotency_key="idem_1",
    approval_id="apr_3",
)
REQUEST = ApprovalRequest(
    approval_id="apr_5",
    operation_id="op_4",
    proposal=ToolCallProposal(tool="create_refund", arguments={"amount": 42.5}),
    proposal_digest="sha256:p",
    requested_by="usr_73",
    approver_role="approver",
    expires_at=NOW,
    eligible_approvers=("lead_1",),
)
LEAD = Principal(user_id="lead_1", tenant_id="t1", roles=frozenset({"approver"}))


def test_the_event_and_the_verdict_share_one_payload_model() -> None:
    assert issubclass(ev.ToolCallAuthorised, AuthorisedCall) and issubclass(Allow, AuthorisedCall)
    assert issubclass(ev.ApprovalRequested, ApprovalRequest)


def test_an_allowed_call_is_recorded_exactly_as_the_gate_allowed_it() -> None:
    event = authorised(STAMP, "op_4", ALLOW, "ord_4821")
    assert (event.seq, event.operation_id, event.resource_id) == (5, "op_4", "ord_4821")
    assert {name: getattr(event, name) for name in AuthorisedCall.model_fields} == {
        name: getattr(ALLOW, name) for name in AuthorisedCall.model_fields
    }


def test_a_request_folds_back_to_exactly_the_pending_approval_it_records() -> None:
    event = requested(STAMP, REQUEST)
    state = evolve(WorkingState(run_id="run_1", last_seq=4), event)
    assert state.pending_approvals == {"apr_5": REQUEST}
    assert event.request() == REQUEST


def test_a_denial_is_the_models_error_only_when_it_broke_the_protocol() -> None:
    policy = Deny(reason_code="over_limit", detail="too much")
    protocol = Deny(reason_code="unknown_tool", detail="no such tool", protocol_error=True)
    refused = denied(STAMP, "decide", "op_4", "create_refund", policy)
    assert isinstance(refused, ev.ToolCallDenied) and refused.operation_id == "op_4"
    rejected = denied(STAMP, "decide", "op_4", "create_refund", protocol)
    assert isinstance(rejected, ev.DecisionRejected)
    assert (rejected.step, rejected.option) == ("decide", "create_refund")


def test_a_decision_is_a_grant_or_a_rejection_naming_the_approver() -> None:
    grant = decided(STAMP, "apr_5", LEAD, approve=True, proposal_digest="sha256:p", entry=LEAD)
    assert isinstance(grant, ev.ApprovalGranted)
    assert (grant.approver, grant.approver_entry) == ("lead_1", LEAD)
    rejection = decided(STAMP, "apr_5", LEAD, approve=False, proposal_digest="x", reason="no")
    assert isinstance(rejection, ev.ApprovalRejected) and rejection.reason == "no"
    refusal = ApprovalRefusal(reason_code="not_eligible", detail="not listed")
    attempt = refused_attempt(STAMP, "apr_5", "mallory", refusal)
    assert (attempt.attempted_by, attempt.reason_code) == ("mallory", "not_eligible")
