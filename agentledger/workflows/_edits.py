"""An approver's edited call, judged in the run before the grant is recorded: the edit's own
rules (``domain.approval_edits``), then the authority gate, as the proposal it replaces was."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agentledger.domain.approval_edits import edited_call
    from agentledger.domain.approvals import ApprovalRefusal
    from agentledger.domain.decisions import ApprovalEdit, ToolCallProposal
    from agentledger.domain.governance import Deny
    from agentledger.domain.principal import Principal
    from agentledger.workflows.messages import ApprovalDecision

from agentledger.workflows._core import Run


def judged_edit(
    run: Run, decision: ApprovalDecision, approver: Principal
) -> ApprovalEdit | ApprovalRefusal | None:
    """The edited call ``approver`` approves, or why they may not; ``None`` without edits.
    The gate sees it as its pending operation of the current step, exactly as it will at
    dispatch, so an edit the gate would deny is refused now, to the approver, not granted."""
    if decision.edits is None:
        return None
    if not decision.approve:
        return ApprovalRefusal(reason_code="invalid_edit", detail="a rejection takes no edits")
    pending = run.state.pending_approvals[decision.approval_id]
    contract = run.contracts.get(pending.proposal.tool)
    edit = edited_call(pending, decision.edits, contract, run.manifest, approver)
    if isinstance(edit, ApprovalRefusal):
        return edit
    edited = ToolCallProposal(tool=pending.proposal.tool, arguments=edit.approved)
    verdict = run.authorization(run.state.current_step or "", edited, pending.operation_id)
    if isinstance(verdict, Deny):
        return ApprovalRefusal(reason_code=verdict.reason_code, detail=verdict.detail)
    return edit
