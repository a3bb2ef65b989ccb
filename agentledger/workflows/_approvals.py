"""Approvals: a run waits for a human (durably, with a deadline) and records what they decide.

Bound to exactly what is approved: the decision carries the digest it was shown, and a grant that
answers a tool server's elicitation must carry content that fits the server's requested schema.
Bound to who approves: a decision names its approver by id; the directory lists who may decide
when the approval is requested, and says again (roles, tenant) when they decide. Anyone else is
refused in the update's validator, so no amount of forged attempts reaches history or uses up
the run's update allowance; the first few refusals of each approval are recorded for audit.
"""

from __future__ import annotations

from datetime import timedelta
from typing import NoReturn

from pydantic import BaseModel, ConfigDict, JsonValue
from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    # Pure domain code and pydantic models: safe to share with the sandbox, and re-importing
    # pydantic per workflow run would cost far more than the run itself.
    from agentledger.activities.messages import (
        DirectoryEntry,
        EligibleApproversInput,
        LookUpPrincipalInput,
    )
    from agentledger.domain import events as ev
    from agentledger.domain.approvals import (
        MAX_RECORDED_REFUSALS,
        PRINCIPAL_CLAIMED,
        ApprovalRefusal,
        check_approval_decision,
        eligibility_refusal,
    )
    from agentledger.domain.decisions import ToolCallProposal
    from agentledger.domain.elicitation import ElicitationRequest
    from agentledger.domain.principal import APPROVER_ROLE, Principal
    from agentledger.domain.state import ApprovalOutcome

from agentledger.workflows._core import RETRY, RunCore

DIRECTORY_TIMEOUT = timedelta(seconds=30)
# Runs recorded before the directory decided who approves trusted the decision's principal.
DIRECTORY_PATCH = "approvers-from-directory"


class ApprovalDecision(BaseModel):
    model_config = ConfigDict(frozen=True)
    approval_id: str
    approver_id: str = ""
    """Who decides, by id in any spelling; their roles and tenant come from the directory."""
    approver: Principal | None = None
    """Sent whole by clients before the directory decided identity. Replays of their runs use
    it; a new decision that still claims a principal is refused."""
    approve: bool
    proposal_digest: str
    reason: str = ""
    content: dict[str, JsonValue] | None = None
    """The answer to an approval that carries a server's elicitation request."""

    def claimed_id(self) -> str:
        return self.approver_id or (self.approver.user_id if self.approver else "")


class ApprovalResult(BaseModel):
    approval_id: str
    decision: str


