"""An approval announced on the channels its manifest names, once it is in the inbox: each
channel's outcome is recorded (``approval_notified``, ``approval_notification_failed``) and
neither changes what the approval waits for (``activities.notices``).

No ``workflow.patched`` guards this: only manifests frozen by code that notifies name
channels, so a run started before it never reaches the call.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from agentledger.activities.messages import NoticeInput, NoticeSent
    from agentledger.activities.surface import NoticeSteps
    from agentledger.domain import events as ev

from agentledger.workflows._core import Run

NOTICE_TIMEOUT = timedelta(seconds=70)
"""One attempt: a webhook's or a mail server's own timeout (at most 60 s) and the message."""
NOTICE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=3,
)
"""A channel down for a few seconds is retried; one down longer is recorded as failed."""


async def announce(run: Run, requested: ev.ApprovalRequested) -> None:
    """Tell each channel of the manifest at once that ``requested`` waits, and record how each
    went, in the manifest's order (a slow channel delays no other)."""
    channels = run.manifest.notify_channels
    outcomes = await asyncio.gather(*(_send(run, requested, c) for c in channels))
    for channel, outcome in zip(channels, outcomes, strict=True):
        run.record(_outcome(run, requested, channel, outcome))
    await run.flush()


async def _send(
    run: Run, requested: ev.ApprovalRequested, channel: str
) -> NoticeSent | BaseException:
    notice = NoticeInput(
        run_id=requested.run_id,
        approval_id=requested.approval_id,
        channel=channel,
        tenant_id=run.principal.tenant_id,
        tool=requested.proposal.tool,
        approver_role=requested.approver_role,
        eligible_approvers=requested.eligible_approvers or (),
        expires_at=requested.expires_at,
        arguments=requested.proposal.arguments,
    )
    try:
        return await workflow.execute_activity_method(
            NoticeSteps.notify_approval,
            notice,
            task_queue=run.queues.tool,
            start_to_close_timeout=NOTICE_TIMEOUT,
            retry_policy=NOTICE_RETRY,
        )
    except ActivityError as exc:  # the last attempt's error: the run goes on
        return exc.cause or exc


def _outcome(
    run: Run, requested: ev.ApprovalRequested, channel: str, outcome: NoticeSent | BaseException
) -> ev.ApprovalNotified | ev.ApprovalNotificationFailed:
    if isinstance(outcome, BaseException):
        return ev.ApprovalNotificationFailed(
            **run.stamp(),
            approval_id=requested.approval_id,
            channel=channel,
            reason_code=getattr(outcome, "type", None) or "notice_failed",
            detail=str(getattr(outcome, "message", outcome))[:500],
        )
    return ev.ApprovalNotified(
        **run.stamp(),
        approval_id=requested.approval_id,
        channel=channel,
        channel_kind=outcome.channel_kind,
        recipients=outcome.recipients,
    )
