"""Who may act on a running run besides its approvers, and on what terms: an operator with the
``canceller`` role, in the run's tenant, may cancel a live run for a stated reason. Pure; the
workflow proves who the operator is (a signed assertion and the directory) and asks here."""

from __future__ import annotations

from agentledger.domain.approvals import ApprovalRefusal
from agentledger.domain.principal import Principal, tenant_covers
from agentledger.domain.state import WorkingState

CANCEL_ROLE = "canceller"
MAX_REASON_CHARS = 500
"""A cancel's reason is for people reading the audit: a sentence, not a document."""


def reason_problem(reason: str) -> str | None:
    """Why ``reason`` cannot be a cancel's recorded reason, or ``None``."""
    if not reason.strip():
        return "a cancel needs a reason (it is recorded with who cancelled)"
    if len(reason) > MAX_REASON_CHARS:
        return f"a cancel's reason is at most {MAX_REASON_CHARS} characters, not {len(reason)}"
    return None


def cancel_refusal(state: WorkingState, operator: Principal, reason: str) -> ApprovalRefusal | None:
    """``None`` when ``operator`` may cancel the run in ``state`` for ``reason``."""
    if state.status != "running":
        return ApprovalRefusal(reason_code="run_ended", detail=f"the run has {state.status}")
    order = state.work_order
    if order is None or not tenant_covers(operator.tenant_id, order.principal.tenant_id):
        return ApprovalRefusal(
            reason_code="wrong_tenant", detail=f"{operator.user_id} is not in this run's tenant"
        )
    if not operator.has_role(CANCEL_ROLE):
        return ApprovalRefusal(
            reason_code="missing_role", detail=f"{operator.user_id} lacks the {CANCEL_ROLE} role"
        )
    problem = reason_problem(reason)
    return None if problem is None else ApprovalRefusal(reason_code="bad_reason", detail=problem)
