"""``agentledger reply``, and what ``run --wait``/``reply --wait`` say about a run that stopped
to wait: on an approval, on its customer, or because it ended."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import orjson
from temporalio.client import Client, WorkflowExecutionStatus

from agentledger.activities.ledger import Ledger
from agentledger.app import liveness
from agentledger.app import runs as client_ops
from agentledger.app.config import Settings
from agentledger.app.errors import Refused
from agentledger.app.identity import issuer_for
from agentledger.app.temporal import connect
from agentledger.cli.show import open_ledger
from agentledger.domain.events import ConversationClosed, ReplyAwaited, RunEvent, RunFailed
from agentledger.domain.state import WorkingState

say = print


async def reply(settings: Settings, args: argparse.Namespace) -> int:
    """The customer's message to a run waiting on them, signed as ``--as`` with this machine's
    issuer key (the run checks the signature and that it is the requester; anyone else is
    refused and recorded)."""
    ledger = open_ledger(settings)
    client = await connect(settings)
    described = await client_ops.described(client, args.run_id)
    if described.status != WorkflowExecutionStatus.RUNNING:
        status = described.status.name.lower() if described.status else "ended"
        raise Refused(ended(ledger.read(args.run_id), args.run_id, status))
    # Only a worker takes a reply: without a live one it is named, not waited out.
    queue = described.task_queue
    sending = client_ops.reply(
        client, args.run_id, args.principal, args.text, issuer=issuer_for(settings)
    )
    result = await liveness.watched(sending, client, queue)
    say(f"{result.reply_id} taken by {args.run_id} (#{result.seq})")
    if not args.wait:
        return 0
    state = await client_ops.wait_for(client, args.run_id, pending_approval=True)
    return await report(client, state, ledger)


async def report(client: Client, state: WorkingState, ledger: Ledger) -> int:
    """Say what the run waits on or how it ended; 1 when it failed."""
    for approval in state.pending_approvals.values():
        say(
            f"awaiting approval {approval.approval_id}: {approval.proposal.tool} "
            f"{orjson.dumps(approval.proposal.arguments).decode()}"
        )
    if state.pending_approvals:
        return 0
    if state.awaiting is not None:
        asked = "asks" if state.awaiting.reason == "question" else "answered; awaiting a follow-up"
        say(f"{asked}: {state.conversation[-1].text}")
        say(f'reply with: agentledger reply {state.run_id} "..." --as {state.principal_id}')
        return 0
    if state.status != "failed":
        answer = state.last_answer.answer if state.last_answer is not None else None
        say(f"{state.status}: {answer}" if answer else state.status)
        await client.get_workflow_handle(state.run_id).result()  # its last events are flushed
        if (closing := closed(ledger.read(state.run_id))) is not None:
            say(closing)
        return 0
    await client.get_workflow_handle(state.run_id).result()  # its last events are flushed
    failed = next(
        (e for e in reversed(ledger.read(state.run_id)) if isinstance(e, RunFailed)), None
    )
    say(f"failed: {failed.reason_code}: {failed.message}" if failed else "failed")
    return 1


def ended(events: Sequence[RunEvent], run_id: str, status: str) -> str:
    """What a reply to a run that has ended is told: that it ended, and how its conversation
    closed if it did."""
    told = f"run {run_id} has ended ({status}); it takes no replies"
    how = closed(events)
    return f"{told}; {how}" if how else f"{told}; start a new one with `agentledger run`"


def closed(events: Sequence[RunEvent]) -> str | None:
    """How the run's conversation closed (``None``: it did not), with the closing message and,
    when nobody had answered it, the question left open."""
    close = next((e for e in reversed(events) if isinstance(e, ConversationClosed)), None)
    if close is None:
        return None
    asked = next(
        (e for e in reversed(events) if isinstance(e, ReplyAwaited) and e.seq < close.seq), None
    )
    left = (
        f'with its question unanswered ("{asked.message}")'
        if asked is not None and asked.reason == "question"
        else "after its last answer"
    )
    return (
        f"the conversation closed ({close.reason.replace('_', ' ')}) {left}; closing "
        f'message: "{close.message}"'
    )
