"""Who may act on a running run besides its approvers, and on what terms: an operator in the
run's tenant with the ``canceller`` role may cancel it for a stated reason, one with the
``steerer`` role may tell it something it does not know (``agentledger steer``). Pure; the
workflow proves who the operator is (a signed assertion and the directory) and asks here."""

from __future__ import annotations

from agentledger.domain.approvals import ApprovalRefusal
from agentledger.domain.context.markers import marker_starts
from agentledger.domain.principal import Principal, tenant_covers
from agentledger.domain.state import WorkingState

CANCEL_ROLE = "canceller"
STEER_ROLE = "steerer"
MAX_REASON_CHARS = 500
"""A cancel's reason is for people reading the audit: a sentence, not a document."""
MAX_INSTRUCTION_CHARS = 2_000
"""An operator's instruction enters every later packet: a paragraph, not a document."""
MAX_INSTRUCTIONS = 20
"""Instructions one run takes; past it the operator should cancel and start again."""


def reason_problem(reason: str) -> str | None:
    """Why ``reason`` cannot be a cancel's recorded reason, or ``None``."""
    if not reason.strip():
        return "a cancel needs a reason (it is recorded with who cancelled)"
    if len(reason) > MAX_REASON_CHARS:
        return f"a cancel's reason is at most {MAX_REASON_CHARS} characters, not {len(reason)}"
    return None


def instruction_problem(text: str, given: int) -> str | None:
    """Why ``text`` cannot be the run's next operator instruction (``given`` taken already)."""
    if not text.strip():
        return "an instruction needs text"
    if len(text) > MAX_INSTRUCTION_CHARS:
        return f"an instruction is at most {MAX_INSTRUCTION_CHARS} characters, not {len(text)}"
    if marker_starts(text):
        return "an instruction may not hold data markers (<data …>, </data> or look-alikes)"
    if given >= MAX_INSTRUCTIONS:
        return f"this run has taken {MAX_INSTRUCTIONS} instructions, the most one run takes"
    return None


def cancel_refusal(state: WorkingState, operator: Principal, reason: str) -> ApprovalRefusal | None:
    """``None`` when ``operator`` may cancel the run in ``state`` for ``reason``."""
    problem = reason_problem(reason)
    return _operator_refusal(state, operator, CANCEL_ROLE) or (
        None if problem is None else ApprovalRefusal(reason_code="bad_reason", detail=problem)
    )


def steer_refusal(state: WorkingState, operator: Principal, text: str) -> ApprovalRefusal | None:
    """``None`` when ``operator`` may give the run in ``state`` the instruction ``text``."""
    problem = instruction_problem(text, len(state.operator_instructions))
    return _operator_refusal(state, operator, STEER_ROLE) or (
        None if problem is None else ApprovalRefusal(reason_code="bad_instruction", detail=problem)
    )


def _operator_refusal(
    state: WorkingState, operator: Principal, role: str
) -> ApprovalRefusal | None:
    if state.status != "running":
        return ApprovalRefusal(reason_code="run_ended", detail=f"the run has {state.status}")
    order = state.work_order
    if order is None or not tenant_covers(operator.tenant_id, order.principal.tenant_id):
        return ApprovalRefusal(
            reason_code="wrong_tenant", detail=f"{operator.user_id} is not in this run's tenant"
        )
    if not operator.has_role(role):
        return ApprovalRefusal(
            reason_code="missing_role", detail=f"{operator.user_id} lacks the {role} role"
        )
    return None
