"""Who may decide an approval: ``check_approval_decision`` over a projected run."""

from __future__ import annotations

from datetime import timedelta

from pydantic import JsonValue

from agentledger.domain import events as ev
from agentledger.domain.approvals import check_approval_decision
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.fold import project
from agentledger.domain.governance import proposal_digest
from agentledger.domain.principal import APPROVER_ROLE, Principal
from agentledger.domain.state import WorkingState
from bench.factories import RunScript

MANIFEST_HASH = "sha256:" + "5e" * 32
POLICY_VERSION = "returns-2026-08"
REFUND: dict[str, JsonValue] = {
    "order_id": "ord_4821",
    "amount": 42.5,
    "currency": "EUR",
    "reason": "arrived late",
}
DANA = Principal(
    user_id="usr_73",
    tenant_id="acme",
    roles=frozenset({APPROVER_ROLE}),
    scopes=frozenset({"refunds:request"}),
)
MANAGER = Principal(user_id="mgr_1", tenant_id="acme", roles=frozenset({APPROVER_ROLE}))


def digest_for(amount: float) -> str:
    proposal = ToolCallProposal(tool="create_refund", arguments={**REFUND, "amount": amount})
    return proposal_digest(proposal, MANIFEST_HASH, POLICY_VERSION)


DIGEST = digest_for(42.5)


def awaiting_approval() -> tuple[RunScript, ev.ApprovalRequested]:
    """Dana's run proposed a 42.50 EUR refund and waits for an approver."""
    s = RunScript("run-1", manifest_hash=MANIFEST_HASH)
    s.started(who=DANA)
    s.step("draft_answer")
    proposal = ToolCallProposal(tool="create_refund", arguments=REFUND)
    s.answer("You qualify for a refund review.", propose=proposal)
    requested = s.add(
        ev.ApprovalRequested,
        approval_id="appr_1",
        operation_id="op_9",
        proposal=proposal,
        proposal_digest=DIGEST,
        requested_by="usr_73",
        approver_role=APPROVER_ROLE,
        expires_at=s.now + timedelta(days=1),
    )
    return s, requested


def pending_state() -> tuple[WorkingState, ev.ApprovalRequested]:
    s, requested = awaiting_approval()
    return project(s.events), requested


def test_the_rightful_approver_may_decide() -> None:
    state, requested = pending_state()
    assert check_approval_decision(state, "appr_1", MANAGER, DIGEST, requested.recorded_at) is None


def test_the_requester_cannot_approve_their_own_action() -> None:
    state, requested = pending_state()
    refusal = check_approval_decision(state, "appr_1", DANA, DIGEST, requested.recorded_at)
    assert refusal is not None and refusal.reason_code == "requester_cannot_approve"


def test_a_principal_without_the_approver_role_is_refused() -> None:
    state, requested = pending_state()
    clerk = Principal(user_id="clk_2", tenant_id="acme", roles=frozenset({"support"}))
    refusal = check_approval_decision(state, "appr_1", clerk, DIGEST, requested.recorded_at)
    assert refusal is not None and refusal.reason_code == "missing_role"


def test_an_approver_from_another_tenant_is_refused() -> None:
    state, requested = pending_state()
    outsider = MANAGER.model_copy(update={"tenant_id": "globex"})
    refusal = check_approval_decision(state, "appr_1", outsider, DIGEST, requested.recorded_at)
    assert refusal is not None and refusal.reason_code == "wrong_tenant"


def test_a_decision_seen_for_a_different_amount_is_refused() -> None:
    state, requested = pending_state()
    refusal = check_approval_decision(
        state, "appr_1", MANAGER, digest_for(500.0), requested.recorded_at
    )
    assert refusal is not None and refusal.reason_code == "digest_mismatch"


def test_a_decision_after_expiry_is_refused() -> None:
    state, requested = pending_state()
    for when in (requested.expires_at, requested.expires_at + timedelta(minutes=1)):
        refusal = check_approval_decision(state, "appr_1", MANAGER, DIGEST, when)
        assert refusal is not None and refusal.reason_code == "expired"


def test_a_decided_approval_cannot_be_decided_again() -> None:
    s, requested = awaiting_approval()
    s.add(ev.ApprovalGranted, approval_id="appr_1", approver="mgr_1", proposal_digest=DIGEST)
    state = project(s.events)
    other = MANAGER.model_copy(update={"user_id": "mgr_2"})
    refusal = check_approval_decision(state, "appr_1", other, DIGEST, requested.recorded_at)
    assert refusal is not None and refusal.reason_code == "not_pending"
    assert "granted" in refusal.detail


def test_an_unknown_approval_is_not_pending() -> None:
    state, requested = pending_state()
    refusal = check_approval_decision(state, "appr_404", MANAGER, DIGEST, requested.recorded_at)
    assert refusal is not None and refusal.reason_code == "not_pending"
