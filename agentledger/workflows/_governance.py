"""Governance in the run: every proposal passes the authority gate outside the model, waits
for a human when policy says so, and is re-checked at dispatch."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from agentledger.domain.decisions import ToolCallProposal
    from agentledger.domain.governance import Allow, Authorization, Deny
    from agentledger.domain.verdict_events import denied

from agentledger.workflows._approvals import ApprovalDesk
from agentledger.workflows._core import Run
from agentledger.workflows._effects import ToolCalls
from agentledger.workflows._tracing import OUTCOME, REASON, of_run, span


class Gate:
    """The authority gate in the run: authorize, ask a person when policy says so, re-check."""

    def __init__(self, run: Run, approvals: ApprovalDesk, tools: ToolCalls) -> None:
        self._run = run
        self._approvals = approvals
        self._tools = tools

    async def act_on_proposal(self) -> None:
        proposal = self._run.state.proposed_action
        if proposal is None:  # defensive: the fold never leaves "acting" without a proposal
            raise ApplicationError("acting phase without a proposal", non_retryable=True)
        step = self._run.state.current_step or ""
        # The proposal a step drafted, acted on after it (the step's own span has ended).
        with span("agentledger.act", of_run(self._run, step=step, tool=proposal.tool)):
            await self.govern(step, proposal)

    async def govern(self, step: str, proposal: ToolCallProposal) -> None:
        operation_id = f"op_{self._run.state.last_seq + 1}"
        verdict = self._authorize(step, proposal, operation_id)
        if verdict.kind == "needs_approval":
            outcome = await self._approvals.await_approval(
                operation_id, verdict.proposal, verdict.proposal_digest
            )
            if outcome.decision != "granted":
                return
            if outcome.edit is not None:  # the grant allows the approver's call, not the model's
                proposal = ToolCallProposal(tool=proposal.tool, arguments=outcome.edit.approved)
            verdict = self._authorize(step, proposal, operation_id)  # re-checked at dispatch
            if outcome.edit is not None and isinstance(verdict, Allow) and not verdict.approval_id:
                # An edit that no longer needs approval still ran on the strength of this grant.
                verdict = verdict.model_copy(update={"approval_id": outcome.approval_id})
        if self._run.stopping:  # nothing starts after a cancel or an interrupting message
            return
        if isinstance(verdict, Deny):
            self._run.record(denied(self._run.stamp(), step, operation_id, proposal.tool, verdict))
        elif isinstance(verdict, Allow):
            await self._tools.execute(operation_id, verdict)
        else:
            raise ApplicationError("approval granted but still required", non_retryable=True)

    def _authorize(self, step: str, proposal: ToolCallProposal, operation_id: str) -> Authorization:
        run = self._run
        attributes = of_run(run, step=step, tool=proposal.tool, operation_id=operation_id)
        with span("agentledger.authorise", attributes) as traced:
            verdict = run.authorization(step, proposal, operation_id)
            traced.set_attribute(OUTCOME, verdict.kind)
            if isinstance(verdict, Deny):
                traced.set_attribute(REASON, verdict.reason_code)
        return verdict
