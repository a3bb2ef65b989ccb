"""Approvals: a run waits for a human (durably, with a deadline) and records what they decide.

Bound to what is approved: the decision carries the digest it was shown (an elicitation's grant,
content fitting the server's schema; an edited grant, the edits, judged by ``_edits``). Bound to
who approves: an assertion signed with a key the manifest pinned names its subject, this
approval, the digest and the decision (``domain.assertions``); the directory lists who may decide
when the approval is requested, and says again (roles, tenant) when they decide. An unsigned
decision is refused in the update's validator, unrecorded (``refuse_unsigned``); of the signed
ones refused, the first few of each approval are recorded for audit and the rest refused in the
validator too, so forged attempts never reach history or use up the run's update allowance.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from agentledger.workflows import _patches as patches

with workflow.unsafe.imports_passed_through():
    from agentledger.domain import events as ev
    from agentledger.domain.approvals import (
        MAX_RECORDED_REFUSALS,
        PRINCIPAL_CLAIMED,
        ApprovalRefusal,
        check_approval_decision,
        eligibility_refusal,
    )
    from agentledger.domain.assertions import (
        Expected,
        VerifiedAssertion,
        approval_audience,
        foreign_speaker,
    )
    from agentledger.domain.decisions import ApprovalEdit, ToolCallProposal
    from agentledger.domain.elicitation import ElicitationRequest
    from agentledger.domain.principal import Principal
    from agentledger.domain.state import ApprovalOutcome
    from agentledger.domain.verdict_events import decided, refused_attempt
    from agentledger.workflows.messages import ApprovalDecision, ApprovalResult

from agentledger.workflows._assertions import check_assertion, refuse_unsigned
from agentledger.workflows._core import Run
from agentledger.workflows._directory import (
    directory_refusal,
    look_up_principal,
)
from agentledger.workflows._edits import judged_edit
from agentledger.workflows._notices import announce
from agentledger.workflows._requests import approval_request
from agentledger.workflows._tracing import OUTCOME, of_run, span


class ApprovalDesk:
    """Asks for approvals, waits for them, and records what people decide."""

    def __init__(self, run: Run) -> None:
        self._run = run
        # Per run execution, like Temporal's update allowance; rebuilt identically on replay.
        self._refusals_recorded: dict[str, int] = {}

    async def await_approval(
        self,
        operation_id: str,
        proposal: ToolCallProposal,
        digest: str,
        elicitation: ElicitationRequest | None = None,
    ) -> ApprovalOutcome:
        run = self._run
        approval_id = f"apr_{run.state.last_seq + 1}"
        ttl = timedelta(seconds=run.manifest.approval_ttl_seconds)
        requested = await approval_request(
            run, approval_id, operation_id, proposal, digest, elicitation, ttl
        )
        run.record(requested)
        await run.flush()  # the approvals inbox must show the request while we wait
        if run.manifest.notify_channels:
            await announce(run, requested)
            ttl = max(requested.expires_at - workflow.now(), timedelta(0))
        waiting = of_run(
            run, approval_id=approval_id, operation_id=operation_id, tool=proposal.tool
        )
        with span("agentledger.approval_wait", waiting) as traced:
            with contextlib.suppress(TimeoutError):  # expiry is handled below
                await workflow.wait_condition(
                    lambda: approval_id not in run.state.pending_approvals or run.stopping,
                    timeout=ttl,
                )
            if approval_id in run.state.pending_approvals:  # expired, or withdrawn
                run.record(ev.ApprovalExpired(**run.stamp(), approval_id=approval_id))
            outcome = run.state.approvals[approval_id]
            traced.set_attribute(OUTCOME, outcome.decision)
        return outcome

    async def decide(self, decision: ApprovalDecision) -> ApprovalResult:
        """Record a human's decision, or the refused attempt (and refuse the update)."""
        if not workflow.patched(patches.DIRECTORY_APPROVERS):
            return self._decide_as_recorded(decision)
        if decision.approver is not None:
            await self._refuse(decision, PRINCIPAL_CLAIMED, decision.claimed_id())
        proven = self._proven(decision, once=workflow.patched(patches.SINGLE_USE_ASSERTIONS))
        if isinstance(proven, ApprovalRefusal):
            await self._refuse(decision, proven, decision.claimed_id())
        approver_id = proven.subject if proven is not None else decision.approver_id
        foreign = foreign_speaker(proven, self._run.manifest.trusted_keys)
        found = await look_up_principal(approver_id, proven, foreign)
        refusal = directory_refusal(found, approver_id, foreign)
        if refusal is not None:
            await self._refuse(decision, refusal, approver_id)
        approver = found.principal
        assert approver is not None
        refusal = self._policy_refusal(decision, approver) or eligibility_refusal(
            self._run.state, decision.approval_id, approver.user_id
        )
        if refusal is not None:
            await self._refuse(decision, refusal, approver.user_id)
        edit = judged_edit(self._run, decision, approver)
        if isinstance(edit, ApprovalRefusal):
            await self._refuse(decision, edit, approver.user_id)
        self._refuse_if_ended()
        return self._record(decision, approver, entry=approver, proven=proven, edit=edit)

    def _proven(
        self, decision: ApprovalDecision, *, once: bool
    ) -> VerifiedAssertion | ApprovalRefusal | None:
        """Who the decision's assertion proves decided; ``None`` for a run whose manifest pins
        no keys (frozen before decisions were signed: it takes the id it is sent). ``once``: an
        assertion the run accepted before is refused (``assertion_replayed``)."""
        run = self._run
        keys = run.manifest.trusted_keys
        if not keys:
            return None
        # The digest signed must be the one the decision names; whether that is the pending
        # proposal's is the policy's check (``digest_mismatch``), as for every decision.
        expected = Expected(
            audience=approval_audience(run.state.run_id or run.rec.run_id, decision.approval_id),
            digest=decision.signed_digest(),
            decision="approve" if decision.approve else "reject",
            what=f"approval {decision.approval_id}",
        )
        return check_assertion(
            decision.assertion,
            keys,
            expected,
            claimed_id=decision.approver_id,
            now=workflow.now(),
            spent=run.state.spent_assertions if once else (),
        )

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
            self._run.state,
            decision.approval_id,
            approver,
            decision.proposal_digest,
            workflow.now(),
            approve=decision.approve,
            content=decision.content,
        )

    def _record(
        self,
        decision: ApprovalDecision,
        approver: Principal,
        *,
        entry: Principal | None,
        proven: VerifiedAssertion | None = None,
        edit: ApprovalEdit | None = None,
    ) -> ApprovalResult:
        self._run.record(
            decided(
                self._run.stamp(),
                decision.approval_id,
                approver,
                approve=decision.approve,
                proposal_digest=decision.proposal_digest,
                reason=decision.reason,
                content=decision.content,
                entry=entry,
                proven=proven,
                edit=edit,
            )
        )
        return ApprovalResult(
            approval_id=decision.approval_id, decision="granted" if decision.approve else "rejected"
        )

    async def _refuse(
        self, decision: ApprovalDecision, refusal: ApprovalRefusal, attempted_by: str
    ) -> NoReturn:
        """Record the refused attempt at once (while under the cap), then refuse the update."""
        self._refuse_if_ended()
        recorded = self._refusals_recorded.get(decision.approval_id, 0)
        if recorded < MAX_RECORDED_REFUSALS:
            self._refusals_recorded[decision.approval_id] = recorded + 1
            self._emit_refusal(decision, refusal, attempted_by)
            await self._run.flush()
        raise ApplicationError(refusal.detail, type=refusal.reason_code, non_retryable=True)

    def _refuse_if_ended(self) -> None:
        """An update that waited on the directory while the run ended is refused unrecorded:
        nothing may follow a run's end in its log (such an event would fail every task)."""
        if self._run.state.status != "running":
            raise ApplicationError(
                f"run {self._run.state.run_id} has ended", type="run_ended", non_retryable=True
            )

    def _emit_refusal(
        self, decision: ApprovalDecision, refusal: ApprovalRefusal, attempted_by: str
    ) -> None:
        self._run.record(
            refused_attempt(self._run.stamp(), decision.approval_id, attempted_by, refusal)
        )

    def check_known(self, decision: ApprovalDecision) -> None:
        # Runs in the update's validator: what it refuses never reaches history, and counts
        # toward no limit. Unknown ids and unsigned decisions are always refused here (a claimed
        # principal is refused by the handler, as it always was); once an approval's refusals
        # are no longer recorded, every attempt the workflow can refuse without the directory is.
        if (
            decision.approval_id not in self._run.state.pending_approvals
            and decision.approval_id not in self._run.state.approvals
        ):
            raise ValueError(f"no approval {decision.approval_id} in run {self._run.state.run_id}")
        manifest = self._run.manifest_or_none
        if decision.approver is None and manifest is not None:
            refuse_unsigned("decide_approval", decision.assertion, manifest.trusted_keys)
        if self._refusals_recorded.get(decision.approval_id, 0) < MAX_RECORDED_REFUSALS:
            return
        if decision.approval_id not in self._run.state.pending_approvals:
            raise ValueError(f"approval {decision.approval_id} is no longer pending")
        if decision.approver is not None:
            raise ValueError(PRINCIPAL_CLAIMED.detail)
        proven = self._proven(decision, once=True)  # validators do not run on replay
        if isinstance(proven, ApprovalRefusal):
            raise ValueError(proven.detail)
        approver_id = proven.subject if proven is not None else decision.claimed_id()
        refusal = eligibility_refusal(self._run.state, decision.approval_id, approver_id)
        if refusal is not None:
            raise ValueError(refusal.detail)
