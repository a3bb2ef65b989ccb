"""Who may decide an approval, checked purely before any approval event is recorded."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pydantic import JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.elicitation import ElicitationRequest, content_problem
from agentledger.domain.principal import Principal, canonical_user_id, tenant_covers
from agentledger.domain.state import ApprovalRequest, WorkingState

MAX_RECORDED_REFUSALS = 10
"""Refused attempts recorded per approval and run execution (signed ones: a decision no pinned
key signed is refused unrecorded in the update's validator). Past it a refusal is still answered
but no longer recorded: each recorded attempt is an accepted Temporal update, a run's updates are
capped (2,000 per execution), and unbounded recording would let anyone starve the real approver."""


class ApprovalRefusal(Frozen):
    reason_code: str
    detail: str


def check_approval_decision(
    state: WorkingState,
    approval_id: str,
    approver: Principal,
    proposal_digest: str,
    now: datetime,
    *,
    approve: bool = True,
    content: Mapping[str, JsonValue] | None = None,
) -> ApprovalRefusal | None:
    """``None`` when ``approver`` may decide ``approval_id`` as seen with ``proposal_digest``.

    Bound to exactly what was asked: the digest the approver saw must equal the pending one, so a
    grant can never cover a different amount. Single use: a decided approval is not pending.
    """
    pending = state.pending_approvals.get(approval_id)
    if pending is None:
        return _not_pending(state, approval_id)
    return (
        _approver_refusal(state, pending, approver)
        or _proposal_refusal(approval_id, pending, proposal_digest, now)
        or _content_refusal(pending.elicitation, approve, content)
    )


def _not_pending(state: WorkingState, approval_id: str) -> ApprovalRefusal:
    """Why an approval that is not pending cannot be decided: decided already, or never asked."""
    done = state.approvals.get(approval_id)
    detail = (
        f"approval {approval_id} was already {done.decision}"
        if done
        else f"no approval {approval_id} in this run"
    )
    return ApprovalRefusal(reason_code="not_pending", detail=detail)


def _approver_refusal(
    state: WorkingState, pending: ApprovalRequest, approver: Principal
) -> ApprovalRefusal | None:
    """Refuses an approver who is the requester, outside the run's tenant, or without the role."""
    if canonical_user_id(approver.user_id) == canonical_user_id(pending.requested_by):
        return ApprovalRefusal(
            reason_code="requester_cannot_approve",
            detail=f"{approver.user_id} requested this action and cannot approve it",
        )
    if state.work_order is None or not tenant_covers(
        approver.tenant_id, state.work_order.principal.tenant_id
    ):
        return ApprovalRefusal(
            reason_code="wrong_tenant", detail=f"{approver.user_id} is not in this run's tenant"
        )
    if not approver.has_role(pending.approver_role):
        return ApprovalRefusal(
            reason_code="missing_role",
            detail=f"{approver.user_id} lacks the {pending.approver_role} role",
        )
    return None


def _proposal_refusal(
    approval_id: str, pending: ApprovalRequest, proposal_digest: str, now: datetime
) -> ApprovalRefusal | None:
    """Refuses a decision about another proposal than the pending one, or one past its expiry."""
    if proposal_digest != pending.proposal_digest:
        return ApprovalRefusal(
            reason_code="digest_mismatch",
            detail="the decision is for a different proposal than the one "
            "pending (arguments, manifest or policy changed)",
        )
    if now >= pending.expires_at:
        return ApprovalRefusal(
            reason_code="expired",
            detail=f"approval {approval_id} expired at {pending.expires_at.isoformat()}",
        )
    return None


PRINCIPAL_CLAIMED = ApprovalRefusal(
    reason_code="principal_claimed",
    detail="a decision names its approver by id only; roles and tenant come from the directory",
)


def eligibility_refusal(
    state: WorkingState, approval_id: str, approver_id: str
) -> ApprovalRefusal | None:
    """Refuses an id the directory did not list as an approver when the approval was requested
    (approvals recorded before the directory listed approvers list nobody and refuse nobody)."""
    pending = state.pending_approvals.get(approval_id)
    eligible = pending.eligible_approvers if pending is not None else None
    if eligible is None or canonical_user_id(approver_id) in eligible:
        return None
    return ApprovalRefusal(
        reason_code="not_an_approver",
        detail=f"{approver_id!r} was not an approver of this run when approval was requested",
    )


def _content_refusal(
    asked: ElicitationRequest | None, approve: bool, content: Mapping[str, JsonValue] | None
) -> ApprovalRefusal | None:
    """A grant answers a server's question only with content that fits it, and content never
    rides on a decision that asked nothing (or on a rejection)."""
    if asked is None or not approve:
        if content is not None:
            return ApprovalRefusal(
                reason_code="unexpected_content", detail="this decision takes no content"
            )
        return None
    problem = content_problem(asked, content)
    if problem is not None:
        return ApprovalRefusal(reason_code="invalid_elicitation_content", detail=problem)
    return None
