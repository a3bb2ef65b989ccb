"""Why a faulted run has not completed: still recovering (the bench's window was short) or stuck.

A run recovering from a killed worker shows no new history events while its activity waits out
its start-to-close timeout and retries: progress is a history event *or* a pending activity
attempt started recently. ``settle`` keeps waiting while every unfinished run progresses (up to
a hard limit); ``verdict`` names what each one left unfinished is doing.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus

QUIET_SECONDS = 40.0
"""Longer than a killed call's recovery: its 10 s timeout, the retry, a worker restart."""
STUCK_ATTEMPTS = 5
"""A pending activity past this many attempts with a failure is stuck, however recently it ran."""


@dataclass(frozen=True)
class Verdict:
    run_id: str
    verdict: str
    """``completed``, ``slow`` (still recovering when the bench gave up), ``stuck`` (failing the
    same way, or silent), ``parked`` (waiting on a person) or ``ended`` (failed, terminated)."""
    detail: str

    def row(self) -> dict[str, str]:
        return asdict(self)


async def settle(client: Client, runs: list[str], hard_limit: float) -> list[Verdict]:
    """Wait while any unfinished run still progresses, at most ``hard_limit`` seconds; then
    every run's verdict."""
    deadline = time.monotonic() + hard_limit
    while True:
        verdicts = [await verdict(client, run_id) for run_id in runs]
        waiting = [v for v in verdicts if v.verdict == "slow"]
        if not waiting or time.monotonic() >= deadline:
            return verdicts
        await asyncio.sleep(2.0)


async def verdict(client: Client, run_id: str) -> Verdict:
    described = await client.get_workflow_handle(run_id).describe()
    if described.status == WorkflowExecutionStatus.COMPLETED:
        return Verdict(run_id, "completed", "")
    if described.status != WorkflowExecutionStatus.RUNNING:
        status = described.status.name if described.status else "unknown"
        return Verdict(run_id, "ended", status.lower())
    return _running(run_id, described, await _last_event_at(client, run_id))


def _running(run_id: str, described: WorkflowExecutionDescription, last: datetime) -> Verdict:
    now = datetime.now(UTC)
    pending = described.raw_description.pending_activities
    for activity in pending:
        name, attempt = activity.activity_type.name, activity.attempt
        failure = activity.last_failure.message
        if attempt > STUCK_ATTEMPTS and failure:
            return Verdict(run_id, "stuck", f"{name} attempt {attempt}: {failure[:200]}")
        started = (
            activity.last_started_time.ToDatetime(UTC)
            if activity.last_started_time.seconds
            else None
        )
        recent = started is not None and (now - started).total_seconds() < QUIET_SECONDS
        if recent or activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED:
            return Verdict(run_id, "slow", f"{name} attempt {attempt} running")
        if activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED:
            return Verdict(run_id, "slow", f"{name} attempt {attempt} waiting for a worker")
    quiet = (now - last).total_seconds()
    if quiet < QUIET_SECONDS:
        return Verdict(run_id, "slow", f"last event {quiet:.0f} s ago")
    if not pending:
        return Verdict(run_id, "parked", f"no activity pending, quiet for {quiet:.0f} s")
    return Verdict(run_id, "stuck", f"quiet for {quiet:.0f} s with {len(pending)} activities")


async def _last_event_at(client: Client, run_id: str) -> datetime:
    last = datetime.fromtimestamp(0, UTC)
    async for event in client.get_workflow_handle(run_id).fetch_history_events():
        last = event.event_time.ToDatetime(UTC)
    return last
