"""Operators acting on a live run: a signed cancel, honoured at the next safe point, and a
signed instruction, carried by every later packet. Each is checked like an approval.

The ``cancel_run`` and ``steer_run`` updates prove who acts (a pinned key's assertion bound to
this run, the action and its exact text; then the directory: the ``canceller`` or ``steerer``
role in the run's tenant). A cancel records nothing until the run is at a point where it may
end: a model or tool call in flight completes (its receipt is recorded), no consequential call
starts after the cancel was accepted, pending approvals expire, and the run ends
``run_cancelled`` with who and why; the update returns how the run ended. An instruction is
recorded at once as ``operator_instructed``. Refused attempts are recorded for audit (the first
few), then only refused.
"""

from __future__ import annotations

from typing import Literal, NoReturn

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
        steer_audience,
    )
    from agentledger.domain.operators import cancel_refusal, steer_refusal
    from agentledger.domain.principal import Principal
    from agentledger.domain.state import ENDED
    from agentledger.workflows.messages import CancelOrder, CancelResult, SteerOrder, SteerResult

from agentledger.workflows._assertions import check_assertion, refuse_unsigned
from agentledger.workflows._core import Run
from agentledger.workflows._directory import directory_refusal, look_up_principal

Action = Literal["cancel", "steer"]
Order = CancelOrder | SteerOrder


class OperatorDesk:
    """Takes operators' cancels (``Run.cancel``; the run ends at its next safe point) and
    instructions (recorded at once)."""

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
        proven, operator = await self._operator("cancel", order, order.reason)
        if run.cancel is None:  # a second cancel while the first is honoured joins it
            run.cancel = ev.RunCancelled(
                **run.stamp(),
                cancelled_by=proven.subject,
                reason=order.reason,
                operator_entry=operator,
                assertion=proven,
            )
        # Answered once the end is stored, so whoever cancelled reads it in the ledger.
        await workflow.wait_condition(lambda: run.state.status in ENDED and not run.unsent)
        return CancelResult(status=run.state.status)

    async def steer(self, order: SteerOrder) -> SteerResult:
        run = self._run
        proven, operator = await self._operator("steer", order, order.text)
        instructed = ev.OperatorInstructed(
            **run.stamp(),
            instructed_by=proven.subject,
            text=order.text,
            operator_entry=operator,
            assertion=proven,
        )
        run.record(instructed)
        await run.flush()  # in the ledger before the operator is told it was taken
        return SteerResult(seq=instructed.seq)

    async def _operator(
        self, action: Action, order: Order, text: str
    ) -> tuple[VerifiedAssertion, Principal]:
        """Who signed ``order``, as the directory knows them, if they may take ``action``
        with ``text`` now; otherwise the refusal is recorded (while under the cap) and raised."""
        run = self._run
        await workflow.wait_condition(lambda: run.state.status != "new")
        proven = self._proven(action, order, text)
        if isinstance(proven, ApprovalRefusal):
            await self._refuse(action, proven, order.operator_id)
        foreign = foreign_speaker(proven, run.manifest.trusted_keys)
        found = await look_up_principal(proven.subject, proven, foreign)
        refusal = directory_refusal(found, proven.subject, foreign, "unknown_operator")
        if refusal is None:
            assert found.principal is not None
            judge = cancel_refusal if action == "cancel" else steer_refusal
            refusal = judge(run.state, found.principal, text)
        if refusal is not None:
            await self._refuse(action, refusal, proven.subject)
        assert found.principal is not None
        return proven, found.principal

    def _proven(
        self, action: Action, order: Order, text: str
    ) -> VerifiedAssertion | ApprovalRefusal:
        run = self._run
        run_id = run.state.run_id or run.rec.run_id
        audience = cancel_audience(run_id) if action == "cancel" else steer_audience(run_id)
        expected = Expected(
            audience=audience,
            digest=reply_digest(text),
            decision=action,
            what=f"this run's {action}",
        )
        return check_assertion(
            order.assertion,
            run.manifest.trusted_keys,
            expected,
            claimed_id=order.operator_id,
            now=workflow.now(),
            spent=run.state.spent_assertions if action == "steer" else (),
        )

    async def _refuse(
        self, action: Action, refusal: ApprovalRefusal, attempted_by: str
    ) -> NoReturn:
        run = self._run
        if run.state.status == "running" and self._refusals_recorded < MAX_RECORDED_REFUSALS:
            self._refusals_recorded += 1
            run.record(
                ev.OperatorActionRefused(
                    **run.stamp(),
                    action=action,
                    attempted_by=attempted_by[:200],
                    reason_code=refusal.reason_code,
                    detail=refusal.detail,
                )
            )
            await run.flush()
        raise ApplicationError(refusal.detail, type=refusal.reason_code, non_retryable=True)

    def check(self, order: Order) -> None:
        """The updates' validator: an order for an ended run, for a run that pins no keys, or
        that no pinned key signed never reaches history."""
        run = self._run
        if run.state.status == "new":
            return  # not started (or resumed) yet: the handler judges it once it has
        if run.state.status != "running":
            raise ValueError(f"run_ended: the run has {run.state.status}")
        manifest = run.manifest_or_none
        if manifest is None or not manifest.trusted_keys:
            raise ValueError("unsigned_run: this run pins no keys; end it with Temporal instead")
        update = "cancel_run" if isinstance(order, CancelOrder) else "steer_run"
        refuse_unsigned(update, order.assertion, manifest.trusted_keys)
