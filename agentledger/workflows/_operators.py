"""Operators acting on a live run: a signed cancel, checked like an approval and honoured at the
next safe point.

The ``cancel_run`` update proves who cancels (a pinned key's assertion bound to this run and to
the exact reason, then the directory: the ``canceller`` role in the run's tenant) and records
nothing until the run is at a point where it may end: a model or tool call in flight completes
(its receipt is recorded), no consequential call starts after the cancel was accepted, pending
approvals expire, and the run ends ``run_cancelled`` with who and why. The update returns how the
run ended. Refused attempts are recorded for audit (the first few), then only refused.
"""

from __future__ import annotations

from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from agentledger.domain import events as ev
    from agentledger.domain.approvals import MAX_RECORDED_REFUSALS, ApprovalRefusal
    from agentledger.domain.assertions import (
        Expected,
        VerifiedAssertion,
        cancel_audience,
        foreign_speaker,
        reply_digest,
    )
    from agentledger.domain.operators import cancel_refusal
    from agentledger.domain.state import ENDED
    from agentledger.workflows.messages import CancelOrder, CancelResult

from agentledger.workflows._assertions import check_assertion, refuse_unsigned
from agentledger.workflows._core import Run
from agentledger.workflows._directory import directory_refusal, look_up_principal


class OperatorDesk:
    """Takes operators' cancels (``Run.cancel``); the run ends at its next safe point."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._refusals_recorded = 0

    def end_if_cancelled(self) -> bool:
        """At a safe point: record the accepted cancel (pending approvals expire with the run)
        and say whether the run has ended."""
        run, order = self._run, self._run.cancel
        if order is None or run.state.status != "running":
            return run.state.status != "running"
        run.expire_pending()
        run.record(order.model_copy(update=run.stamp()))
        return True

    async def cancel(self, order: CancelOrder) -> CancelResult:
        run = self._run
        await workflow.wait_condition(lambda: run.state.status != "new")
        proven = self._proven(order)
        if isinstance(proven, ApprovalRefusal):
            await self._refuse(order, proven, order.operator_id)
        foreign = foreign_speaker(proven, run.manifest.trusted_keys)
        found = await look_up_principal(proven.subject, proven, foreign)
        refusal = directory_refusal(found, proven.subject, foreign, "unknown_operator")
        if refusal is None:
            assert found.principal is not None
            refusal = cancel_refusal(run.state, found.principal, order.reason)
        if refusal is not None:
            await self._refuse(order, refusal, proven.subject)
        if run.cancel is None:  # a second cancel while the first is honoured joins it
            run.cancel = ev.RunCancelled(
                **run.stamp(),
                cancelled_by=proven.subject,
                reason=order.reason,
                operator_entry=found.principal,
                assertion=proven,
            )
        # Answered once the end is stored, so whoever cancelled reads it in the ledger.
        await workflow.wait_condition(lambda: run.state.status in ENDED and not run.unsent)
        return CancelResult(status=run.state.status)

    def _proven(self, order: CancelOrder) -> VerifiedAssertion | ApprovalRefusal:
        run = self._run
        expected = Expected(
            audience=cancel_audience(run.state.run_id or run.rec.run_id),
            digest=reply_digest(order.reason),
            decision="cancel",
            what="this run's cancel",
        )
        return check_assertion(
            order.assertion,
            run.manifest.trusted_keys,
            expected,
            claimed_id=order.operator_id,
            now=workflow.now(),
        )

    async def _refuse(
        self, order: CancelOrder, refusal: ApprovalRefusal, attempted_by: str
    ) -> NoReturn:
        run = self._run
        if run.state.status == "running" and self._refusals_recorded < MAX_RECORDED_REFUSALS:
            self._refusals_recorded += 1
            run.record(
                ev.OperatorActionRefused(
                    **run.stamp(),
                    action="cancel",
                    attempted_by=attempted_by[:200],
                    reason_code=refusal.reason_code,
                    detail=refusal.detail,
                )
            )
            await run.flush()
        raise ApplicationError(refusal.detail, type=refusal.reason_code, non_retryable=True)

    def check(self, order: CancelOrder) -> None:
        """The update's validator: a cancel of an ended run, of a run that pins no keys, or
        that no pinned key signed never reaches history."""
        run = self._run
        if run.state.status == "new":
            return  # not started (or resumed) yet: the handler judges it once it has
        if run.state.status != "running":
            raise ValueError(f"run_ended: the run has {run.state.status}")
        manifest = run.manifest_or_none
        if manifest is None or not manifest.trusted_keys:
            raise ValueError("unsigned_run: this run pins no keys; end it with Temporal instead")
        refuse_unsigned("cancel_run", order.assertion, manifest.trusted_keys)
