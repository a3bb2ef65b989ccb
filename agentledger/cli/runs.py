"""``agentledger run``, ``approve``, ``reply``, ``cancel``, ``steer`` and ``fork``, and what
``run --wait``/``reply --wait`` say about a run that stopped to wait: on an approval, on its
customer, or because it ended (``verify`` is ``cli.verify``)."""

from __future__ import annotations

import argparse
import asyncio
import sys

import orjson
from pydantic import JsonValue
from temporalio.client import Client, WorkflowExecutionStatus

from agentledger.activities.ledger import Ledger
from agentledger.app import forks, liveness, operators
from agentledger.app import runs as run_ops
from agentledger.app.answer_stream import AnswerFollower, Said
from agentledger.app.config import Settings
from agentledger.app.edits import batch_of, typed_edits
from agentledger.app.errors import AgentLedgerError, ConfigError, Refused
from agentledger.app.identity import issuer_for
from agentledger.app.registry import UnknownPack, get_pack
from agentledger.app.request_check import request_refusal
from agentledger.app.stack import open_ledger, principal_of, require_ledger, until_recorded
from agentledger.app.temporal import connect
from agentledger.cli._common import open_runtime, say, with_model
from agentledger.domain.conversation import closed, ended
from agentledger.domain.events import RunFailed
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import ModelOverride


async def reply(settings: Settings, args: argparse.Namespace) -> int:
    """The customer's message to a run waiting on them, signed as ``--as`` with this machine's
    issuer key (the run checks the signature and that it is the requester; anyone else is
    refused and recorded)."""
    ledger = open_ledger(settings)
    client = await connect(settings)
    described = await run_ops.described(client, args.run_id)
    if described.status != WorkflowExecutionStatus.RUNNING:
        status = described.status.name.lower() if described.status else "ended"
        raise Refused(ended(ledger.read(args.run_id), args.run_id, status))
    # Only a worker takes a reply: without a live one it is named, not waited out.
    queue = described.task_queue
    sending = run_ops.reply(
        client, args.run_id, args.principal, args.text, issuer=issuer_for(settings)
    )
    result = await liveness.watched(sending, client, queue)
    say(f"{result.reply_id} taken by {args.run_id} (#{result.seq})")
    if not (args.wait or args.follow):
        return 0
    state = await waited(client, ledger, args.run_id, follow=args.follow)
    return await report(client, state, ledger)


async def waited(client: Client, ledger: Ledger, run_id: str, *, follow: bool) -> WorkingState:
    """``wait_for``; with ``follow``, the answer is printed as the model writes it meanwhile
    (a line says when it starts over), ended by a newline before the report."""
    if not follow:
        return await run_ops.wait_for(client, run_id, pending_approval=True)
    follower = AnswerFollower(ledger, run_id)
    printing = asyncio.create_task(follower.follow(_print_said))
    try:
        state = await run_ops.wait_for(client, run_id, pending_approval=True)
    finally:
        printing.cancel()
    for said in await asyncio.to_thread(follower.poll):  # what came after the last poll
        _print_said(said)
    if follower.shown:
        print(flush=True)
    return state


def _print_said(said: Said) -> None:
    if said.kind == "reset":
        print(f"\n[the answer starts over: {said.reason}]", flush=True)
    else:
        print(said.text, end="", flush=True)


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


async def run(settings: Settings, args: argparse.Namespace) -> int:
    if args.base_url or args.api_key_env:
        raise ConfigError(
            "a run names a model provider (--model NAME); its endpoint and key variable are "
            "the worker's: AGENTLEDGER_MODEL_PROVIDERS, or `agentledger dev --base-url URL`"
        )
    require_ledger(settings)  # a run needs the directory its requester is checked against
    runtime = open_runtime(settings)
    try:
        pack = get_pack(args.pack)
    except UnknownPack as exc:
        raise ConfigError(str(exc)) from None
    work_order = with_model(
        pack.make_work_order(args.request, principal_of(runtime.ledger, args.user)), args
    )
    if (problem := request_refusal(work_order)) is not None:  # before any server is reached
        raise Refused(f"work order refused: {problem}")
    client = await connect(settings)
    handle = await run_ops.start_run(
        client, settings.task_queue, work_order, issuer=issuer_for(settings)
    )
    say(handle.id)
    await liveness.until_taken(client, handle.id)  # no live worker: said now, not after 120 s
    if not await until_recorded(runtime, handle.id):
        say(f"note: run {handle.id} has not reached the ledger yet; `agentledger verify` says why")
    if not (args.wait or args.follow):
        return 0
    state = await waited(client, runtime.ledger, handle.id, follow=args.follow)
    return await report(client, state, runtime.ledger)


