"""Effects: an authorised call runs as an activity and ends in exactly one receipt.

Reads retry until they answer; writes are reconciled by their idempotency key; a write nothing
can reconcile runs once and an unknown outcome is settled as ``unknown`` for a person. A server
that asks for human input mid-call is answered through an approval, then the call is re-run.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import ReconcileToolInput, ToolStepInput
    from agentledger.activities.surface import RunSteps
    from agentledger.domain.decisions import ToolCallProposal
    from agentledger.domain.elicitation import (
        ElicitationRequest,
        answered_idempotency_key,
        declined_elicitation,
        elicitation_approval_digest,
    )
    from agentledger.domain.governance import Allow
    from agentledger.domain.steps import record_receipt
    from agentledger.domain.tools import Governed, Receipt, ReceiptStatus, resource_of
    from agentledger.domain.verdict_events import authorised

from agentledger.workflows._approvals import ApprovalDesk
from agentledger.workflows._core import MODEL_TIMEOUT, ONCE, RETRY, Run
from agentledger.workflows._tracing import OUTCOME, of_run, span


class ToolCalls:
    """Runs authorised calls and records exactly one receipt for each."""

    def __init__(self, run: Run, approvals: ApprovalDesk) -> None:
        self._run = run
        self._approvals = approvals

    async def execute(self, operation_id: str, allow: Allow) -> None:
        run = self._run
        contract = run.contracts[allow.tool]
        # Only a manifest that binds claims records the resource: the events of runs frozen
        # before stay exactly as they were recorded (and replay).
        resource = resource_of(contract, allow.arguments) if run.manifest.bound_claims else None
        run.record(authorised(run.stamp(), operation_id, allow, resource))
        call = ToolStepInput(
            run_id=run.state.run_id,
            pack=run.work_order.pack,
            operation_id=operation_id,
            tool=allow.tool,
            arguments=allow.arguments,
            idempotency_key=allow.idempotency_key,
            principal=run.principal,
            now=workflow.now(),
            outbox=run.take_outbox(),
            manifest_hash=run.manifest_hash,
        )
        with span(
            "agentledger.tool_call", of_run(run, tool=allow.tool, operation_id=operation_id)
        ) as traced:
            receipt = await self._call_tool(call, contract)
            asked = declined_elicitation(receipt.model_view) if receipt is not None else None
            if receipt is not None and asked is not None and run.manifest.pins(allow.tool):
                receipt = await self._answer_elicitation(call, contract, allow, asked, receipt)
            if receipt is not None:
                record_receipt(run.rec, workflow.now(), receipt)
            traced.set_attribute(OUTCOME, receipt.status if receipt is not None else "unknown")

    async def _call_tool(self, call: ToolStepInput, contract: Governed) -> Receipt | None:
        """The call's receipt, or ``None`` when its outcome was recorded as unknowable."""
        heartbeat = contract.heartbeat_seconds
        try:
            receipt = await workflow.execute_activity_method(
                RunSteps.execute_tool,
                call,
                task_queue=self._run.queues.tool,
                start_to_close_timeout=timedelta(seconds=contract.timeout_seconds),
                heartbeat_timeout=timedelta(seconds=heartbeat) if heartbeat else None,
                # Unlimited attempts with backoff (capped at 10 s): execute_tool reconciles a
                # write by its idempotency key before acting and a read has no effect to double,
                # so every retry is safe, and a database outage or a crashed worker must delay a
                # call, not turn it into a failure. A write nothing can reconcile runs once.
                retry_policy=ONCE if contract.on_partial_completion == "in_doubt" else RETRY,
                priority=self._run.fair_share,
            )
        except ActivityError as exc:
            if contract.on_partial_completion == "in_doubt":
                self._record_doubt(call, exc)
                return None
            return await self._reconcile(call, exc)
        self._run.confirm(call.outbox)
        return receipt

    async def _answer_elicitation(
        self,
        call: ToolStepInput,
        contract: Governed,
        allow: Allow,
        asked: ElicitationRequest,
        declined: Receipt,
    ) -> Receipt | None:
        """The server asked for human input and the call declined it: ask a person (the
        operation stays open), then re-run the call with exactly their answer. Without a grant
        the declined result stands; ``None`` when the re-run's outcome was recorded unknown."""
        bound_to = elicitation_approval_digest(
            call.operation_id, allow.arguments_digest, self._run.manifest_hash, asked
        )
        proposal = ToolCallProposal(tool=allow.tool, arguments=allow.arguments)
        outcome = await self._approvals.await_approval(call.operation_id, proposal, bound_to, asked)
        if outcome.decision != "granted" or outcome.content is None:
            return declined
        answered = call.model_copy(
            update={
                "elicitation_answers": {asked.digest: outcome.content},
                "idempotency_key": answered_idempotency_key(call.idempotency_key, asked),
                "now": workflow.now(),
                "outbox": self._run.take_outbox(),
            }
        )
        return await self._call_tool(answered, contract)

    def _record_doubt(self, call: ToolStepInput, exc: ActivityError) -> None:
        """Nothing can say whether the call ran: its outcome is settled as unknown, an
        unresolved error for a person (the outbox it carried is resent with the next flush)."""
        self._run.resend(call.outbox)
        record_receipt(self._run.rec, workflow.now(), self._doubt(call, exc, status="unknown"))

    def _doubt(
        self, call: ToolStepInput, exc: ActivityError, status: ReceiptStatus = "in_doubt"
    ) -> Receipt:
        return Receipt(
            operation_id=call.operation_id,
            tool=call.tool,
            tool_version="",
            status=status,
            idempotency_key=call.idempotency_key,
            error_code="outcome_unknown",
            error_message=str(exc.cause or exc),
            observed_at=workflow.now(),
        )

    async def _reconcile(self, call: ToolStepInput, exc: ActivityError) -> Receipt:
        """Outcome unknown: record it as in doubt, then ask the system of record."""
        run = self._run
        record_receipt(run.rec, workflow.now(), self._doubt(call, exc))
        # The failed call's outbox may not have landed; appends are idempotent, so resend it
        # (in order, it is among the unconfirmed events too: the ledger drops the repeat).
        asked = ReconcileToolInput(
            **{**dict(call), "outbox": call.outbox + run.take_outbox(), "now": workflow.now()}
        )
        receipt = await workflow.execute_activity_method(
            RunSteps.reconcile_tool,
            asked,
            task_queue=run.queues.tool,
            start_to_close_timeout=MODEL_TIMEOUT,
            retry_policy=RETRY,
            priority=run.fair_share,
        )
        run.confirm(asked.outbox)
        return receipt
