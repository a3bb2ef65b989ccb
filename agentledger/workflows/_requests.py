"""An approval's request as the run records it: the role the call's frozen terms ask for and,
from the directory, who in the run's tenant holds it now (the requester never)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

from agentledger.workflows import _patches as patches

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import EligibleApproversInput
    from agentledger.activities.surface import DirectorySteps
    from agentledger.domain.approval_events import ApprovalRequested
    from agentledger.domain.decisions import ToolCallProposal
    from agentledger.domain.elicitation import ElicitationRequest
    from agentledger.domain.principal import APPROVER_ROLE
    from agentledger.domain.state import ApprovalRequest
    from agentledger.domain.verdict_events import requested

from agentledger.workflows._core import RETRY, Run
from agentledger.workflows._directory import DIRECTORY_TIMEOUT


async def approval_request(
    run: Run,
    approval_id: str,
    operation_id: str,
    proposal: ToolCallProposal,
    digest: str,
    elicitation: ElicitationRequest | None,
    ttl: timedelta,
) -> ApprovalRequested:
    role = role_for(run, proposal)
    directory = workflow.patched(patches.DIRECTORY_APPROVERS)
    eligible = await _eligible_approvers(run, role) if directory else None
    request = ApprovalRequest(
        approval_id=approval_id,
        operation_id=operation_id,
        proposal=proposal,
        proposal_digest=digest,
        requested_by=run.principal.user_id,
        approver_role=role,
        expires_at=workflow.now() + ttl,
        elicitation=elicitation,
        eligible_approvers=eligible,
    )
    return requested(run.stamp(), request)


def role_for(run: Run, proposal: ToolCallProposal) -> str:
    """The role the call's frozen terms ask (``approver`` without terms: an elicitation)."""
    terms = run.contracts.get(proposal.tool)
    return terms.approval.approver_role(proposal.arguments) if terms else APPROVER_ROLE


async def _eligible_approvers(run: Run, role: str) -> tuple[str, ...]:
    principal = run.principal
    found = await workflow.execute_activity_method(
        DirectorySteps.eligible_approvers,
        EligibleApproversInput(
            tenant_id=principal.tenant_id, role=role, requested_by=principal.user_id
        ),
        start_to_close_timeout=DIRECTORY_TIMEOUT,
        retry_policy=RETRY,
    )
    return tuple(found)