async def approve(settings: Settings, args: argparse.Namespace) -> int:
    approver = principal_of(open_ledger(settings), args.principal)
    client = await connect(settings)
    if args.more:
        return await _approve_many(settings, args, client, approver.user_id)
    queue = (await run_ops.described(client, args.run_id)).task_queue
    edits = await _edits(client, args) if args.edits else None
    # Signed: the run trusts the key, not the id; only a live worker takes it (else named).
    deciding = run_ops.decide(
        client, args.run_id, args.approval_id, approver.user_id, issuer=issuer_for(settings),
        approve=not args.reject, reason=args.reason, content=args.content, edits=edits,
    )  # fmt: skip
    result = await liveness.watched(deciding, client, queue)
    say(f"{result.approval_id} {result.decision} by {approver.user_id}")
    return 0


async def _approve_many(
    settings: Settings, args: argparse.Namespace, client: Client, approver_id: str
) -> int:
    """Each pair decided on its own, concurrently; one line each (refusals on stderr), and the
    exit code of the first that failed."""
    issuer, pairs = issuer_for(settings), batch_of(args)

    async def one(run_id: str, approval_id: str) -> AgentLedgerError | None:
        try:
            queue = (await run_ops.described(client, run_id)).task_queue
            deciding = run_ops.decide(
                client, run_id, approval_id, approver_id, issuer=issuer,
                approve=not args.reject, reason=args.reason,
            )  # fmt: skip
            result = await liveness.watched(deciding, client, queue)
        except AgentLedgerError as exc:
            print(f"{run_id} {approval_id}: {exc}", file=sys.stderr)
            return exc
        say(f"{run_id} {result.approval_id} {result.decision} by {approver_id}")
        return None

    failed = [f for f in await asyncio.gather(*(one(*p) for p in pairs)) if f is not None]
    return failed[0].exit_code if failed else 0


async def _edits(client: Client, args: argparse.Namespace) -> dict[str, JsonValue]:
    """``--set`` typed after the pending call's arguments, as the run shows them."""
    state = await run_ops.live_state(client, args.run_id)
    pending = state.pending_approvals.get(args.approval_id)
    proposed = pending.proposal.arguments if pending is not None else {}
    return typed_edits(args.edits, proposed)  # not pending: the run says why


async def cancel(settings: Settings, args: argparse.Namespace) -> int:
    """Cancel a live run as ``--as``, signed with the local issuer; waits until it has ended."""
    operator = principal_of(open_ledger(settings), args.principal)
    client = await connect(settings)
    queue = (await run_ops.described(client, args.run_id)).task_queue
    cancelling = operators.cancel(
        client, args.run_id, operator.user_id, args.reason, issuer=issuer_for(settings)
    )
    status = await liveness.watched(cancelling, client, queue)
    if status != "cancelled":  # a call in flight ended the run before it reached a safe point
        say(f"{args.run_id} ended {status} before the cancel took effect")
        return Refused.exit_code
    say(f"{args.run_id} cancelled by {operator.user_id}")
    return 0


async def steer(settings: Settings, args: argparse.Namespace) -> int:
    """Tell a live run ``text`` as ``--as``, signed with the local issuer; returns once the
    instruction is recorded (its later packets carry it)."""
    operator = principal_of(open_ledger(settings), args.principal)
    client = await connect(settings)
    queue = (await run_ops.described(client, args.run_id)).task_queue
    steering = operators.steer(
        client, args.run_id, operator.user_id, args.text, issuer=issuer_for(settings)
    )
    seq = await liveness.watched(steering, client, queue)
    say(f"{args.run_id} instructed by {operator.user_id} (event #{seq})")
    return 0


async def fork(settings: Settings, args: argparse.Namespace) -> int:
    """Start a fork of a run at one of its events as ``--as``, signed with the local issuer;
    returns once the fork has taken up the run's state there (or refused to)."""
    ledger = open_ledger(settings)
    operator = principal_of(ledger, args.principal)
    model = ModelOverride(provider=args.model) if args.model else None
    plan = forks.plan_fork(
        ledger,
        args.run_id,
        args.at,
        operator.user_id,
        dry=args.dry,
        model=model,
        profile=args.profile,
    )
    client = await connect(settings)
    run_id = await forks.start_fork(client, settings.task_queue, plan, issuer=issuer_for(settings))
    say(run_id)
    await liveness.until_taken(client, run_id)
    started = await forks.forked(ledger, run_id)
    mode = "dry" if started.dry else "against the pack's sandbox"
    say(f"· forked from {args.run_id} at #{args.at} ({mode}), state {started.facts_hash[:19]}")
    if not args.wait:
        return 0
    return await report(
        client, await run_ops.wait_for(client, run_id, pending_approval=True), ledger
    )
