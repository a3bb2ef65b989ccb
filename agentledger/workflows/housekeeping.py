"""``Housekeeping``: what a deployment's housekeeping schedule starts (``app.housekeeping``).

Each firing expires the memories whose ``expires_at`` has passed (``MemoryStore.expire_due``,
each recorded as an ``expired`` memory event, so retrieval no longer offers them), as of the
firing's own time. One short activity, retried by Temporal until it lands; a firing that finds
nothing due does nothing. Run content retention is not done here yet: it needs the ledger's
per-subject keys, so that an expired run's content can be shredded with its audit intact.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import HousekeepingDone, HousekeepingInput
    from agentledger.activities.surface import HousekeepingSteps

HOUSEKEEPING = "Housekeeping"


@workflow.defn(name=HOUSEKEEPING)
class HousekeepingWorkflow:
    @workflow.run
    async def run(self) -> HousekeepingDone:
        return await workflow.execute_activity_method(
            HousekeepingSteps.expire_memories,
            HousekeepingInput(now=workflow.now()),
            start_to_close_timeout=timedelta(minutes=5),
        )
