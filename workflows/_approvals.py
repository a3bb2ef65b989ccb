"""Approvals: a run waits for a human (durably, with a deadline) and records what they decide.

Bound to exactly what is approved: the decision carries the digest it was shown, and a grant that
answers a tool server's elicitation must carry content that fits the server's requested schema.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, JsonValue
from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    # Pure domain code and pydantic models: safe to share with the sandbox, and re-importing
    # pydantic per workflow run would cost far more than the run itself.
    from domain import events as ev
    from domain.approvals import check_approval_decision
    from domain.decisions import ToolCallProposal
    from domain.elicitation import ElicitationRequest
    from domain.principal import Principal
    from domain.state import ApprovalOutcome

from workflows._core import RunCore


class ApprovalDecision(BaseModel):
    model_config = ConfigDict(frozen=True)
    approval_id: str
    approver: Principal
    approve: bool
    proposal_digest: str
    reason: str = ""
    content: dict[str, JsonValue] | None = None
    """The answer to an approval that carries a server's elicitation request."""


class ApprovalResult(BaseModel):
    approval_id: str
    decision: str


class Approvals(RunCore):
    async def _await_approval(
        self,
        operation_id: str,
        proposal: ToolCallProposal,
        digest: str,
        elicitation: ElicitationRequest | None = None,
    ) -> ApprovalOutcome:
        approval_id = f"apr_{self._state.last_seq + 1}"
        ttl = timedelta(seconds=self._manifest_().approval_ttl_seconds)
        self._emit(
            ev.ApprovalRequested,
            approval_id=approval_id,
            operation_id=operation_id,
            proposal=proposal,
            proposal_digest=digest,
            requested_by=self._principal().user_id,
            approver_role="approver",
            expires_at=workflow.now() + ttl,
            elicitation=elicitation,
        )
        await self._flush()  # the approvals inbox must show the request while we wait
        try:
            await workflow.wait_condition(
                lambda: approval_id not in self._state.pending_approvals, timeout=ttl
            )
        except TimeoutError:
            self._emit(ev.ApprovalExpired, approval_id=approval_id)
        return self._state.approvals[approval_id]

    def _decide(self, decision: ApprovalDecision) -> ApprovalResult:
        """Record a human's decision, or the refused attempt (and refuse the update)."""
        refusal = check_approval_decision(
            self._state,
            decision.approval_id,
            decision.approver,
            decision.proposal_digest,
            workflow.now(),
            approve=decision.approve,
            content=decision.content,
        )
        if refusal is not None:
            self._emit(
                ev.ApprovalAttemptRefused,
                approval_id=decision.approval_id,
                attempted_by=decision.approver.user_id,
                reason_code=refusal.reason_code,
                detail=refusal.detail,
            )
            raise ApplicationError(refusal.detail, type=refusal.reason_code, non_retryable=True)
        if decision.approve:
            self._emit(
                ev.ApprovalGranted,
                approval_id=decision.approval_id,
                approver=decision.approver.user_id,
                proposal_digest=decision.proposal_digest,
                content=decision.content,
            )
        else:
            self._emit(
                ev.ApprovalRejected,
                approval_id=decision.approval_id,
                approver=decision.approver.user_id,
                reason=decision.reason,
            )
        return ApprovalResult(
            approval_id=decision.approval_id, decision="granted" if decision.approve else "rejected"
        )

    def _check_known(self, decision: ApprovalDecision) -> None:
        # Unknown ids are refused before they touch history; policy refusals are recorded.
        if (
            decision.approval_id not in self._state.pending_approvals
            and decision.approval_id not in self._state.approvals
        ):
            raise ValueError(f"no approval {decision.approval_id} in run {self._state.run_id}")
