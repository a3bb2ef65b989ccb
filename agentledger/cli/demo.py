"""``agentledger demo [--pack NAME]``: a pack's sample request end to end on the embedded
stack."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from temporalio.client import Client

from agentledger.activities.ports import Pack
from agentledger.app import runs as run_ops
from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError
from agentledger.app.identity import issuer_for
from agentledger.app.registry import UnknownPack, get_pack
from agentledger.app.stack import principal_of, until_recorded
from agentledger.app.temporal import connect
from agentledger.cli._common import (
    open_runtime,
    say,
    start_server,
    with_local_provider,
    with_model,
)
from agentledger.cli.show import print_run, where
from agentledger.domain.state import WorkingState

if TYPE_CHECKING:
    from agentledger.app.runtime import Runtime


async def demo(settings: Settings, args: argparse.Namespace) -> int:
    """A pack's sample request end to end: approvals made by its sample approver (or
    ``AGENTLEDGER_DEMO_APPROVER``), then the timeline; a conversation is left waiting for its
    customer, with the command that answers it."""
    settings = with_local_provider(settings, args)
    pack, request, user, approver_id = _demo_of(args, settings)
    settings = start_server(settings)
    runtime = open_runtime(settings, seed=True)
    say(f"· ledger: {where(runtime.ledger)}")
    client = await connect(settings)
    principal = principal_of(runtime.ledger, user)
    async with runtime.worker(client):
        say("· worker running in-process on task queue " + settings.task_queue)
        work_order = with_model(pack.make_work_order(request, principal), args)
        handle = await run_ops.start_run(
            client, settings.task_queue, work_order, issuer=issuer_for(settings)
        )
        say(f'· run {handle.id} started for {principal.user_id}: "{request}"')
        state = await run_ops.wait_for(client, handle.id, pending_approval=True)
        while state.pending_approvals:
            await _demo_approve(client, runtime, handle.id, state, approver_id)
            state = await run_ops.wait_for(client, handle.id, pending_approval=True)
        if state.awaiting is None:
            await handle.result()
        else:
            await until_recorded(runtime, handle.id, seq=state.last_seq)
    code = print_run(runtime.ledger, handle.id)
    if state.awaiting is not None:
        say(
            f"· the run waits for {principal.user_id}: "
            f'agentledger reply {handle.id} "..." --as {principal.user_id} --wait'
        )
    return code


def _demo_of(args: argparse.Namespace, settings: Settings) -> tuple[Pack, str, str, str]:
    """The pack, request, requester and approver a demo runs with."""
    try:
        pack = get_pack(args.pack)
    except UnknownPack as exc:
        raise ConfigError(str(exc)) from None
    sample = pack.sample
    request = args.request or (sample.request if sample else None)
    user = args.user or (sample.user_id if sample else None)
    approver = settings.demo_approver or (sample.approver_id if sample else None)
    if request is None or user is None or approver is None:
        raise ConfigError(
            f"pack {pack.name} has no sample request: give --request, --user and "
            "AGENTLEDGER_DEMO_APPROVER"
        )
    return pack, request, user, approver


async def _demo_approve(
    client: Client, runtime: Runtime, run_id: str, state: WorkingState, approver_id: str
) -> None:
    approver = principal_of(runtime.ledger, approver_id)
    for approval in list(state.pending_approvals.values()):
        say(
            f"· approval {approval.approval_id} requested for {approval.proposal.tool}"
            f"({', '.join(f'{k}={v}' for k, v in approval.proposal.arguments.items())})"
        )
        say(
            f"· approving as {approver.user_id} ({approver.display_name}), the demo approver, "
            "signed by this data directory's issuer key"
        )
        await run_ops.decide(
            client,
            run_id,
            approval.approval_id,
            approver.user_id,
            issuer=issuer_for(runtime.settings),
            approve=True,
        )
