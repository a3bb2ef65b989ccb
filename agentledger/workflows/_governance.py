"""Governance in the run: every proposal passes the authority gate outside the model, waits
for a human when policy says so, and is re-checked at dispatch."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    # Pure domain code and pydantic models: safe to share with the sandbox, and re-importing
    # pydantic per workflow run would cost far more than the run itself.
    from agentledger.domain import events as ev
    from agentledger.domain.decisions import ToolCallProposal
    from agentledger.domain.governance import Allow, Authorization, Deny, authorize

from agentledger.workflows._effects import ToolEffects


class Governance(ToolEffects):
    async def _act_on_proposal(self) -> None:
        proposal = self._state.proposed_action
        if proposal is None:  # defensive: the fold never leaves "acting" without a proposal
            raise ApplicationError("acting phase without a proposal", non_retryable=True)
        await self._govern(self._state.current_step or "", proposal)

    async def _govern(self, step: str, proposal: ToolCallProposal) -> None:
        operation_id = f"op_{self._state.last_seq + 1}"
        verdict = self._authorize(step, proposal, operation_id)
        if verdict.kind == "needs_approval":
            outcome = await self._await_approval(
                operation_id, verdict.proposal, verdict.proposal_digest
            )
            if outcome.decision != "granted":
                return
            verdict = self._authorize(step, proposal, operation_id)  # re-checked at dispatch
        if isinstance(verdict, Deny):
            self._record_denial(step, proposal, operation_id, verdict)
        elif isinstance(verdict, Allow):
            await self._execute(operation_id, verdict)
        else:
            raise ApplicationError("approval granted but still required", non_retryable=True)

    def _authorize(self, step: str, proposal: ToolCallProposal, operation_id: str) -> Authorization:
        return authorize(
            proposal,
            self._state,
            self._manifest_(),
            self._principal(),
            workflow.now(),
            contracts=self._contracts,
            step=step,
            operation_id=operation_id,
        )

    def _record_denial(
        self, step: str, proposal: ToolCallProposal, operation_id: str, denial: Deny
    ) -> None:
        if denial.protocol_error:
            self._emit(
                ev.DecisionRejected,
                step=step,
                reason_code=denial.reason_code,
                detail=denial.detail,
                option=proposal.tool,
            )
        else:
            self._emit(
                ev.ToolCallDenied,
                operation_id=operation_id,
                tool=proposal.tool,
                reason_code=denial.reason_code,
                detail=denial.detail,
            )
