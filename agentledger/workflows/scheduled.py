"""``ScheduledRun``: what a Temporal Schedule starts at each firing.

A schedule cannot start ``AgentRun`` itself: a run's input names its own run id, which must be
its workflow id, and a schedule's action has one fixed input while each firing gets a fresh
workflow id. So each firing starts this small workflow, which starts the run as its child under
an id derived from its own (a retried firing cannot start a second run) and waits for it, so
that the schedule's overlap policy applies to whole runs (``skip``: no second nightly
reconciliation while the first still waits on an approver). The child is abandoned, never
cancelled, if this workflow is closed: the run is its own.

The requester is not checked here: the run checks it in ``prepare_run`` like any other start,
and a requester who has left the directory gets a recorded refused start
(``run_started`` then ``run_failed``, ``preparation_failed``). Nobody signs at firing time: the
run names its schedule, and ``prepare_run`` prepares it only if the ledger's schedule journal
holds that schedule, not deleted, made with exactly this work order.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from agentledger.workflows.messages import RunInput, RunOutcome, ScheduledRunInput

SCHEDULED_RUN = "ScheduledRun"


def scheduled_run_id(firing_id: str) -> str:
    """The run a firing starts: ``run-`` and the firing's own workflow id (which Temporal makes
    from the schedule's id and the scheduled time)."""
    return f"run-{firing_id}"


@workflow.defn(name=SCHEDULED_RUN)
class ScheduledRunWorkflow:
    @workflow.run
    async def run(self, params: ScheduledRunInput) -> RunOutcome:
        run_id = scheduled_run_id(workflow.info().workflow_id)
        outcome: RunOutcome = await workflow.execute_child_workflow(
            "AgentRun",  # by name, as every starter does: the run decodes its own input
            RunInput(run_id=run_id, work_order=params.work_order, schedule_id=params.schedule_id),
            id=run_id,
            result_type=RunOutcome,
            parent_close_policy=ParentClosePolicy.ABANDON,
        )
        return outcome