class Approvals(RunCore):
    def __init__(self) -> None:
        super().__init__()
        # Per run execution, like Temporal's update allowance; rebuilt identically on replay.
        self._refusals_recorded: dict[str, int] = {}

    async def _await_approval(
        self,
        operation_id: str,
        proposal: ToolCallProposal,
        digest: str,
        elicitation: ElicitationRequest | None = None,
    ) -> ApprovalOutcome:
        approval_id = f"apr_{self._state.last_seq + 1}"
        ttl = timedelta(seconds=self._manifest_().approval_ttl_seconds)
        eligible = await self._eligible_approvers() if workflow.patched(DIRECTORY_PATCH) else None
        self._emit(
            ev.ApprovalRequested,
            approval_id=approval_id,
            operation_id=operation_id,
            proposal=proposal,
            proposal_digest=digest,
            requested_by=self._principal().user_id,
            approver_role=APPROVER_ROLE,
            expires_at=workflow.now() + ttl,
            elicitation=elicitation,
            eligible_approvers=eligible,
        )
        await self._flush()  # the approvals inbox must show the request while we wait
        try:
            await workflow.wait_condition(
                lambda: approval_id not in self._state.pending_approvals, timeout=ttl
            )
        except TimeoutError:
            self._emit(ev.ApprovalExpired, approval_id=approval_id)
        return self._state.approvals[approval_id]

    async def _eligible_approvers(self) -> tuple[str, ...]:
        principal = self._principal()
        found: list[str] = await workflow.execute_activity(
            "eligible_approvers",
            EligibleApproversInput(
                tenant_id=principal.tenant_id, role=APPROVER_ROLE, requested_by=principal.user_id
            ),
            result_type=list[str],
            start_to_close_timeout=DIRECTORY_TIMEOUT,
            retry_policy=RETRY,
        )
        return tuple(found)

    async def _decide(self, decision: ApprovalDecision) -> ApprovalResult:
        """Record a human's decision, or the refused attempt (and refuse the update)."""
        if not workflow.patched(DIRECTORY_PATCH):
            return self._decide_as_recorded(decision)
        if decision.approver is not None:
            await self._refuse(decision, PRINCIPAL_CLAIMED, decision.claimed_id())
        found: DirectoryEntry = await workflow.execute_activity(
            "look_up_principal",
            LookUpPrincipalInput(user_id=decision.approver_id),
            result_type=DirectoryEntry,
            start_to_close_timeout=DIRECTORY_TIMEOUT,
            retry_policy=RETRY,
        )
        if found.principal is None:
            unknown = ApprovalRefusal(
                reason_code="unknown_approver",
                detail=f"{decision.approver_id!r} is not in the directory",
            )
            await self._refuse(decision, unknown, decision.claimed_id())
        approver = found.principal
        refusal = self._policy_refusal(decision, approver) or eligibility_refusal(
            self._state, decision.approval_id, approver.user_id
        )
        if refusal is not None:
            await self._refuse(decision, refusal, approver.user_id)
        return self._record(decision, approver, entry=approver)

    def _decide_as_recorded(self, decision: ApprovalDecision) -> ApprovalResult:
        """How runs recorded before the directory decided identity replay: the payload's
        principal, every refusal recorded with the next activity."""
        assert decision.approver is not None  # every decision carried one then
        refusal = self._policy_refusal(decision, decision.approver)
        if refusal is not None:
            self._emit_refusal(decision, refusal, decision.approver.user_id)
            raise ApplicationError(refusal.detail, type=refusal.reason_code, non_retryable=True)
        return self._record(decision, decision.approver, entry=None)

    def _policy_refusal(
        self, decision: ApprovalDecision, approver: Principal
    ) -> ApprovalRefusal | None:
        return check_approval_decision(
            self._state,
            decision.approval_id,
            approver,
            decision.proposal_digest,
            workflow.now(),
            approve=decision.approve,
            content=decision.content,
        )

    def _record(
        self, decision: ApprovalDecision, approver: Principal, *, entry: Principal | None
    ) -> ApprovalResult:
        if decision.approve:
            self._emit(
                ev.ApprovalGranted,
                approval_id=decision.approval_id,
                approver=approver.user_id,
                proposal_digest=decision.proposal_digest,
                content=decision.content,
                approver_entry=entry,
            )
        else:
            self._emit(
                ev.ApprovalRejected,
                approval_id=decision.approval_id,
                approver=approver.user_id,
                reason=decision.reason,
                approver_entry=entry,
            )
        return ApprovalResult(
            approval_id=decision.approval_id, decision="granted" if decision.approve else "rejected"
        )

    async def _refuse(
        self, decision: ApprovalDecision, refusal: ApprovalRefusal, attempted_by: str
    ) -> NoReturn:
        """Record the refused attempt at once (while under the cap), then refuse the update."""
        recorded = self._refusals_recorded.get(decision.approval_id, 0)
        if recorded < MAX_RECORDED_REFUSALS:
            self._refusals_recorded[decision.approval_id] = recorded + 1
            self._emit_refusal(decision, refusal, attempted_by)
            await self._flush()
        raise ApplicationError(refusal.detail, type=refusal.reason_code, non_retryable=True)

    def _emit_refusal(
        self, decision: ApprovalDecision, refusal: ApprovalRefusal, attempted_by: str
    ) -> None:
        self._emit(
            ev.ApprovalAttemptRefused,
            approval_id=decision.approval_id,
            attempted_by=attempted_by,
            reason_code=refusal.reason_code,
            detail=refusal.detail,
        )

    def _check_known(self, decision: ApprovalDecision) -> None:
        # Runs in the update's validator: what it refuses never reaches history, and counts
        # toward no limit. Unknown ids are always refused here; once an approval's refusals are
        # no longer recorded, every attempt the workflow can refuse without the directory is too.
        if (
            decision.approval_id not in self._state.pending_approvals
            and decision.approval_id not in self._state.approvals
        ):
            raise ValueError(f"no approval {decision.approval_id} in run {self._state.run_id}")
        if self._refusals_recorded.get(decision.approval_id, 0) < MAX_RECORDED_REFUSALS:
            return
        if decision.approval_id not in self._state.pending_approvals:
            raise ValueError(f"approval {decision.approval_id} is no longer pending")
        if decision.approver is not None:
            raise ValueError(PRINCIPAL_CLAIMED.detail)
        refusal = eligibility_refusal(self._state, decision.approval_id, decision.claimed_id())
        if refusal is not None:
            raise ValueError(refusal.detail)
