"""Whether a live worker serves a task queue, said within seconds.

Temporal keeps listing a worker that has stopped among a queue's pollers for minutes, with the
time of its last poll; a live worker that is idle re-polls only when its long poll (about a
minute) ends. So a recent poll alone proves little either way. What does: a task only a worker
can take (a run's first workflow task, a query, an update) was put on the queue at ``since``;
a live idle worker takes it at once and polls again, so its last poll is later than ``since``.
When none is, after a few seconds, no live worker polls (or every one is busy).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TypeVar

from temporalio.api.enums.v1 import EventType, PendingWorkflowTaskState, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from agentledger.app.errors import ServerUnavailable

LONG_POLL_SECONDS = 75.0
"""A live worker polls again at least this often (the server's long poll is a minute)."""
FIRST_TASK_SECONDS = 3.0
"""How long a new run's first workflow task (always on the shared queue) may wait untaken."""
STICKY_SECONDS = 13.0
"""How long other work may wait: a task offered to the sticky queue of a worker that has gone
moves to the shared queue after the server's sticky schedule-to-start timeout (10 s)."""
CHECK_EVERY = 1.0

T = TypeVar("T")


async def last_polls(client: Client, task_queue: str) -> list[datetime]:
    """When each worker listed on ``task_queue`` last polled it for workflow tasks."""
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return [p.last_access_time.ToDatetime(UTC) for p in described.pollers]


async def has_workers(client: Client, task_queue: str) -> bool:
    """Whether a worker has polled ``task_queue`` within a long poll: one that stopped longer
    ago than that is not counted (one that stopped just now still is: see ``no_worker``)."""
    now = datetime.now(UTC)
    polls = await last_polls(client, task_queue)
    return any((now - last).total_seconds() < LONG_POLL_SECONDS for last in polls)


async def no_worker(client: Client, task_queue: str, since: datetime, bound: float) -> str | None:
    """Why no live worker will take what was put on ``task_queue`` at ``since`` (``None``: one
    has polled since, or it is too soon to say)."""
    now = datetime.now(UTC)
    if (now - since).total_seconds() < bound:
        return None
    polls = await last_polls(client, task_queue)
    if any(last >= since for last in polls):
        return None
    last = (
        f"its last poll was {(now - max(polls)).total_seconds():.0f}s ago"
        if polls
        else "no worker has polled it since this server started"
    )
    return (
        f"no live worker polls task queue {task_queue} ({last}; the demo's worker ends with "
        "the demo); keep `agentledger dev` running in another terminal, or start "
        "`agentledger worker`: what was sent waits on the queue and goes on once one polls "
        "(`agentledger show --list` shows where each run is)"
    )


async def watch(client: Client, task_queue: str, since: datetime, bound: float) -> None:
    """Return never; raise ``ServerUnavailable`` once ``no_worker`` names the problem. Run it
    beside a query or an update, and cancel it when that returns."""
    while True:
        await asyncio.sleep(CHECK_EVERY)
        if (problem := await no_worker(client, task_queue, since, bound)) is not None:
            raise ServerUnavailable(problem)


async def watched(
    work: Awaitable[T], client: Client, task_queue: str, bound: float = STICKY_SECONDS
) -> T:
    """``work`` (a query or an update only a worker answers), or ``ServerUnavailable`` as soon
    as no live worker has taken it ``bound`` seconds after it was sent."""
    since = datetime.now(UTC)
    answer = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(watch(client, task_queue, since, bound))
    try:
        await asyncio.wait({answer, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (answer, watcher):
            task.cancel()
    if not answer.done() or answer.cancelled():
        watcher.result()  # the named failure (or the watcher's own RPC error)
    return answer.result()


def rpc_failure(exc: RPCError, doing: str) -> ServerUnavailable:
    """A failed call to Temporal as a named error, with what to do."""
    status = exc.status.name if exc.status is not None else "no status"
    return ServerUnavailable(
        f"the Temporal server failed while {doing} ({status}: {exc.message}); check that it "
        "runs (`agentledger dev`, or --temporal-address) and try again"
    )


async def until_taken(client: Client, run_id: str, timeout: float = 15.0) -> None:
    """Wait until the run's pending workflow task is taken by a worker; raise
    ``ServerUnavailable`` as soon as it is plain that no live worker will take it."""
    handle = client.get_workflow_handle(run_id)
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        description = await handle.describe()
        raw = description.raw_description
        task = raw.pending_workflow_task
        scheduled = (
            description.status == WorkflowExecutionStatus.RUNNING
            and raw.HasField("pending_workflow_task")
            and task.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED
        )
        if not scheduled:
            return
        first = (description.history_length or 0) <= 2  # never offered to a sticky queue
        since = task.original_scheduled_time.ToDatetime(UTC)
        bound = FIRST_TASK_SECONDS if first else STICKY_SECONDS
        if (problem := await no_worker(client, description.task_queue, since, bound)) is not None:
            raise ServerUnavailable(f"run {run_id} is not being worked on: {problem}")
        await asyncio.sleep(CHECK_EVERY / 2)


STUCK_AFTER_ATTEMPTS = 3
STUCK_CHECK_SECONDS = 2.0


async def stuck_activity(client: Client, run_id: str) -> str | None:
    """What a running run has failed to get past for several attempts (``None``: nothing): an
    activity, or its own workflow task (a worker that cannot read the run's payloads, say)."""
    handle = client.get_workflow_handle(run_id)
    raw = (await handle.describe()).raw_description
    for pending in raw.pending_activities:
        if pending.attempt >= STUCK_AFTER_ATTEMPTS and pending.HasField("last_failure"):
            return (
                f"{pending.activity_type.name} has failed {pending.attempt - 1} times: "
                f"{pending.last_failure.message}"
            )
    task = raw.pending_workflow_task
    if raw.HasField("pending_workflow_task") and task.attempt >= STUCK_AFTER_ATTEMPTS:
        failed = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        last = None
        async for event in handle.fetch_history_events():
            if event.event_type == failed:
                last = event.workflow_task_failed_event_attributes.failure.message
        if last is not None:
            return f"its workflow task has failed {task.attempt - 1} times: {last}"
    return None
