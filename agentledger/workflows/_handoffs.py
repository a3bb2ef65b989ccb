"""Handoffs in the run: a delegation runs as a Temporal child workflow of the same type.

The child is an ``AgentRun`` with its own run id (``<parent>/handoff/<n>``), its own ledger
stream and its own manifest (the contract's profile, narrowed to its authority). The parent
waits for it like for a tool call; whatever happens is one typed event on the parent's timeline
(``HandoffCompleted`` with output that fits the schema, or ``HandoffRefused`` saying why), and
what the child spent is charged to the parent's budget.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError
from temporalio.workflow import ParentClosePolicy

from agentledger.workflows import _patches as patches

with workflow.unsafe.imports_passed_through():
    from agentledger.domain import events as ev
    from agentledger.domain.decisions import Delegate
    from agentledger.domain.handoffs import (
        HandoffContract,
        HandoffOrigin,
        child_budget,
        child_work_order,
        output_problem,
    )
    from agentledger.domain.state import BudgetUsed, RunStatus
    from agentledger.domain.workorder import Budget, WorkOrder

from agentledger.workflows._core import Run

ChildInput = Callable[[str, WorkOrder, HandoffOrigin], BaseModel]
"""Builds the child's ``RunInput`` (owned by ``agent_run``, which this module cannot import)."""


class ChildOutcome(BaseModel):
    """The part of a child's ``RunOutcome`` the parent reads."""

    status: RunStatus
    answer: str | None = None
    reason_code: str | None = None
    used: BudgetUsed | None = None


class Handoffs:
    """Starts child runs for delegations and records how each ended."""

    def __init__(self, run: Run, child_input: ChildInput) -> None:
        self._run = run
        self._child_input = child_input

    async def delegate(self, step: str, decision: Delegate) -> None:
        run = self._run
        contract = run.manifest.handoff(decision.handoff)
        assert contract is not None  # after_model_step refused any other delegation
        child_id = self._child_id()
        budget = child_budget(contract, _remaining(run))
        if min(budget.steps, budget.tokens) <= 0:
            self._refuse(contract, None, "parent_budget_exhausted", "nothing left to delegate")
            return
        order = child_work_order(run.work_order, contract, decision.input, budget)
        run.record(
            ev.HandoffRequested(
                **run.stamp(),
                handoff=contract.name,
                child_run_id=child_id,
                step=step,
                profile_id=contract.profile_id,
                owner=contract.owner,
                input=decision.input,
                budget=budget,
            )
        )
        await run.flush()  # the request is on the parent's timeline before the child starts
        origin = HandoffOrigin(
            parent_run_id=run.state.run_id, handoff=contract.name, authority=contract.authority
        )
        child = asyncio.ensure_future(
            workflow.execute_child_workflow(
                "AgentRun",
                self._child_input(child_id, order, origin),
                id=child_id,
                result_type=ChildOutcome,
                parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
            )
        )
        await self._settle(contract, child_id, budget, child)

    def _child_id(self) -> str:
        """The next child's workflow id: its parent's, its place, and a suffix from the parent's
        deterministic randomness, so nobody can start a workflow under it first (squatting on a
        child id would make the delegation fail). Runs from before replay as they ran."""
        run = self._run
        base = f"{run.state.run_id}/handoff/{len(run.state.handoffs) + 1}"
        if not workflow.patched(patches.UNGUESSABLE_CHILD_IDS):
            return base
        return f"{base}-{workflow.uuid4().hex}"

    async def _settle(
        self,
        contract: HandoffContract,
        child_id: str,
        budget: Budget,
        child: asyncio.Future[Any],
    ) -> None:
        """Wait for the child within the termination's time; cancel it past that, when the
        parent itself is cancelled or when an operator cancels the parent (each recorded), then
        record its output or its failure."""
        limit = timedelta(seconds=contract.termination.max_seconds)
        run = self._run
        try:
            await workflow.wait_condition(lambda: child.done() or run.cancelled, timeout=limit)
        except TimeoutError:
            await _cancelled(child)
            self._refuse(contract, child_id, "handoff_timed_out", f"no output within {limit}")
            self._charge(child_id, _allotted(budget))
            return
        except asyncio.CancelledError:
            self._refuse(contract, child_id, "parent_cancelled", "the parent run was cancelled")
            await _cancelled(child)
            raise
        if not child.done():  # the operator's cancel: the child's work stops with the parent's
            self._refuse(contract, child_id, "parent_cancelled", "an operator cancelled the run")
            await _cancelled(child)
            self._charge(child_id, _allotted(budget))
            return
        try:
            outcome: ChildOutcome = child.result()
        except ChildWorkflowError as exc:
            self._refuse(contract, child_id, "child_failed", str(exc.cause or exc)[:500])
            self._charge(child_id, _allotted(budget))
            return
        self._finish(contract, child_id, outcome)

    def _finish(self, contract: HandoffContract, child_id: str, outcome: ChildOutcome) -> None:
        run = self._run
        if outcome.status != "completed":
            reason = outcome.reason_code or "failed"
            self._refuse(contract, child_id, f"child_{reason}", f"the child run ended: {reason}")
        else:
            output, problem = output_problem(contract, outcome.answer)
            if output is None:
                self._refuse(contract, child_id, "output_schema_violation", problem or "")
            else:
                run.record(
                    ev.HandoffCompleted(
                        **run.stamp(), handoff=contract.name, child_run_id=child_id, output=output
                    )
                )
        self._charge(child_id, outcome.used or BudgetUsed())

    def _refuse(
        self, contract: HandoffContract, child_id: str | None, reason_code: str, detail: str
    ) -> None:
        run = self._run
        run.record(
            ev.HandoffRefused(
                **run.stamp(),
                handoff=contract.name,
                child_run_id=child_id,
                reason_code=reason_code,
                detail=detail,
            )
        )

    def _charge(self, child_id: str, used: BudgetUsed) -> None:
        """What the child spent is the parent's to pay (``reason`` names the child)."""
        if used.steps or used.tool_calls or used.tokens:
            run = self._run
            run.record(
                ev.BudgetCharged(
                    **run.stamp(),
                    steps=used.steps,
                    tool_calls=used.tool_calls,
                    tokens=used.tokens,
                    reason=f"handoff:{child_id}",
                )
            )


def _remaining(run: Run) -> Budget:
    state = run.state
    return Budget(
        steps=state.remaining_steps(),
        tool_calls=state.remaining_tool_calls(),
        tokens=state.remaining_tokens(),
        wall_seconds=state.budget.wall_seconds,
    )


def _allotted(budget: Budget) -> BudgetUsed:
    """A child whose own count never came back is charged everything it was allotted."""
    return BudgetUsed(steps=budget.steps, tool_calls=budget.tool_calls, tokens=budget.tokens)


async def _cancelled(child: asyncio.Future[Any]) -> None:
    """Cancel the child and wait until it has recorded its end (its own RunFailed)."""
    if child.done():
        return
    child.cancel()
    with contextlib.suppress(ChildWorkflowError, asyncio.CancelledError):
        await child
