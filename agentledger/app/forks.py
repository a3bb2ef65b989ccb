"""Fork a run from one of its events (``agentledger fork``), signed as the operator.

The fork point is checked against the ledger here, so bad input is refused before any run
starts (a seq the run does not have, one inside an unfinished operation, a run that had ended
there); the fork run checks it all again, since anyone who reaches Temporal can start one.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from temporalio.client import Client

from agentledger.app.errors import NotFound, Refused, StillRunning
from agentledger.app.registry import get_pack
from agentledger.domain.events import RunFailed, RunForked, RunStarted
from agentledger.domain.fold import state_hash
from agentledger.domain.forks import ForkOrigin, ForkRefused, fork_digest, fork_point
from agentledger.domain.workorder import ModelOverride, WorkOrder
from agentledger.workflows import RunInput

if TYPE_CHECKING:
    from agentledger.activities.ledger import Ledger
    from agentledger.app.identity import Issuer, VerifiedCaller


@dataclass(frozen=True)
class ForkPlan:
    """What a fork will start: its id, its origin and its work order, checked."""

    run_id: str
    origin: ForkOrigin
    work_order: WorkOrder


def plan_fork(
    ledger: Ledger,
    run_id: str,
    seq: int,
    operator_id: str,
    *,
    dry: bool,
    model: ModelOverride | None = None,
    profile: str | None = None,
) -> ForkPlan:
    """The fork of ``run_id`` at ``seq`` as ``operator_id`` would start it; ``Refused`` with
    the fork point's reason code when it cannot start there, ``NotFound`` for no such run."""
    events = ledger.read(run_id)
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    if started is None:
        raise NotFound(f"no run {run_id} in the ledger")
    if not dry and get_pack(started.work_order.pack).sandbox is None:
        raise Refused(
            f"pack {started.work_order.pack} has no sandbox for a fork's calls to run against "
            "(never production records): fork it dry",
            "fork_without_sandbox",
        )
    try:
        state = fork_point(events, seq)
    except ForkRefused as exc:
        raise Refused(f"cannot fork {run_id} at #{seq}: {exc}", exc.code) from None
    origin = ForkOrigin(
        run_id=run_id, seq=seq, state_hash=state_hash(state), operator_id=operator_id, dry=dry
    )
    changes: dict[str, object] = {}
    if model is not None:
        changes["model_override"] = model
    if profile is not None:
        changes["agent_profile_id"] = profile
    work_order = started.work_order.model_copy(update=changes)
    return ForkPlan(f"{run_id[:40]}-fork-{uuid.uuid4().hex[:8]}", origin, work_order)


async def start_fork(
    client: Client,
    task_queue: str,
    plan: ForkPlan,
    *,
    issuer: Issuer,
    on_behalf_of: VerifiedCaller | None = None,
) -> str:
    """Start the planned fork, signed by ``issuer`` as its operator; returns its run id."""
    assertion = issuer.fork_assertion(
        plan.origin.operator_id,
        run_id=plan.run_id,
        digest=fork_digest(plan.work_order, plan.origin),
        on_behalf_of=on_behalf_of,
    )
    handle = await client.start_workflow(
        "AgentRun",
        RunInput(
            run_id=plan.run_id,
            work_order=plan.work_order,
            requester_assertion=assertion,
            fork=plan.origin,
        ),
        id=plan.run_id,
        task_queue=task_queue,
    )
    return handle.id


async def forked(ledger: Ledger, run_id: str, timeout: float = 30.0) -> RunForked:
    """The fork's ``run_forked`` once it is in the ledger; ``Refused`` with the run's reason
    when it refused to start (who signed, the fork point, the work order)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while ledger.last_seq(run_id) < 2:
        if loop.time() > deadline:
            raise StillRunning(f"fork {run_id} has not started within {timeout:.0f}s")
        await asyncio.sleep(0.05)
    second = ledger.read(run_id)[1]
    if isinstance(second, RunFailed):
        raise Refused(f"fork refused: {second.reason_code}: {second.message}", second.reason_code)
    assert isinstance(second, RunForked), second.kind
    return second
