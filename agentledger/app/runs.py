"""Operations on runs through Temporal: start, wait, approve, query."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from agentledger.app import liveness
from agentledger.app.errors import NotFound, Refused, RunStuck, ServerUnavailable, StillRunning
from agentledger.app.request_check import request_refusal
from agentledger.domain.limits import work_order_problem
from agentledger.domain.state import ENDED, WorkingState
from agentledger.domain.workorder import WorkOrder
from agentledger.workflows import (
    AgentRunWorkflow,
    ApprovalDecision,
    ApprovalResult,
    Reply,
    ReplyResult,
    RunInput,
    RunOutcome,
)

if TYPE_CHECKING:
    from agentledger.app.identity import Issuer, VerifiedCaller


async def start_run(
    client: Client,
    task_queue: str,
    work_order: WorkOrder,
    run_id: str | None = None,
    *,
    issuer: Issuer,
    on_behalf_of: VerifiedCaller | None = None,
    id_reuse_policy: WorkflowIDReusePolicy = WorkflowIDReusePolicy.ALLOW_DUPLICATE,
) -> WorkflowHandle[Any, RunOutcome]:
    """Start the run, signed by ``issuer`` as its requester's (``on_behalf_of``: the caller a
    service verified); ``id_reuse_policy=REJECT_DUPLICATE`` for an id that must start one run
    ever (a webhook delivery's): a second start raises ``WorkflowAlreadyStartedError``."""
    run_id = run_id or f"run_{uuid.uuid4().hex[:12]}"
    problem = work_order_problem(work_order) or request_refusal(work_order)
    if problem is not None:  # the run would refuse (or fail) it too; say so before starting one
        raise Refused(f"work order refused: {problem}")
    assertion = issuer.start_assertion(work_order, run_id=run_id, on_behalf_of=on_behalf_of)
    return await client.start_workflow(
        "AgentRun",  # by name: the workflow takes its input raw and decodes it itself
        RunInput(run_id=run_id, work_order=work_order, requester_assertion=assertion),
        id=run_id,
        task_queue=task_queue,
        result_type=RunOutcome,
        id_reuse_policy=id_reuse_policy,
    )


QUERY_TIMEOUT = timedelta(seconds=30)
"""A query is answered by a worker; one that takes longer has no worker to answer it. It must
outlast the sticky schedule-to-start timeout (10 s by default): when the worker that cached the
run has gone (a deploy, a crash), the server first offers the query to that worker's sticky
queue for that long, and only then to the workers still polling."""


async def live_state(client: Client, run_id: str) -> WorkingState:
    handle = client.get_workflow_handle(run_id)
    try:
        return await handle.query(AgentRunWorkflow.state, rpc_timeout=QUERY_TIMEOUT)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise NotFound(
                f"no run {run_id} on this Temporal server; list runs with `agentledger show --list`"
            ) from None
        queue = (await handle.describe()).task_queue
        if not await has_workers(client, queue):
            raise ServerUnavailable(
                f"no worker is polling task queue {queue}, so run {run_id} cannot answer; "
                "start one with `agentledger worker` (or `agentledger dev`)"
            ) from None
        raise


async def wait_for(
    client: Client, run_id: str, *, pending_approval: bool, timeout: float = 120.0
) -> WorkingState:
    """Poll the run's query until it ends or waits on its customer (or, if asked, until an
    approval is pending). No live worker, a failed RPC or the time-out: each a named error."""
    loop = asyncio.get_running_loop()
    deadline, next_check = loop.time() + timeout, loop.time() + liveness.STUCK_CHECK_SECONDS
    queue = (await described(client, run_id)).task_queue
    while True:
        state = await _watched_state(client, run_id, queue)
        if state is not None and (
            state.status in ENDED
            or state.awaiting is not None
            or (pending_approval and state.pending_approvals)
        ):
            return state
        if loop.time() > next_check:  # name a failure that repeats instead of waiting it out
            if (stuck := await stuck_activity(client, run_id)) is not None:
                raise RunStuck(
                    f"run {run_id} is stuck: {stuck} (it keeps retrying; fix the cause, or "
                    "end it with `temporal workflow terminate`)"
                )
            next_check = loop.time() + liveness.STUCK_CHECK_SECONDS
        if loop.time() > deadline:
            raise StillRunning(
                f"run {run_id} did not reach an end, an approval or a question within "
                f"{timeout:.0f}s; it goes on: `agentledger show {run_id}` shows where it is"
            )
        await asyncio.sleep(0.05)


async def _watched_state(client: Client, run_id: str, queue: str) -> WorkingState | None:
    """The run's state, or ``None`` when the query timed out or was cancelled (a busy worker,
    or a run whose workflow task keeps failing: ``wait_for``'s stuck check names why)."""
    try:
        return await liveness.watched(live_state(client, run_id), client, queue)
    except RPCError as exc:
        unanswered = (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED)
        if exc.status in unanswered or "imeout" in exc.message:
            return None
        raise liveness.rpc_failure(exc, f"waiting for run {run_id}") from None


async def cancel(client: Client, run_id: str) -> None:
    """Ask Temporal to cancel the run: it records its end and expires its pending approvals."""
    try:
        await client.get_workflow_handle(run_id).cancel()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise NotFound(f"no run {run_id} on this Temporal server") from None
        raise liveness.rpc_failure(exc, f"cancelling run {run_id}") from None


async def described(client: Client, run_id: str) -> WorkflowExecutionDescription:
    try:
        return await client.get_workflow_handle(run_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise NotFound(f"no run {run_id} on this Temporal server") from None
        raise liveness.rpc_failure(exc, f"looking up run {run_id}") from None


async def decide(
    client: Client,
    run_id: str,
    approval_id: str,
    approver_id: str,
    *,
    issuer: Issuer,
    approve: bool,
    reason: str = "",
    content: dict[str, JsonValue] | None = None,
    on_behalf_of: VerifiedCaller | None = None,
    digest: str | None = None,
    edits: dict[str, JsonValue] | None = None,
) -> ApprovalResult:
    """Decide an approval as ``approver_id``, signed by ``issuer`` and bound to the exact
    proposal digest the run shows (the run verifies the signature with the key it pinned);
    with ``edits``, approve the call with those arguments changed (the signature covers both).

    The run asks the directory who that is; a reused or already-decided approval is still sent,
    so the run records the refused attempt. ``digest``: the one the approver was shown (the
    API reads it from the ledger's approvals); without it the run is queried for it.
    """
    digest = digest or await _shown_digest(client, run_id, approval_id)
    decision = ApprovalDecision(
        approval_id=approval_id,
        approver_id=approver_id,
        approve=approve,
        proposal_digest=digest,
        reason=reason,
        content=content,
        edits=edits,
    )
    signed = issuer.approval_assertion(
        approver_id, run_id=run_id, approval_id=approval_id, digest=decision.signed_digest(),
        approve=approve, on_behalf_of=on_behalf_of,
    )  # fmt: skip
    return await _send_decision(client, run_id, decision.model_copy(update={"assertion": signed}))


async def _shown_digest(client: Client, run_id: str, approval_id: str) -> str:
    """The proposal digest the run shows for ``approval_id``, pending or already decided."""
    state = await live_state(client, run_id)
    known = state.pending_approvals.get(approval_id) or state.approvals.get(approval_id)
    if known is None:
        raise NotFound(
            f"run {run_id} has no approval {approval_id}; pending: "
            f"{', '.join(state.pending_approvals) or 'none'}"
        )
    return known.proposal_digest


async def _send_decision(client: Client, run_id: str, decision: ApprovalDecision) -> ApprovalResult:
    """Deliver the decision as an update; a refusal by the run or a closed run is ``Refused``."""
    try:
        return await client.get_workflow_handle(run_id).execute_update(
            AgentRunWorkflow.decide_approval, decision
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        code = getattr(cause, "type", None)
        raise Refused(f"approval refused: {getattr(cause, 'message', cause)}", code) from None
    except RPCError as exc:
        if "already completed" in exc.message:
            raise Refused(f"run {run_id} has already ended; its approvals are closed") from None
        raise


async def reply(
    client: Client,
    run_id: str,
    principal_id: str,
    text: str,
    *,
    issuer: Issuer,
    on_behalf_of: VerifiedCaller | None = None,
) -> ReplyResult:
    """Send the customer's message to a run waiting on them, signed by ``issuer`` as theirs;
    a refusal is ``Refused``.

    A run that is continuing as new when the message arrives takes it in its next execution:
    an update refused because the execution it reached closed meanwhile is sent again while
    the run's latest execution is running."""

    async def signed() -> Reply:
        assertion = issuer.reply_assertion(
            principal_id,
            run_id=run_id,
            text=text,
            reply_to=await _reply_to(client, run_id),
            on_behalf_of=on_behalf_of,
        )
        return Reply(principal_id=principal_id, text=text, assertion=assertion)

    return await _delivered(client, run_id, signed)


async def _delivered(
    client: Client, run_id: str, signed: Callable[[], Awaitable[Reply]]
) -> ReplyResult:
    """Send the reply ``signed`` makes: again while the run continues as new, and signed again
    once if the run's question changed between reading it and sending."""
    handle = client.get_workflow_handle(run_id)
    message, resigned = await signed(), False
    for _ in range(20):
        try:
            return await handle.execute_update(AgentRunWorkflow.reply, message)
        except WorkflowUpdateFailedError as exc:
            code = getattr(exc.cause, "type", None)
            if code == "assertion_wrong_question" and not resigned:
                # The run asked (or stopped waiting) between the read and the send: the
                # message is signed again for what the run waits on now, once.
                message, resigned = await signed(), True
                continue
            detail = getattr(exc.cause, "message", exc.cause)
            raise Refused(f"reply refused: {detail}", code) from None
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                raise NotFound(f"no run {run_id} on this Temporal server") from None
            if "already completed" not in exc.message:
                raise
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                raise Refused(f"run {run_id} has already ended; it takes no replies") from None
        await asyncio.sleep(0.1)
    raise Refused(f"run {run_id} kept continuing as new; send the reply again")


async def _reply_to(client: Client, run_id: str) -> int | None:
    """The message the run waits on a reply to now: a reply is signed as answering it only."""
    awaited = (await live_state(client, run_id)).awaiting
    return awaited.seq if awaited is not None else None


stuck_activity = liveness.stuck_activity
has_workers = liveness.has_workers
