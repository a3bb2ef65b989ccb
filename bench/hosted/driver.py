"""Drive many conformance runs through Temporal with a scripted approver.

Runs go concurrently (a bounded number at once, so two cores are not swamped by query polling);
each run is watched through its query until it ends, and every approval it asks for is decided
through the ``decide_approval`` update exactly as a person would decide it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.service import RPCError

from agentledger.app import runs as client_ops
from agentledger.app.errors import Refused, ServerUnavailable
from agentledger.app.identity import Issuer
from agentledger.domain import events as ev
from agentledger.domain.decisions import CallTool, ToolCallProposal
from agentledger.domain.state import ENDED, WorkingState
from agentledger.domain.workorder import WorkOrder

__all__ = ["Approver", "RunSpec", "denied_proposals", "drive"]

_MAX_LOOKS = 2_000

Approver = Callable[[ToolCallProposal], bool]
"""The scripted approver's policy: True approves, False rejects."""


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    work_order: WorkOrder
    approver_id: str
    approve: Approver


async def drive(
    client: Client,
    task_queue: str,
    specs: Sequence[RunSpec],
    *,
    issuer: Issuer,
    concurrency: int = 6,
) -> dict[str, WorkingState]:
    """Run every spec to its end, the approver's decisions signed by ``issuer`` (the one the
    worker's runs trust); returns each run's final state (from the live query)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(spec: RunSpec) -> tuple[str, WorkingState]:
        async with gate:
            return spec.run_id, await _run(client, task_queue, spec, issuer)

    done = await asyncio.gather(*(one(s) for s in specs))
    return dict(done)


async def _run(client: Client, task_queue: str, spec: RunSpec, issuer: Issuer) -> WorkingState:
    handle = await client_ops.start_run(
        client, task_queue, spec.work_order, run_id=spec.run_id, issuer=issuer
    )
    for _ in range(_MAX_LOOKS):
        try:
            state = await _step(client, handle.id, spec, issuer)
        except (RPCError, Refused, ServerUnavailable):
            # No worker answers queries or updates while one is being replaced (crash tests;
            # under load the replacement can take seconds to poll); the run itself is durable,
            # so ask again.
            await asyncio.sleep(0.25)
            continue
        if state is not None:
            await handle.result()
            return state
    raise TimeoutError(f"run {spec.run_id} kept refusing queries or approvals")


async def _step(client: Client, run_id: str, spec: RunSpec, issuer: Issuer) -> WorkingState | None:
    """One look at the run: its final state, or None after deciding what it waits for."""
    state = await client_ops.wait_for(client, run_id, pending_approval=True, timeout=600)
    if state.status in ENDED:
        return state
    for pending in list(state.pending_approvals.values()):
        approve = spec.approve(pending.proposal)
        await client_ops.decide(
            client,
            run_id,
            pending.approval_id,
            spec.approver_id,
            issuer=issuer,
            approve=approve,
            reason="" if approve else "scripted approver: writes are denied in this variant",
        )
    return None


def denied_proposals(events: Sequence[ev.RunEvent]) -> list[ToolCallProposal | None]:
    """The proposal behind each ``ToolCallDenied`` (which names only the tool): the
    ``call_tool`` decision recorded last before it, or None where there is none."""
    last: ToolCallProposal | None = None
    out: list[ToolCallProposal | None] = []
    for event in events:
        if isinstance(event, ev.DecisionRecorded):
            decision = event.decision
            last = decision.proposal if isinstance(decision, CallTool) else None
        elif isinstance(event, ev.ToolCallDenied):
            out.append(last if last is not None and last.tool == event.tool else None)
            last = None
    return out
