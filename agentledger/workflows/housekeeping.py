"""``Housekeeping``: what a deployment's housekeeping schedule starts (``app.housekeeping``).

Each firing, as of its own time, expires the memories whose ``expires_at`` has passed
(``MemoryStore.expire_due``, each recorded as an ``expired`` memory event, so retrieval no
longer offers them), then drops what runs that ended longer ago than the worker keeps them
(``AGENTLEDGER_ENDED_RUNS_KEPT_HOURS``) left beside their logs: answer streams, fork sandboxes
(``activities.leftovers``). Short activities, each retried by Temporal until it lands; a firing
that finds nothing due does nothing. Run content retention is
not done here yet: it needs the ledger's per-subject keys, so that an expired run's content can
be shredded with its audit intact.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import HousekeepingDone, HousekeepingInput
    from agentledger.activities.surface import HousekeepingSteps, LeftoverSteps

from agentledger.workflows import _patches as patches

HOUSEKEEPING = "Housekeeping"
_SHORT = timedelta(minutes=5)


@workflow.defn(name=HOUSEKEEPING)
class HousekeepingWorkflow:
    @workflow.run
    async def run(self) -> HousekeepingDone:
        now = HousekeepingInput(now=workflow.now())
        done = await workflow.execute_activity_method(
            HousekeepingSteps.expire_memories, now, start_to_close_timeout=_SHORT
        )
        if not workflow.patched(patches.PRUNE_ENDED_RUNS):
            return done
        pruned = await workflow.execute_activity_method(
            LeftoverSteps.prune_ended_runs, now, start_to_close_timeout=_SHORT
        )
        return done.model_copy(update={"pruned": pruned})
