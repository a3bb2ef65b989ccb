"""The deployment's housekeeping schedule: a Temporal Schedule that starts ``Housekeeping``
(``workflows.housekeeping``) on the task queue's workers every hour, so that memories past their
expiry are expired without anyone remembering to. ``agentledger dev`` and every ``agentledger
worker`` that takes workflow tasks make it if it is missing (one per task queue; a fleet's
workers race to make it, and all but one find it made). Returns; never prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)

from agentledger.workflows.housekeeping import HOUSEKEEPING

EVERY = timedelta(hours=1)


@dataclass(frozen=True)
class Housekeeping:
    schedule_id: str
    every: timedelta
    made: bool
    """``False``: it was there already (made by another worker, or an earlier start)."""


def housekeeping_id(task_queue: str) -> str:
    return f"agentledger-housekeeping-{task_queue}"


async def ensure_housekeeping(
    client: Client, task_queue: str, every: timedelta = EVERY
) -> Housekeeping:
    """The task queue's housekeeping schedule, made if missing (an existing one is left as
    it is: an operator may have paused it)."""
    sid = housekeeping_id(task_queue)
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(
            HOUSEKEEPING, id=f"housekeeping-{task_queue}", task_queue=task_queue
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )
    try:
        await client.create_schedule(sid, schedule)
    except ScheduleAlreadyRunningError:
        return Housekeeping(sid, every, made=False)
    return Housekeeping(sid, every, made=True)
